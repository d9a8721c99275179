// Large tensors in mappings of their own, on huge pages per the measured
// choice (HugePages in gpt2/ops/settings.h), and the loaders and the model
// allocating through it.
#include "gpt2/ops/ops.h"
#include "gpt2/ops/memory.h"

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/model/gpt.h"
#include "gpt2/model/modules.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/optim.h"
#include "test_util.h"

namespace gpt2 {
namespace {

constexpr int64_t kHugeMiB = int64_t{1} << 20;

// The VmFlags of the mapping that holds `p` ("" when none does): "hg" marks
// MADV_HUGEPAGE, "nh" MADV_NOHUGEPAGE.
std::string vm_flags_at(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool is_mapped(const void* p) { return !vm_flags_at(p).empty(); }

bool asks_for_huge_pages(const void* p) {
  return vm_flags_at(p).find(" hg") != std::string::npos;
}

// Whether the kernel has transparent huge pages at all: without them
// MADV_HUGEPAGE fails and a mapping cannot ask.
bool kernel_has_thp() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
}

// A tensor of the mechanism while huge pages are on: a mapping of its own
// (not torch's allocator) that asks for them where the kernel can.
bool on_huge_pages(const at::Tensor& t) {
  return t.storage().allocator() != c10::GetCPUAllocator() &&
         asks_for_huge_pages(t.data_ptr()) == kernel_has_thp();
}

// Forces a choice for one test and goes back to the measurement after.
struct Forced {
  explicit Forced(HugePages mode) { set_huge_pages(mode); }
  ~Forced() { set_huge_pages(HugePages::kAuto); }
};

TEST(HugePages, OnLargeTensorsGetAnAlignedMappingOfTheirOwnThatAsksForThem) {
  Forced forced(HugePages::kOn);
  EXPECT_TRUE(huge_pages_choice().on);
  auto t = empty_large({5 * kHugeMiB / 4 + 3});  // 5 MiB and 12 bytes: not whole pages
  EXPECT_NE(t.storage().allocator(), c10::GetCPUAllocator());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % (2 * kHugeMiB), 0u);
  EXPECT_EQ(asks_for_huge_pages(t.data_ptr()), kernel_has_thp()) << vm_flags_at(t.data_ptr());
  t.fill_(1.5f);  // every byte is writable, the last one included
  EXPECT_EQ(t[-1].item<float>(), 1.5f);
  const void* data = t.data_ptr();
  t = at::Tensor();
  EXPECT_FALSE(is_mapped(data)) << "the mapping goes with the tensor";
}

// Off, a large tensor is torch's (glibc's heap, reused after a free), and a
// pooled-size block is glibc's too, 2 MiB-aligned, on no mapping that asks.
TEST(HugePages, OffLargeTensorsAndBlocksAreGlibcs) {
  Forced forced(HugePages::kOff);
  EXPECT_FALSE(huge_pages_choice().on);
  const auto t = empty_large({5 * kHugeMiB});
  EXPECT_EQ(t.storage().allocator(), c10::GetCPUAllocator());
  const LargeBlock block = take_large(3 * kHugeMiB);
  EXPECT_FALSE(block.mapped);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data) % (2 * kHugeMiB), 0u);
  EXPECT_FALSE(asks_for_huge_pages(block.data));
  give_large(block);
  set_huge_pages(HugePages::kOn);
  const LargeBlock mapped = take_large(3 * kHugeMiB);
  EXPECT_TRUE(mapped.mapped);
  EXPECT_EQ(asks_for_huge_pages(mapped.data), kernel_has_thp());
  give_large(mapped);
  EXPECT_FALSE(is_mapped(mapped.data));
}

// With no dtype, torch's default, as torch::empty: a model built after
// torch::set_default_dtype(double) is double, large weights and small.
TEST(HugePages, NoDtypeMeansTorchsDefaultDtype) {
  const caffe2::TypeMeta saved = torch::get_default_dtype();
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  Forced forced(HugePages::kOn);
  const auto large = empty_large({kHugeMiB});
  const auto small = empty_large({10});
  Linear linear(LinearOptions(512, 1024));
  torch::set_default_dtype(saved);
  EXPECT_EQ(large.scalar_type(), torch::kDouble);
  EXPECT_EQ(small.scalar_type(), torch::kDouble);
  EXPECT_EQ(linear->weight.scalar_type(), torch::kDouble);
  EXPECT_EQ(linear->bias.scalar_type(), torch::kDouble) << "as the small tensors torch::empty makes";
  EXPECT_EQ(empty_large({kHugeMiB}).scalar_type(), torch::kFloat);
}

