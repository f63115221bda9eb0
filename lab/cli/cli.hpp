// What the subcommands of `contend` share: the exit codes, the stop signal, the parsing of
// numbers as a person writes them, and the command each file adds to the app.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "store/history.hpp"

namespace contend::lab::cli {

// Exit codes: one table for every command, printed by every --help (exit_status_table) and
// in docs/lab.md ("Exit codes").
constexpr int exit_regression = 1;  // compare: a regression; history import: the history could not be written
constexpr int exit_usage = 2;  // bad arguments or bad input (a history that cannot be read too): nothing written
constexpr int exit_no_valid_cell = 3;  // bench: the run measured nothing valid
// An output could not be written: a file, the history (bench), or standard output (a full
// disk, a file size limit, a closed pipe). Not 2: the arguments and inputs were fine, and a
// script may retry; not 1: compare's 1 means "regression", and a report that never arrived
// must not read as a verdict.
constexpr int exit_output_failed = 4;
constexpr int exit_out_of_memory = 5;  // an input (or the history) needed more memory than the process may use
extern const char* const exit_status_table;

// The signal that asked the command to stop (SIGINT, SIGTERM, SIGHUP), or 0.
extern std::atomic<int> stop_signal;
// The first signal stops the command cleanly: bench keeps and writes the cells done; the
// others store and replace nothing (lab::interrupted) and exit 128 + N. A second one ends the
// process at once, as the signal would by default, having removed the temporary file of an
// output being written.
void install_stop_handlers();
// Out of memory anywhere, even where an exception cannot pass: say so and exit
// exit_out_of_memory.
void install_out_of_memory_handler(const std::string& command);
// The command's status, or exit_output_failed when what it printed on standard output could
// not all be written (a full disk, a file size limit, a closed pipe).
int standard_output_checked(const std::string& command, int code);

// "1,2,64": every item a whole number; an empty item is an error, not skipped.
std::vector<std::int32_t> parse_workers(const std::string& text);
// A count or a nice level in decimal: "010" is not 8, "0x10" not 16; a sign only where the
// value may be negative. The range is checked with the other settings.
std::int32_t parse_small_integer(const char* option, const std::string& text, bool may_be_negative);
// A whole number in decimal from `min` to `max` (CLI11 reads "-1" into an unsigned option as
// 18446744073709551615 and clamps what overflows, so such options are read as text).
std::int64_t parse_whole_number(const char* option, const std::string& text, std::int64_t min, std::int64_t max);
// POSIX shell quoting: a path with quotes or spaces in it comes back as the same path.
std::string shell_word(const std::string& word);

// --db as given, refused at once (exit 2) when it can hold no history or is a mistake for a
// PostgreSQL URI.
void check_db_option(const std::string& path);
// Every run of the history, opened read-only; one that cannot be read is bad input (exit 2).
std::vector<stored_run> read_history(const std::string& db_path);
// Chart.js as built into this binary, for a page about to be written; a binary built
// without it is refused before anything is read or written.
std::string_view page_chart_library();

// A subcommand: its options declared on the app, and what runs when it is the one parsed.
// `other_failure`: the status of an error that is neither bad input nor a failed output.
struct command {
    CLI::App* app = nullptr;
    std::function<int()> run;
    int other_failure = exit_usage;
};

command add_bench(CLI::App& app);
command add_disasm(CLI::App& app);
command add_report(CLI::App& app);
command add_compare(CLI::App& app);
command add_run(CLI::App& app);
// `history import`, `history list` and `history` itself, in that order: a parsed
// sub-subcommand leaves `history` parsed too, so the first parsed one is the one to run.
std::vector<command> add_history(CLI::App& app);

}  // namespace contend::lab::cli
