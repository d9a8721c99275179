// The output rule for folders (gpt2/file/output_dir.h): what make_output_dir
// makes and refuses, and the run folder's lock.
#include "gpt2/file/output_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpt2/error.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::file_error_of;

TEST(OutputDir, MakesMissingParentsAndKeepsAnExistingFolder) {
  gpt2::testing::TempDir dir;
  EXPECT_TRUE(make_output_dir(dir / "a/b/c"));
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a/b/c"));
  EXPECT_FALSE(make_output_dir(dir / "a/b/c"));
  EXPECT_FALSE(make_output_dir(dir / "a/b/c/"));
}

TEST(OutputDir, AFileInTheWayAnEmptyPathAndALinkLoopAreNamed) {
  gpt2::testing::TempDir dir;
  std::ofstream(dir / "f") << "x";
  EXPECT_EQ(file_error_of([&] { make_output_dir(dir / "f", "run folder (--out)"); }),
            "cannot use '" + (dir / "f") + "' as the run folder (--out): '" + (dir / "f") +
                "' is a regular file, not a folder");
  EXPECT_EQ(file_error_of([&] { make_output_dir(dir / "f/sub"); }),
            "cannot use '" + (dir / "f/sub") + "' as the output folder: '" + (dir / "f") +
                "' is a file, not a folder");
  EXPECT_EQ(file_error_of([&] { make_output_dir(""); }),
            "cannot use '' as the output folder: the path is empty");
  std::filesystem::create_symlink("loop", dir / "loop");
  EXPECT_NE(file_error_of([&] { make_output_dir(dir / "loop"); }).find("its symbolic links loop"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "f"));  // left as it was
}

TEST(OutputDir, AFolderNoFileCanBeMadeInIsRefused) {
  if (::geteuid() == 0) {
    // Root may write anywhere but on a read-only mount; the folder's mode
    // cannot refuse it. The check is access(W_OK), which a read-only
    // mount fails for root too (EROFS).
    EXPECT_NE(file_error_of([] { make_output_dir("/proc/self/new"); }).find("cannot use"),
              std::string::npos);
    return;
  }
  gpt2::testing::TempDir dir;
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read |
                                               std::filesystem::perms::owner_exec);
  EXPECT_NE(file_error_of([&] { make_output_dir(dir / "ro"); }).find("no file can be made in it"),
            std::string::npos);
}

TEST(OutputDir, AnInputInsideTheFolderToWriteIsRefusedByItsResolvedPath) {
  testing::TempDir dir;
  const std::string out = dir / "data";
  std::filesystem::create_directories(out + "/sub");
  std::ofstream(out + "/train.bin") << "x";
  std::ofstream(dir / "text.txt") << "x";
  std::filesystem::create_symlink(out + "/train.bin", dir / "link.bin");
  for (const std::string& in : {out + "/train.bin", out, out + "/sub", dir / "link.bin",
                                dir / "data/../data/train.bin"}) {
    try {
      refuse_input_inside(in, out, "dataset folder");
      ADD_FAILURE() << in << " accepted";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("is inside the dataset folder"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(refuse_input_inside(dir / "text.txt", out, "dataset folder"));
  EXPECT_NO_THROW(refuse_input_inside(dir / "text.txt", dir / "data2", "dataset folder"))
      << "a sibling whose name begins the same is not inside";
  EXPECT_NO_THROW(refuse_input_inside(dir / "text.txt", dir / "new/folder", "dataset folder"));
}

TEST(FolderLock, ASecondHolderIsRefusedAndNoFileIsLeft) {
  gpt2::testing::TempDir dir;
  const std::string run = dir / "run";
  make_output_dir(run);
  {
    const FolderLock first(run);
    const std::string why = file_error_of([&] { FolderLock second(run); });
    EXPECT_NE(why.find("'" + run + "' is in use by another process"), std::string::npos) << why;
  }
  EXPECT_TRUE(std::filesystem::is_empty(run));
  // Released with the first: a new holder takes it.
  EXPECT_NO_THROW(FolderLock again(run));
  EXPECT_NE(file_error_of([&] { FolderLock missing(dir / "none"); }).find("cannot lock"),
            std::string::npos);
}

}  // namespace
}  // namespace gpt2
