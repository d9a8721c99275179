// Loading GPT-2's BPE files: where they are found, and what a missing or
// damaged file does.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "gpt2/error.h"
#include "gpt2/text/detail/bpe_files.h"
#include "test_support.h"

namespace gpt2 {
namespace {

namespace fs = std::filesystem;

// A fresh empty directory under the system temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::random_device seed;
    path_ = fs::temp_directory_path() /
            ("gpt2_text_test_" + std::to_string(seed()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Copies both BPE files into `dir`, writable whatever the source's mode.
void copy_bpe_files(const fs::path& dir) {
  for (const char* name : {"encoder.json", "vocab.bpe"}) {
    fs::copy_file(test::bpe_dir() / name, dir / name);
    fs::permissions(dir / name, fs::perms::owner_write, fs::perm_options::add);
  }
}

// Flips one bit of the byte at `offset` of the file at `path`.
void flip_byte(const fs::path& path, std::streamoff offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(offset);
  const char c = static_cast<char>(file.get());
  file.seekp(offset);
  file.put(static_cast<char>(c ^ 0x01));
}

// The message of the FileError that `load` throws ("" if none).
template <typename Load>
std::string file_error(Load load) {
  try {
    load();
  } catch (const FileError& e) {
    return e.what();
  }
  return "";
}

TEST(BpeFiles, Sha256MatchesFips180Examples) {
  EXPECT_EQ(bpe::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(bpe::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(BpeFiles, NoticeListsTheHashesTheLoaderChecks) {
  const std::string notice = test::read_bytes(test::bpe_dir() / "NOTICE");
  EXPECT_NE(notice.find("encoder.json  sha256 " +
                        std::string(bpe::kEncoderJsonSha256)),
            std::string::npos);
  EXPECT_NE(notice.find("vocab.bpe     sha256 " +
                        std::string(bpe::kVocabBpeSha256)),
            std::string::npos);
}

TEST(BpeFiles, MissingFileErrorNamesThePath) {
  TempDir dir;
  copy_bpe_files(dir.path());
  fs::remove(dir.path() / "vocab.bpe");
  const std::string message =
      file_error([&] { Tokenizer::from_dir(dir.path()); });
  EXPECT_NE(message.find((dir.path() / "vocab.bpe").string()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

TEST(BpeFiles, DirectoryInPlaceOfFileErrorNamesThePath) {
  TempDir dir;
  const std::string message = file_error([&] {
    Tokenizer::from_files(dir.path(), test::bpe_dir() / "vocab.bpe");
  });
  EXPECT_EQ(message, "cannot read GPT-2 BPE file '" + dir.path().string() +
                         "': it is a folder, not a regular file");
}

TEST(BpeFiles, DamagedEncoderJsonErrorNamesFileAndBothHashes) {
  TempDir dir;
  copy_bpe_files(dir.path());
  const fs::path damaged = dir.path() / "encoder.json";
  flip_byte(damaged, 1000);
  const std::string actual = bpe::sha256_hex(test::read_bytes(damaged));
  const std::string message =
      file_error([&] { Tokenizer::from_dir(dir.path()); });
  EXPECT_EQ(message, "GPT-2 BPE file " + damaged.string() + " has sha256 " +
                         actual + " but GPT-2's encoder.json has sha256 " +
                         std::string(bpe::kEncoderJsonSha256) +
                         " (see NOTICE); the file is damaged or not GPT-2's");
}

TEST(BpeFiles, DamagedVocabBpeErrorNamesFileAndBothHashes) {
  TempDir dir;
  copy_bpe_files(dir.path());
  const fs::path damaged = dir.path() / "vocab.bpe";
  flip_byte(damaged, 20);
  const std::string message =
      file_error([&] { Tokenizer::from_dir(dir.path()); });
  EXPECT_NE(message.find(damaged.string()), std::string::npos) << message;
  EXPECT_NE(message.find(bpe::sha256_hex(test::read_bytes(damaged))),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(std::string(bpe::kVocabBpeSha256)),
            std::string::npos)
      << message;
}

TEST(BpeFiles, DefaultDirPrefersEnvironmentVariable) {
  TempDir dir;
  copy_bpe_files(dir.path());
  ::setenv("GPT2_BPE_DIR", dir.path().c_str(), 1);
  const fs::path found = default_bpe_dir();
  ::unsetenv("GPT2_BPE_DIR");
  EXPECT_EQ(found, dir.path());
  EXPECT_EQ(Tokenizer::from_dir(found).encode("hello world"),
            (std::vector<std::int32_t>{31373, 995}));
}

TEST(BpeFiles, DefaultDirSkipsEnvironmentDirWithoutBothFiles) {
  TempDir dir;
  fs::copy_file(test::bpe_dir() / "vocab.bpe", dir.path() / "vocab.bpe");
  ::setenv("GPT2_BPE_DIR", dir.path().c_str(), 1);
  const fs::path found = default_bpe_dir();
  ::unsetenv("GPT2_BPE_DIR");
  EXPECT_NE(found, dir.path());
  EXPECT_TRUE(fs::is_regular_file(found / "encoder.json"));
}

TEST(BpeFiles, NoCompleteDirErrorListsEveryPlaceTried) {
  TempDir a, b;
  const std::string message = file_error([&] {
    bpe::first_bpe_dir({{"$GPT2_BPE_DIR", a.path()}, {"source", b.path()}});
  });
  EXPECT_NE(message.find("$GPT2_BPE_DIR: " + a.path().string()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("source: " + b.path().string()), std::string::npos)
      << message;
}

}  // namespace
}  // namespace gpt2
