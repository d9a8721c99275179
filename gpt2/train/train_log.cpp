#include "gpt2/train/train_log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

std::string number(double v) { return std::isnan(v) && !std::signbit(v) ? "nan" : fmt::format("{:.6g}", v); }

double parse_number(const std::string& text, const std::string& path, size_t line) {
  if (text.empty()) return kNone;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0') {
    throw FileError(fmt::format("'{}' line {}: '{}' is not a number", path, line, text));
  }
  return v;
}

LogRow parse_row(const std::string& text, const std::string& path, size_t line) {
  std::vector<std::string> cells;
  std::stringstream in(text);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  if (!text.empty() && text.back() == ',') cells.emplace_back();
  if (cells.size() != 7) {
    throw FileError(fmt::format("'{}' line {} has {} fields, expected 7 ({})", path, line,
                                cells.size(), kLogHeader));
  }
  LogRow r;
  const double step = parse_number(cells[0], path, line);
  if (!(step >= 0) || step != std::floor(step)) {
    throw FileError(fmt::format("'{}' line {}: step '{}' is not a count", path, line, cells[0]));
  }
  r.step = static_cast<int64_t>(step);
  r.split = cells[1];
  r.loss = parse_number(cells[2], path, line);
  r.lr = parse_number(cells[3], path, line);
  r.grad_norm = parse_number(cells[4], path, line);
  r.tokens_per_s = parse_number(cells[5], path, line);
  r.step_s = parse_number(cells[6], path, line);
  return r;
}

// The header and the lines of `path` whose step is <= `last_step`.
std::string kept_lines(const std::string& path, int64_t last_step) {
  std::string kept = std::string(kLogHeader) + "\n";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return kept;
  std::istringstream in(read_file(path, "log"));
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (++n == 1 || line.empty()) continue;
    if (parse_row(line, path, n).step <= last_step) kept += line + "\n";
  }
  return kept;
}

}  // namespace

TrainLog::TrainLog(const std::string& path, std::optional<int64_t> resume_step) : path_(path) {
  const std::string start = resume_step ? kept_lines(path, *resume_step)
                                        : std::string(kLogHeader) + "\n";
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << start;
    out.close();
    if (!out) throw FileError(fmt::format("cannot write '{}'", tmp));
  });
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw FileError(fmt::format("cannot append to log '{}': {}", path, std::strerror(errno)));
}

TrainLog::~TrainLog() {
  if (file_) std::fclose(file_);
}

void TrainLog::write(const std::string& line) {
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    throw FileError(fmt::format("cannot append to log '{}': {}", path_, std::strerror(errno)));
  }
}

void TrainLog::step(const StepResult& r) {
  write(fmt::format("{},{},{},{},{},{},{}\n", r.step, r.skipped ? "skipped" : "train",
                    number(r.loss), number(r.lr), number(r.grad_norm),
                    number(static_cast<double>(r.tokens) / r.seconds), number(r.seconds)));
}

void TrainLog::eval(int64_t step, double val_loss) {
  write(fmt::format("{},val,{},,,,\n", step, number(val_loss)));
}

std::vector<LogRow> read_log(const std::string& path) {
  std::istringstream in(read_file(path, "log"));
  std::string line;
  if (!std::getline(in, line) || line != kLogHeader) {
    throw FileError(fmt::format("'{}' does not start with the header '{}'", path, kLogHeader));
  }
  std::vector<LogRow> rows;
  for (size_t n = 2; std::getline(in, line); ++n) {
    if (!line.empty()) rows.push_back(parse_row(line, path, n));
  }
  return rows;
}

}  // namespace gpt2
