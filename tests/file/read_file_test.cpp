// The one input policy (gpt2/file/read_file.h, json.h): what every reader of
// the library refuses, and how the refusal is worded.
#include "gpt2/file/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gpt2/error.h"
#include "gpt2/file/json.h"
#include "gpt2/file/mapped_file.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::file_error_of;

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ReadFile, ReadsARegularFileWhole) {
  gpt2::testing::TempDir dir;
  const std::string bytes("a\0b\nc", 5);
  write(dir / "f", bytes);
  EXPECT_EQ(read_file(dir / "f"), bytes);
  write(dir / "empty", "");
  EXPECT_EQ(read_file(dir / "empty"), "");
}

// A FIFO with no writer would block an ordinary open forever; the test
// returning at all shows that it does not.
TEST(ReadFile, FifoIsRefusedWithoutBlockingAndNamed) {
  gpt2::testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(file_error_of([&] { read_file(dir / "fifo", "config"); }),
            "cannot read config '" + (dir / "fifo") + "': it is a FIFO, not a regular file");
  EXPECT_NE(file_error_of([&] { detail::MappedFile m(dir / "fifo"); }).find("it is a FIFO"),
            std::string::npos);
  EXPECT_NE(file_error_of([&] { require_regular_file(dir / "fifo"); }).find("it is a FIFO"),
            std::string::npos);
}

TEST(ReadFile, DevicesFoldersMissingFilesAndLinkLoopsAreRefused) {
  gpt2::testing::TempDir dir;
  EXPECT_EQ(file_error_of([] { read_file("/dev/zero", "input"); }),
            "cannot read input '/dev/zero': it is a character device, not a regular file");
  EXPECT_NE(file_error_of([&] { read_file(dir / ""); }).find("it is a folder, not a regular file"),
            std::string::npos);
  EXPECT_NE(file_error_of([&] { read_file(dir / "none"); }).find("No such file or directory (ENOENT)"),
            std::string::npos);
  ASSERT_EQ(::symlink("loop", (dir / "loop").c_str()), 0);
  EXPECT_NE(file_error_of([&] { read_file(dir / "loop"); }).find("(ELOOP)"), std::string::npos);
}

TEST(ReadFile, SizeLimitIsCheckedBeforeReadingAndNamesBothSizes) {
  gpt2::testing::TempDir dir;
  write(dir / "f", std::string(100, 'x'));
  EXPECT_EQ(read_file(dir / "f", "", 100).size(), 100u);
  EXPECT_NE(file_error_of([&] { read_file(dir / "f", "", 99); })
                .find("it holds 100 bytes, more than the 99 allowed"),
            std::string::npos);
}

TEST(ParseJson, NestingPastTheLimitIsAFormatErrorNotACrash) {
  // 200,000 levels would overflow the stack of anything that walks the
  // value recursively; the parser stops at level kMaxJsonDepth + 1.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  try {
    detail::parse_json(deep, "config.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "config.json nests arrays and objects deeper than 32 levels");
  }
  const std::string ok = std::string(detail::kMaxJsonDepth, '[') +
                         std::string(detail::kMaxJsonDepth, ']');
  EXPECT_TRUE(detail::parse_json(ok, "x").is_array());
}

TEST(ParseJson, DuplicateKeysAndSyntaxErrorsAreNamedWithoutNlohmannsId) {
  try {
    detail::parse_json(R"({"a": {"b": 1, "b": 2}})", "meta.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "meta.json has the key 'b' twice in one object");
  }
  try {
    detail::parse_json(R"({"a": })", "meta.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("meta.json is not valid JSON: parse error at line 1, column 7", 0), 0u)
        << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
  }
  // The same key in two different objects is fine, however many objects:
  // 100,000 members that are objects parse in linear time (nlohmann's
  // callback parser rescanned the members after each one: minutes here).
  std::string many = "{";
  for (int i = 0; i < 100000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\":{\"k\":1}";
  EXPECT_EQ(detail::parse_json(many + "}", "x").size(), 100000u);
  EXPECT_EQ(detail::parse_json(R"({"a": {"k": 1}, "b": {"k": 2}})", "x")["b"]["k"], 2);
}

TEST(ParseJson, IntegerObjectsAreReadInOrderAndAnythingElseIsNamed) {
  using Members = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(detail::parse_json_integers(R"({"b": 2, "a": -1, "\u0120x": 9223372036854775807})", "e"),
            (Members{{"b", 2}, {"a", -1}, {"\xC4\xA0x", INT64_MAX}}));
  EXPECT_EQ(detail::parse_json_integers("{}", "e"), Members{});
  EXPECT_EQ(detail::parse_json_integers(R"({"a": 1, "a": 2})", "e"), (Members{{"a", 1}, {"a", 2}}));
  const auto why = [](const std::string& text) {
    try {
      detail::parse_json_integers(text, "encoder.json");
      return std::string("no error");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(why(R"({"a": 1, "b": "x"})"), "encoder.json is not an object of integers: 'b' holds a string");
  EXPECT_EQ(why(R"({"a": 1.5})"), "encoder.json is not an object of integers: 'a' holds a fraction");
  EXPECT_EQ(why(R"({"a": {"b": 1}})"), "encoder.json is not an object of integers: 'a' holds an object");
  EXPECT_EQ(why(R"({"a": [1]})"), "encoder.json is not an object of integers: 'a' holds an array");
  EXPECT_EQ(why(R"({"a": 9223372036854775808})"),
            "encoder.json is not an object of integers: 'a' holds an integer past 2^63");
  EXPECT_EQ(why("[1, 2]"), "encoder.json is not a JSON object");
  EXPECT_EQ(why("7"), "encoder.json is not a JSON object");
  EXPECT_EQ(why(R"({"a": 1,})").rfind("encoder.json is not valid JSON: parse error at line 1", 0), 0u);
  // Deep nesting stops at the first inner bracket, whatever its depth.
  EXPECT_EQ(why("{\"a\": " + std::string(200000, '[')),
            "encoder.json is not an object of integers: 'a' holds an array");
}

}  // namespace
}  // namespace gpt2
