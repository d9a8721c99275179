#pragma once
/// The common case in one include: the model and its config, checkpoints,
/// TorchScript export, the GPT-2 tokenizer and nanoGPT's optimizer groups. Finer-grained headers
/// live in gpt2/model/, gpt2/runtime/, gpt2/io/, gpt2/text/ and gpt2/train/.

#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/model_source.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"
#include "gpt2/audit/init_audit.h"
#include "gpt2/runtime/device_line.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/optim.h"
