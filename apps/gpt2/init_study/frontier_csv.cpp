#include "apps/gpt2/init_study/frontier_csv.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "apps/gpt2/init_study/frontier_run.h"
#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/read_file.h"

namespace gpt2::app {
namespace {

// No file, or an empty one (a run killed before its first row was written):
// the next row starts it with the header.
bool no_rows_yet(const std::string& path) {
  std::error_code error;
  const auto bytes = std::filesystem::file_size(path, error);
  return error ? !std::filesystem::exists(path) : bytes == 0;
}

std::vector<std::string> split(const std::string& line, char by) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, by)) cells.push_back(cell);
  if (!line.empty() && line.back() == by) cells.emplace_back();
  return cells;
}

double to_double(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw InputError(fmt::format("{}: '{}' is not a number", where, text));
  return v;
}

int64_t to_int(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') throw InputError(fmt::format("{}: '{}' is not an integer", where, text));
  return v;
}

std::map<std::string, std::string> settings_map(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : split(text, '\n')) {
    const size_t space = line.find(' ');
    if (!line.empty()) out[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return out;
}

}  // namespace

const char* const kFrontierColumns =
    "scheme,depth,lr,seed,steps,start_val,final_val,best_val,diverged,skipped,first_skip,"
    "max_grad_norm,rms_start,rms_end,max_attn_logit,seconds";
const char* const kFrontierColumnsWithoutBest =
    "scheme,depth,lr,seed,steps,start_val,final_val,diverged,skipped,first_skip,max_grad_norm,"
    "rms_start,rms_end,max_attn_logit,seconds";

std::string frontier_row(const FrontierRun& r) {
  const FrontierCell& c = r.cell;
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2f}\n",
                     to_string(c.scheme), c.depth, c.lr, c.seed, r.steps, r.start_val,
                     r.final_val, r.best_val, r.diverged ? 1 : 0, r.skipped,
                     r.first_skip < 0 ? "" : std::to_string(r.first_skip), r.max_grad_norm,
                     r.rms_start, r.rms_end, r.max_attn_logit, r.seconds);
}

FrontierRun parse_frontier_row(const std::string& line, const std::string& where) {
  return parse_frontier_row(line, where, kFrontierColumns);
}

FrontierRun parse_frontier_row(const std::string& line, const std::string& where,
                               const std::string& columns) {
  const bool with_best = columns == kFrontierColumns;
  if (!with_best && columns != kFrontierColumnsWithoutBest) {
    throw InputError(fmt::format("{}: no such frontier columns: '{}'", where, columns));
  }
  const std::vector<std::string> cells =
      split(!line.empty() && line.back() == '\n' ? line.substr(0, line.size() - 1) : line, ',');
  const size_t want = split(columns, ',').size();
  if (cells.size() != want) {
    throw InputError(fmt::format("{}: {} cells, expected {} ({})", where, cells.size(), want,
                                 columns));
  }
  FrontierRun r;
  size_t i = 0;
  const auto next = [&] { return cells[i++]; };
  r.cell.scheme = residual_scale_from_string(next());
  r.cell.depth = to_int(next(), where);
  r.cell.lr = to_double(next(), where);
  r.cell.seed = static_cast<uint64_t>(to_int(next(), where));
  r.steps = to_int(next(), where);
  r.start_val = to_double(next(), where);
  r.final_val = to_double(next(), where);
  // A row of the columns before best_val: the best its two losses show.
  r.best_val = with_best ? to_double(next(), where)
                         : std::isfinite(r.final_val) ? std::min(r.start_val, r.final_val)
                                                      : r.start_val;
  r.diverged = to_int(next(), where) != 0;
  r.skipped = to_int(next(), where);
  const std::string first_skip = next();
  r.first_skip = first_skip.empty() ? -1 : to_int(first_skip, where);
  r.max_grad_norm = to_double(next(), where);
  r.rms_start = to_double(next(), where);
  r.rms_end = to_double(next(), where);
  r.max_attn_logit = to_double(next(), where);
  r.seconds = to_double(next(), where);
  return r;
}