TEST(HugePages, SmallTensorsAreTorchsOwn) {
  const auto t = empty_large({1000}, at::kBFloat16);
  EXPECT_EQ(t.storage().allocator(), c10::GetCPUAllocator());
  EXPECT_EQ(t.scalar_type(), at::kBFloat16);
  EXPECT_EQ(t.numel(), 1000);
}

// The choice names where it came from: GPT2_HUGE_PAGES (the entries
// HugePages.env_on and HugePages.env_bad run this case under it), else the
// measurement or the kernel's setting.
TEST(HugePages, TheChoiceSaysWhy) {
  const char* env = std::getenv("GPT2_HUGE_PAGES");
  const std::string value = env ? env : "";
  if (value == "on" || value == "off") {
    EXPECT_EQ(huge_pages_choice().on, value == "on");
    EXPECT_EQ(huge_pages_choice().reason, "GPT2_HUGE_PAGES=" + value);
    return;
  }
  if (!value.empty() && value != "auto") {
    const std::string what = testing::error_of<Error>([] { huge_pages_choice(); });
    EXPECT_NE(what.find("GPT2_HUGE_PAGES must be on, off or auto"), std::string::npos) << what;
    EXPECT_NE(what.find("'" + value + "'"), std::string::npos) << what;
    EXPECT_THROW(empty_large({kHugeMiB}), Error) << "a large tensor meets the same error";
    return;
  }
  const HugePagesChoice choice = huge_pages_choice();
  const bool measured = choice.reason.find("faulted in") != std::string::npos;
  if (kernel_has_thp()) {
    EXPECT_TRUE(measured || choice.reason == "transparent huge pages are off in this kernel")
        << choice.reason;
  } else {
    EXPECT_EQ(choice.reason, "this kernel has no transparent huge pages");
  }
  EXPECT_TRUE(measured || !choice.on) << "huge pages only where they were measured faster";
  EXPECT_EQ(to_string(choice).rfind(choice.on ? "on (" : "off (", 0), 0u) << to_string(choice);
  set_huge_pages(HugePages::kOn);
  EXPECT_EQ(huge_pages_choice().reason, "set by set_huge_pages");
  set_huge_pages(HugePages::kAuto);
  EXPECT_EQ(huge_pages_choice().reason, choice.reason) << "measured once per process";
}

// The weights a model builds, the ones each loader reads, and FusedAdamW's
// moments all come from the mechanism: with huge pages forced on, each
// large one sits in a mapping that asks for them.
TEST(HugePages, ModelsLoadersAndTheOptimizerAllocateThroughIt) {
  Forced forced(HugePages::kOn);
  testing::TempDir dir;
  // wte: 1,024 x 512 float32 = 2 MiB, the smallest large tensor.
  GPT model(GPTConfig().n_layer(1).n_head(4).n_embd(512).vocab_size(1024).block_size(64));
  EXPECT_TRUE(on_huge_pages(model->lm_head->weight));
  EXPECT_TRUE(on_huge_pages(model->block(0)->mlp->c_fc->weight));
  for (const std::string file : {"m.pt", "m.safetensors", "m.bin"}) {
    save_model(dir / file, *model);
    GPT loaded = load_model(dir / file);
    EXPECT_TRUE(on_huge_pages(loaded->lm_head->weight)) << file;
    EXPECT_EQ(loaded->lm_head->weight.data_ptr(), loaded->transformer->wte->weight.data_ptr())
        << file;
    EXPECT_TRUE(torch::equal(loaded->lm_head->weight, model->lm_head->weight)) << file;
  }
  FusedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  for (auto& p : model->parameters()) p.mutable_grad() = torch::ones_like(p);
  opt.step();
  const auto& state = static_cast<torch::optim::AdamWParamState&>(
      *opt.state().at(compat::optimizer_state_key(model->lm_head->weight)));
  EXPECT_TRUE(on_huge_pages(state.exp_avg()));
  EXPECT_TRUE(on_huge_pages(state.exp_avg_sq()));
}

}  // namespace
}  // namespace gpt2
