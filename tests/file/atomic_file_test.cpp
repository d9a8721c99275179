#include "gpt2/file/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/file/fd_streambuf.h"
#include "test_util.h"

namespace gpt2 {
namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  write_atomically(path, [&text](std::ostream& out) { out << text; });
}

using testing::file_error_of;

// A full disk, as the stream sees it: writes past a byte count fail with
// ENOSPC. LibTorch's zip writer used to throw from its destructor here and
// end the process.
class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override { detail::fd_write_limit = 64 * 1024; }
  void TearDown() override { detail::fd_write_limit = 0; }
};

TEST_F(FullDisk, CheckpointAndExportFailWithEnospcKeepTheOldFileAndLeaveNoTemporary) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().n_embd(64));  // ~ 200 kB: over the limit
  detail::fd_write_limit = 0;
  save_checkpoint(dir / "ckpt.pt", *model);
  const std::string old = bytes_of(dir / "ckpt.pt");
  detail::fd_write_limit = 64 * 1024;
  GPT other(testing::tiny_config().n_embd(64).init(InitOptions().seed(9)));
  const std::string ckpt_error = file_error_of([&] { save_checkpoint(dir / "ckpt.pt", *other); });
  EXPECT_NE(ckpt_error.find("No space left on device (ENOSPC)"), std::string::npos) << ckpt_error;
  EXPECT_NE(ckpt_error.find("ckpt.pt"), std::string::npos) << ckpt_error;
  const std::string export_error =
      file_error_of([&] { export_torchscript(*other, dir / "program.ts"); });
  EXPECT_NE(export_error.find("ENOSPC"), std::string::npos) << export_error;
  EXPECT_EQ(bytes_of(dir / "ckpt.pt"), old);
  EXPECT_EQ(dir.entries(), 1);  // the old checkpoint only
}

TEST(AtomicFile, AUnitOfFilesIsReplacedWholeOrNotAtAll) {
  testing::TempDir dir;
  write_files_atomically({{dir / "w", "old weights"}, {dir / "config", "old config"}});
  write_files_atomically({{dir / "w", "new weights"}, {dir / "config", "new config"}});
  EXPECT_EQ(bytes_of(dir / "w"), "new weights");
  EXPECT_EQ(bytes_of(dir / "config"), "new config");
  // A file that cannot be staged (its place is a folder): nothing of the
  // unit changes, its marker included, and no temporary is left.
  std::filesystem::create_directory(dir / "folder");
  EXPECT_THROW(write_files_atomically({{dir / "w", "x"}, {dir / "folder", "y"}}), FileError);
  EXPECT_THROW(write_files_atomically({{dir / "folder", "x"}, {dir / "config", "y"}}), FileError);
  EXPECT_EQ(bytes_of(dir / "w"), "new weights");
  EXPECT_EQ(bytes_of(dir / "config"), "new config");
  EXPECT_EQ(dir.entries(), 3);
  // remove_marker of a missing file is nothing; of a present one, its removal.
  EXPECT_NO_THROW(remove_marker(dir / "none"));
  remove_marker(dir / "config");
  EXPECT_FALSE(std::filesystem::exists(dir / "config"));
}

TEST(AtomicFile, RefusesToReplaceDevicesFifosAndFolders) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::filesystem::create_directory(dir / "folder");
  EXPECT_NE(file_error_of([] { write_text("/dev/null", "x"); })
                .find("it is a character device; refusing to replace it"),
            std::string::npos);
  EXPECT_NE(file_error_of([&] { write_text(dir / "fifo", "x"); }).find("it is a FIFO"),
            std::string::npos);
  EXPECT_NE(file_error_of([&] { write_text(dir / "folder", "x"); }).find("it is a folder"),
            std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(dir.entries(), 2);  // no temporary left
}

TEST(AtomicFile, SymbolicLinkIsFollowedAndKept) {
  testing::TempDir dir;
  write_text(dir / "real", "old");
  std::filesystem::create_symlink(dir / "real", dir / "link");
  write_text(dir / "link", "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link"));
  EXPECT_EQ(bytes_of(dir / "real"), "new");
  std::filesystem::create_symlink(dir / "loop", dir / "loop");
  EXPECT_NE(file_error_of([&] { write_text(dir / "loop", "x"); }).find("symbolic link"),
            std::string::npos);
}

TEST(AtomicFile, TemporariesOfDeadProcessesAreRemovedLiveOnesKept) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // now a pid that no process has
  const std::string dead = dir / fmt::format(".t.pt.tmp-{}-0", child);
  const std::string live = dir / fmt::format(".t.pt.tmp-{}-999", ::getpid());
  std::ofstream(dead) << "left by a killed save";
  std::ofstream(live) << "a save in progress";
  write_text(dir / "t.pt", "x");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
}

