// Loading with the weights left in the file's pages (gpt2::Mmap): the same
// model and checks as a copying load, writes that stay in the process, a
// mapping that lives as long as the tensors over it, and kAuto's choice.
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpt2/file/mapped_file.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "gpt2/io/model_source.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// The file (or "[heap]", "" for an anonymous mapping) whose mapping holds `p`
// in this process, from /proc/self/maps: "start-end perms offset dev inode path".
std::string mapped_file_at(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode >> path;
    const size_t dash = range.find('-');
    const uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (at >= begin && at < end) return path;
  }
  return "";
}

bool maps_file(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const std::string canonical = std::filesystem::canonical(path).string();
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= canonical.size() &&
        line.compare(line.size() - canonical.size(), std::string::npos, canonical) == 0) {
      return true;
    }
  }
  return false;
}

const torch::Tensor& wte_of(const GPT& m) { return m->transformer->wte->weight; }

TEST(Mmap, OnLoadsTheSameModelOverTheFilesPagesInEveryFormat) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  const auto want = testing::snapshot(*model);
  for (const char* name : {"m.pt", "m.bin", "m.safetensors"}) {
    const std::string path = dir / name;
    save_model(path, *model);
    const GPT mapped = load_model(path, ModelSourceOptions().mmap(Mmap::kOn));
    EXPECT_TRUE(testing::same_tensors(*mapped, want)) << name;
    EXPECT_EQ(mapped_file_at(wte_of(mapped).data_ptr()), std::filesystem::canonical(path)) << name;
    EXPECT_EQ(mapped->lm_head->weight.data_ptr(), wte_of(mapped).data_ptr()) << name << ": the tie";
    // Hugging Face's Conv1D weights are transposed: copies, not views.
    const auto c_attn = mapped->named_parameters()["transformer.h.0.attn.c_attn.weight"];
    EXPECT_EQ(mapped_file_at(c_attn.data_ptr()) == std::filesystem::canonical(path),
              std::string(name) != "m.safetensors") << name;
    const GPT copied = load_model(path);
    EXPECT_NE(mapped_file_at(wte_of(copied).data_ptr()), std::filesystem::canonical(path))
        << name << ": Mmap::kOff copies";
  }
}

// kOff reads the tensors from the file into memory of the model's own: those
// of 2 MiB or more into one block, at their offsets in the file, and none
// maps the file once the model is loaded, so a file rewritten in place
// leaves the model whole.
TEST(Mmap, OffReadsTheWeightsIntoMemoryOfTheirOwn) {
  testing::TempDir dir;
  // wte (12 MiB) and mlp.c_fc.weight (2.25 MiB) are read into the block.
  const GPTConfig config =
      GPTConfig().block_size(64).vocab_size(8192).n_layer(1).n_head(4).n_embd(384);
  GPT model(GPTConfig(config).init(InitOptions().seed(9)));
  GPT other(GPTConfig(config).init(InitOptions().seed(10)));
  const auto want = testing::snapshot(*model);
  for (const char* name : {"m.pt", "m.bin", "m.safetensors"}) {
    const std::string path = dir / name;
    save_model(path, *model);
    const std::string bytes = testing::read_file(path);
    const GPT read = load_model(path, ModelSourceOptions().mmap(Mmap::kOff));
    EXPECT_FALSE(maps_file(path)) << name;
    EXPECT_EQ(read->lm_head->weight.data_ptr(), wte_of(read).data_ptr()) << name << ": the tie";
    if (std::string(name) != "m.safetensors") {  // its c_fc weight is a transposed copy
      const auto at = [&](const torch::Tensor& t) {
        const auto* p = static_cast<const char*>(t.data_ptr());
        return std::make_pair(p, static_cast<std::ptrdiff_t>(
                                     bytes.find(std::string(p, t.nbytes()))));
      };
      const auto [wte, wte_in_file] = at(wte_of(read));
      const auto [c_fc, c_fc_in_file] =
          at(read->named_parameters()["transformer.h.0.mlp.c_fc.weight"]);
      EXPECT_EQ(c_fc - wte, c_fc_in_file - wte_in_file) << name << ": one block, at file offsets";
    }
    const std::string other_path = dir / (std::string("other-") + name);
    save_model(other_path, *other);
    testing::write_file(path, testing::read_file(other_path));  // in place, not renamed over
    EXPECT_TRUE(testing::same_tensors(*read, want)) << name;
  }
}

// A file cut short after it was parsed: the read says so, naming it, and
// nothing touches the mapping past the file's new end (SIGBUS).
TEST(Mmap, AFileThatShrinksWhileReadIsRefusedNamingIt) {
  testing::TempDir dir;
  const std::string path = dir / "f.bin";
  testing::write_file(path, std::string(size_t{3} << 20, 'x'));
  const detail::ModelFileBytes file = detail::model_file_bytes(path, Mmap::kOff);
  ASSERT_GE(file.fd, 0);
  std::filesystem::resize_file(path, size_t{1} << 20);
  std::string to(size_t{1} << 20, '\0');
  const char* past_the_end = file.bytes.data() + (size_t{2} << 20);
  const std::string what = testing::error_of<FileError>(
      [&] { detail::read_bytes(file, past_the_end, to.data(), to.size(), path); });
  EXPECT_NE(what.find("cannot read '" + path + "': it ended before"), std::string::npos) << what;
}

