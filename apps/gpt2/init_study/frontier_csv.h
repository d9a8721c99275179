#pragma once
// The files that let `init-study frontier` run a grid in pieces:
// OUT/frontier.csv, one row per finished run, appended and flushed as each
// run ends, and OUT/frontier_grid.txt, the settings every row was run with.

#include <iosfwd>
#include <string>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// frontier.csv's header line (without the newline).
extern const char* const kFrontierColumns;
/// The columns before best_val, which read_frontier_csv still reads.
extern const char* const kFrontierColumnsWithoutBest;

/// `run` as a CSV line (with the newline); doubles in their shortest
/// round-trip form, so a repeated run can be compared bit for bit.
std::string frontier_row(const FrontierRun& run);
/// Inverse of frontier_row (with or without the newline). Throws InputError
/// naming `where` and the bad cell.
FrontierRun parse_frontier_row(const std::string& line, const std::string& where);
/// The same for a row of `columns`: kFrontierColumns, or
/// kFrontierColumnsWithoutBest, whose rows get best_val = the lower of
/// start_val and a finite final_val.
FrontierRun parse_frontier_row(const std::string& line, const std::string& where,
                               const std::string& columns);

/// The rows of `path` (empty when it does not exist). A last line without
/// its newline is what a killed run leaves: it is cut off the file (and
/// said on `out`), as is nothing else. Throws InputError for another
/// header or a row that does not parse. `current_columns`, when given, says
/// whether the file has this version's columns (else the ones before
/// best_val: it can be read, not appended to).
std::vector<FrontierRun> read_frontier_csv(const std::string& path, std::ostream& out,
                                           bool* current_columns = nullptr);
/// Appends `run`'s line to `path` (made with the header first when it does
/// not exist) in one write, then fsyncs: a kill leaves at most a partial last
/// line. Throws FileError naming `path`.
void append_frontier_row(const std::string& path, const FrontierRun& run);

/// The settings a grid's rows share, one `key value` per line: every model
/// and training field of a run except those its cell sets (depth, scheme,
/// seed, learning rates; `--clip` is train.grad_clip, 0 when off), the data
/// folder, and, unless the CPU's float32, the device's kind and the dtype.
std::string frontier_settings(const FrontierGrid& grid, int64_t vocab_size);
/// Records `settings` in `path`, or, when `path` holds settings already,
/// throws ConfigError naming each one that differs (recorded and given).
void check_or_record_settings(const std::string& path, const std::string& settings);

}  // namespace gpt2::app