// A folder's sweep (a writer filling a folder, before it starts) removes
// the dead temporaries of every target, also those it will not write again
// (a re-run that writes fewer shards), and keeps live ones and other files.
TEST(AtomicFile, AFolderSweepRemovesEveryDeadTemporary) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  const std::string dead1 = dir / fmt::format(".d_train_000009.bin.tmp-{}-3", child);
  const std::string dead2 = dir / fmt::format(".a.tmp-b.tmp-{}-0", child);
  const std::string live = dir / fmt::format(".d_train_000001.bin.tmp-{}-0", ::getpid());
  const std::string others[] = {dir / "d_train_000001.bin", dir / ".hidden", dir / ".x.tmp-abc-1",
                                dir / fmt::format("y.tmp-{}-0", child)};
  for (const auto& f : {dead1, dead2, live}) std::ofstream(f) << "x";
  for (const auto& f : others) std::ofstream(f) << "x";
  remove_stale_temporaries(std::filesystem::path(dead1).parent_path().string());
  EXPECT_FALSE(std::filesystem::exists(dead1));
  EXPECT_FALSE(std::filesystem::exists(dead2));
  EXPECT_TRUE(std::filesystem::exists(live));
  for (const auto& f : others) EXPECT_TRUE(std::filesystem::exists(f)) << f;
}

// An application's handler that lets the first signal finish the save and
// ends the process on the second (as `gpt2 train` does) leaves no temporary.
TEST(AtomicFile, ASecondSignalThatEndsTheProcessMidSaveLeavesNoTemporary) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) {
    static volatile sig_atomic_t seen = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int sig) {
      if (seen++ > 0) {
        ::signal(sig, SIG_DFL);
        ::raise(sig);
      }
    };
    ::sigaction(SIGTERM, &sa, nullptr);
    StagedFile staged(dir / "ckpt.pt");
    staged.append("half", 4);
    ::raise(SIGTERM);  // asked to stop: the save goes on
    ::raise(SIGTERM);  // asked again: the process ends here
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(dir.entries(), 0) << "a temporary was left behind";
}

TEST(AtomicFile, SameFileSeesLinksAndOtherSpellings) {
  testing::TempDir dir;
  write_text(dir / "a", "1");
  write_text(dir / "b", "1");
  std::filesystem::create_symlink(dir / "a", dir / "to-a");
  EXPECT_TRUE(same_file(dir / "a", dir / "to-a"));
  EXPECT_TRUE(same_file(dir / "a", dir / "../" + std::filesystem::path(dir / "a").parent_path().filename().string() + "/a"));
  EXPECT_FALSE(same_file(dir / "a", dir / "b"));
  EXPECT_FALSE(same_file(dir / "a", dir / "missing"));
}

// A child process saving a checkpoint is sent SIGTERM at a random moment,
// 100 times: the target is always the old file or the new one, and no
// temporary file is left.
TEST(AtomicFile, SignalDuringSaveLeavesOldOrNewFileAndNoTemporary) {
  testing::TempDir dir;
  GPT old_model(testing::tiny_config().n_embd(128).init(InitOptions().seed(1)));
  GPT new_model(testing::tiny_config().n_embd(128).init(InitOptions().seed(2)));
  save_checkpoint(dir / "new.pt", *new_model);
  const std::string new_bytes = bytes_of(dir / "new.pt");
  std::filesystem::remove(dir / "new.pt");
  save_checkpoint(dir / "t.pt", *old_model);
  const std::string old_bytes = bytes_of(dir / "t.pt");
  ASSERT_NE(old_bytes, new_bytes);

  const auto start = std::chrono::steady_clock::now();
  save_checkpoint(dir / "t.pt", *old_model);  // how long one save takes here
  const auto save_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - start).count();
  std::mt19937 rng(42);
  std::uniform_int_distribution<long> delay_us(0, 2 * save_us + 1000);
  int killed = 0, finished = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const pid_t child = ::fork();
    if (child == 0) {
      try {
        save_checkpoint(dir / "t.pt", *new_model);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ::kill(child, SIGTERM);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
      ++killed;
      EXPECT_EQ(WTERMSIG(status), SIGTERM);
    } else {
      ++finished;
      EXPECT_EQ(WEXITSTATUS(status), 0);
    }
    const std::string now = bytes_of(dir / "t.pt");
    ASSERT_TRUE(now == old_bytes || now == new_bytes) << "trial " << trial;
    ASSERT_EQ(dir.entries(), 1) << "a temporary file was left in trial " << trial;
    if (now == new_bytes) save_checkpoint(dir / "t.pt", *old_model);
  }
  RecordProperty("killed", killed);
  RecordProperty("finished", finished);
  EXPECT_GT(killed, 10);  // the signal did land mid-save in many trials
}

// A writer that stages many files at once (a dataset's shards, each closed
// and waiting for the rename at the end) has every temporary removed by a
// SIGTERM, not only the first 16 (the signal handler's first block of slots).
TEST(AtomicFile, SignalRemovesEveryStagedTemporaryHoweverMany) {
  testing::TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    std::vector<std::unique_ptr<StagedFile>> staged;
    for (int i = 0; i < 40; ++i) {
      staged.push_back(std::make_unique<StagedFile>(dir / ("shard_" + std::to_string(i) + ".bin")));
      staged.back()->append("x", 1);
      staged.back()->close();
    }
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    ::pause();  // until the signal
    ::_exit(4);
  }
  ASSERT_GT(child, 0);
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(dir.entries(), 40);  // all 40 staged
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(dir.entries(), 0) << "temporaries were left";
}

}  // namespace
}  // namespace gpt2