std::vector<FrontierRun> read_frontier_csv(const std::string& path, std::ostream& out,
                                           bool* current_columns) {
  if (current_columns) *current_columns = true;
  if (no_rows_yet(path)) return {};
  std::string text = read_file(path, "frontier CSV");
  const size_t end = text.rfind('\n');
  if (!text.empty() && text.back() != '\n') {
    const size_t keep = end == std::string::npos ? 0 : end + 1;
    fmt::print(out, "resume    {}: dropped a partial last line ({} bytes) of an interrupted run\n",
               path, text.size() - keep);
    if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) {
      throw FileError(fmt::format("cannot cut the partial last line of '{}': {}", path,
                                  errno_text(errno)));
    }
    text.resize(keep);
    if (text.empty()) return {};  // the header itself was cut
  }
  std::vector<FrontierRun> runs;
  const std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 0 && lines[0] != kFrontierColumns && lines[0] != kFrontierColumnsWithoutBest) {
      throw InputError(fmt::format("'{}' has the columns '{}', not this version's '{}'", path,
                                   lines[0], kFrontierColumns));
    }
    if (i == 0 && current_columns) *current_columns = lines[0] == kFrontierColumns;
    if (i > 0 && !lines[i].empty()) {
      runs.push_back(
          parse_frontier_row(lines[i], fmt::format("'{}' line {}", path, i + 1), lines[0]));
    }
  }
  return runs;
}

void append_frontier_row(const std::string& path, const FrontierRun& run) {
  const bool fresh = no_rows_yet(path);
  const std::string text = (fresh ? std::string(kFrontierColumns) + "\n" : "") + frontier_row(run);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw FileError(fmt::format("cannot open '{}': {}", path, errno_text(errno)));
  const ssize_t wrote = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (wrote != static_cast<ssize_t>(text.size()) || !synced) {
    throw FileError(fmt::format("cannot append a row to '{}': {}", path,
                                errno_text(wrote < 0 ? write_errno : errno)));
  }
}

std::string frontier_settings(const FrontierGrid& grid, int64_t vocab_size) {
  const FrontierCell any{ResidualScale::kTwoPerBlock, 1, 1.0, 0};
  std::ostringstream s;
  for (const auto& [field, text] : field_texts(frontier_model(grid, vocab_size, any))) {
    const std::string key = field.key;
    if (key != "n_layer" && key != "init_residual" && key != "init_seed") {
      fmt::print(s, "model.{} {}\n", key, text);
    }
  }
  for (const auto& [field, text] : field_texts(frontier_options(grid, any))) {
    const std::string key = field.key;
    if (key != "lr" && key != "min_lr" && key != "seed") fmt::print(s, "train.{} {}\n", key, text);
  }
  fmt::print(s, "data {}\n", grid.data.empty() ? "shipped corpus, char-level" : grid.data);
  // Off the CPU's float32 only, so that every CPU grid records the same
  // lines: the device's kind (cuda:1 continues cuda:0's grid) and the dtype.
  const std::string kind = grid.device.rfind("cuda", 0) == 0 ? "cuda" : grid.device;
  if (kind != "cpu") fmt::print(s, "device {}\n", kind);
  if (grid.dtype != "float32") fmt::print(s, "dtype {}\n", grid.dtype);
  return s.str();
}

void check_or_record_settings(const std::string& path, const std::string& settings) {
  if (!std::filesystem::exists(path)) {
    write_file_atomically(path, settings);
    return;
  }
  const auto recorded = settings_map(read_file(path, "frontier settings"));
  const auto given = settings_map(settings);
  std::vector<std::string> differ;
  for (const auto& [key, value] : given) {
    const auto at = recorded.find(key);
    const std::string was = at == recorded.end() ? "(none)" : at->second;
    if (was != value) differ.push_back(fmt::format("{} {} (recorded) vs {} (now)", key, was, value));
  }
  for (const auto& [key, value] : recorded) {
    if (!given.count(key)) differ.push_back(fmt::format("{} {} (recorded) vs (none) (now)", key, value));
  }
  if (!differ.empty()) {
    throw ConfigError(fmt::format(
        "'{}' records other settings for the runs in this folder: {}; use those settings or "
        "another --out", path, fmt::join(differ, "; ")));
  }
}

}  // namespace gpt2::app
