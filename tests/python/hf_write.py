"""Python writes a Hugging Face GPT-2 folder that the C++ library must load.

An independent implementation on both sides of the file: the model is a
GPT-2 written here in plain torch ops in Hugging Face's layout (Conv1D
weights (in, out), attention-mask buffers, no lm_head.weight), and the
safetensors file is written with json and struct, not by any safetensors
library (Debian has none). check_hf (C++) then loads the folder with
gpt2::load_model and compares its logits with the ones computed here.

Usage: /usr/bin/python3 hf_write.py FOLDER
  writes FOLDER/model.safetensors, FOLDER/config.json and
  FOLDER/expected.safetensors {tokens (2, 12) as F32, logits (2, 12, vocab)}.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

N_LAYER, N_HEAD, N_EMBD, VOCAB, N_POSITIONS = 2, 4, 32, 100, 16


def write_safetensors(path, tensors, metadata):
    """The format's rules: u64 LE header length, JSON header padded with
    spaces to 8 bytes, tensors back to back in header order."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_model(seed):
    """A GPT-2 state dict in Hugging Face's names and orientation. Biases and
    LayerNorm parameters are random too, so a tensor put in the wrong place
    or orientation changes the logits."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, std=0.02: torch.randn(*shape, generator=g) * std
    C, T = N_EMBD, N_POSITIONS
    sd = {"wte.weight": r(VOCAB, C), "wpe.weight": r(T, C, std=0.01)}
    for i in range(N_LAYER):
        h = f"h.{i}."
        sd.update({
            h + "ln_1.weight": 1 + r(C, std=0.1), h + "ln_1.bias": r(C, std=0.1),
            h + "attn.bias": torch.tril(torch.ones(T, T)).view(1, 1, T, T),
            h + "attn.masked_bias": torch.tensor(-1e4),
            h + "attn.c_attn.weight": r(C, 3 * C), h + "attn.c_attn.bias": r(3 * C),
            h + "attn.c_proj.weight": r(C, C), h + "attn.c_proj.bias": r(C),
            h + "ln_2.weight": 1 + r(C, std=0.1), h + "ln_2.bias": r(C, std=0.1),
            h + "mlp.c_fc.weight": r(C, 4 * C), h + "mlp.c_fc.bias": r(4 * C),
            h + "mlp.c_proj.weight": r(4 * C, C), h + "mlp.c_proj.bias": r(C),
        })
    sd["ln_f.weight"], sd["ln_f.bias"] = 1 + r(C, std=0.1), r(C, std=0.1)
    return sd


def forward(sd, idx):
    """Hugging Face's GPT2LMHeadModel forward: Conv1D is x @ W + b,
    gelu_new is the tanh GELU, the head is the tied wte."""
    B, T = idx.shape
    C, hs = N_EMBD, N_EMBD // N_HEAD
    x = sd["wte.weight"][idx] + sd["wpe.weight"][:T]
    for i in range(N_LAYER):
        p = lambda name: sd[f"h.{i}.{name}"]
        h = F.layer_norm(x, (C,), p("ln_1.weight"), p("ln_1.bias"), 1e-5)
        q, k, v = (h @ p("attn.c_attn.weight") + p("attn.c_attn.bias")).split(C, dim=2)
        q, k, v = (t.view(B, T, N_HEAD, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = torch.where(p("attn.bias")[:, :, :T, :T].bool(), att, p("attn.masked_bias"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        h = F.layer_norm(x, (C,), p("ln_2.weight"), p("ln_2.bias"), 1e-5)
        h = F.gelu(h @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias"), approximate="tanh")
        x = x + h @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    x = F.layer_norm(x, (C,), sd["ln_f.weight"], sd["ln_f.bias"], 1e-5)
    return x @ sd["wte.weight"].T


def main(folder):
    os.makedirs(folder, exist_ok=True)
    sd = make_model(seed=2024)
    write_safetensors(os.path.join(folder, "model.safetensors"), sd, {"format": "pt"})
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD, "vocab_size": VOCAB,
              "n_positions": N_POSITIONS, "n_ctx": N_POSITIONS,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tokens = torch.randint(VOCAB, (2, 12), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        logits = forward(sd, tokens)
    write_safetensors(os.path.join(folder, "expected.safetensors"),
                      {"tokens": tokens.float(), "logits": logits}, {})
    print(f"wrote {folder}: logits {tuple(logits.shape)}, std {logits.std().item():.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