TEST(Mmap, WritesToMappedWeightsStayInTheProcessAndTrainingWorks) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(5)));
  save_checkpoint(dir / "m.pt", *model);
  const std::string bytes = testing::read_file(dir / "m.pt");
  Checkpoint c = load_checkpoint(dir / "m.pt", LoadOptions().mmap(Mmap::kOn));
  ASSERT_EQ(mapped_file_at(wte_of(c.model).data_ptr()), std::filesystem::canonical(dir / "m.pt"));
  // One AdamW step writes every weight, the tied one through both names.
  torch::optim::AdamW opt(c.model->parameters(), torch::optim::AdamWOptions(1e-2));
  const auto x = torch::randint(0, 96, {2, 8});
  const auto out = c.model->forward(x, x);
  out.loss.backward();
  opt.step();
  EXPECT_FALSE(torch::equal(wte_of(c.model), model->transformer->wte->weight));
  EXPECT_EQ(c.model->lm_head->weight.data_ptr(), wte_of(c.model).data_ptr());
  EXPECT_EQ(testing::read_file(dir / "m.pt"), bytes) << "the file never changes";
  EXPECT_TRUE(
      testing::same_tensors(*load_checkpoint(dir / "m.pt").model, testing::snapshot(*model)));
}

TEST(Mmap, TheMappingLivesWithItsTensorsAndARenamedOverFileLeavesThemWhole) {
  testing::TempDir dir;
  GPT first(testing::tiny_config().init(InitOptions().seed(6)));
  GPT second(testing::tiny_config().init(InitOptions().seed(7)));
  save_checkpoint(dir / "m.pt", *first);
  {
    GPT mapped = load_model(dir / "m.pt", ModelSourceOptions().mmap(Mmap::kOn));
    EXPECT_TRUE(maps_file(dir / "m.pt"));
    // This library's writers replace a file by rename: the mapped one stays whole.
    save_checkpoint(dir / "m.pt", *second);
    EXPECT_TRUE(testing::same_tensors(*mapped, testing::snapshot(*first)));
    EXPECT_TRUE(testing::same_tensors(*load_model(dir / "m.pt"), testing::snapshot(*second)));
  }
  EXPECT_FALSE(maps_file(dir / "m.pt")) << "unmapped with the last tensor over it";
}

TEST(Mmap, DamagedBytesAreRefusedAsInACopyingLoad) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(8)));
  save_checkpoint(dir / "m.pt", *model);
  std::string bytes = testing::read_file(dir / "m.pt");
  const auto& wpe = model->transformer->wpe->weight;
  const size_t at = bytes.find(std::string(static_cast<const char*>(wpe.data_ptr()), wpe.nbytes()));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 9] ^= 0x10;
  testing::write_file(dir / "flipped.pt", bytes);
  for (const Mmap mmap : {Mmap::kOff, Mmap::kOn, Mmap::kAuto}) {
    const std::string what = testing::error_of<CheckpointError>(
        [&] { load_checkpoint(dir / "flipped.pt", LoadOptions().mmap(mmap)); });
    EXPECT_NE(what.find("checksum mismatch for transformer.wpe.weight"), std::string::npos)
        << to_string(mmap) << ": " << what;
  }
}

// kAuto views the file exactly where its sample lies in 2 MiB pages:
// measured again here on a second mapping of the file, since what the
// kernel does depends on its filesystem and version. A file written in
// 4 KiB pieces is held in 4 KiB folios, which no kernel maps in 2 MiB
// pages: that one is read into memory everywhere.
TEST(Mmap, AutoViewsTheFileWhereTheKernelMapsItInHugePages) {
  testing::TempDir dir;
  // wte alone is 12 MiB: several 2 MiB pages.
  GPT model(GPTConfig().block_size(64).vocab_size(8192).n_layer(1).n_head(4).n_embd(384));
  save_checkpoint(dir / "ours.pt", *model);
  const std::string bytes = testing::read_file(dir / "ours.pt");
  {
    std::ofstream small(dir / "small.pt", std::ios::binary);
    for (size_t i = 0; i < bytes.size(); i += 4096) {
      const size_t n = std::min<size_t>(4096, bytes.size() - i);
      small.write(bytes.data() + i, static_cast<std::streamsize>(n));
      small.flush();
    }
  }
  for (const char* name : {"ours.pt", "small.pt"}) {
    const Checkpoint c = load_checkpoint(dir / name, LoadOptions().mmap(Mmap::kAuto));
    const detail::MappedFile again(dir / name, "", detail::MapAccess::kCopyOnWrite);
    const bool huge = detail::huge_pages_sampled(again);
    const bool viewed =
        mapped_file_at(wte_of(c.model).data_ptr()) == std::filesystem::canonical(dir / name);
    EXPECT_EQ(viewed, huge) << name << ": " << again.huge_page_bytes() << " of " << bytes.size()
                            << " bytes in 2 MiB pages";
    if (std::string(name) == "small.pt") {
      EXPECT_FALSE(viewed);
    }
    EXPECT_TRUE(testing::same_tensors(*c.model, testing::snapshot(*model))) << name;
  }
}

TEST(Mmap, ModesAreSpelledOffOnAuto) {
  for (const Mmap m : {Mmap::kOff, Mmap::kOn, Mmap::kAuto}) {
    EXPECT_EQ(mmap_from_string(to_string(m)), m);
  }
  EXPECT_EQ(to_string(Mmap::kAuto), "auto");
  const std::string what = testing::error_of<ConfigError>([] { mmap_from_string("yes"); });
  EXPECT_NE(what.find("mmap mode must be one of off, on, auto, got 'yes'"), std::string::npos)
      << what;
}

}  // namespace
}  // namespace gpt2
