// The parts the subcommands share (cli.hpp).
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include "cli/cli.hpp"
#include "os/write_all.hpp"
#include "pages/report.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "text/utf8.hpp"

namespace contend::lab::cli {

const char* const exit_status_table =
    "Exit status (the same table for every command; docs/lab.md, \"Exit codes\"):\n"
    "  0      done; compare: no regression\n"
    "  1      compare: a regression, or another failure of its gate (a benchmark undecided and slower, nothing "
    "compared, a cell the test could not measure; unless --no-fail-on-regression); history import: the history "
    "could not be written (nothing stored)\n"
    "  2      bad arguments or bad input (a file or a history that cannot be read: missing, corrupt, truncated, "
    "foreign): nothing written\n"
    "  3      bench: no valid cell\n"
    "  4      an output could not be written (a full disk, a file size limit, a closed pipe; standard output "
    "included): bench still writes its other outputs; compare writes all its files or none\n"
    "  5      out of memory\n"
    "  128+N  stopped by signal N (bench writes the cells done, and a signal while it writes stops the writing; the "
    "other commands store and replace nothing)\n"
    "  run exits with the status of the program it ran (contend run --help)";

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set in a signal handler");

namespace {
// The first signal stops the command cleanly: bench keeps and writes the cells done; the
// others store and replace nothing (lab::interrupted) and exit 128 + N. A second one ends the
// process at once, as the signal would by default, but first removes the temporary file of
// an output being written, so that none is left beside it.
extern "C" void on_stop_signal(int sig) {
    int none = 0;
    if (stop_signal.compare_exchange_strong(none, sig)) return;
    lab::remove_temporary_output();
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // delivered as the handler returns
}

}  // namespace

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns at once
    sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);  // one handler at a time
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    // A cell's process that dies before reading its settings must not kill the run; a closed
    // pipe on standard output is then EPIPE, and a file past `ulimit -f` EFBIG: write errors,
    // reported with exit_output_failed (and a temporary file removed) instead of a kill.
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
}

// Standard output carries a command's result (the report, the list, the changes, the table):
// a write that failed there (a full disk, a file size limit, a closed pipe) fails the command
// with exit_output_failed, as a file that could not be written does, instead of exit 0 with
// the output cut short. A command that already failed keeps its status (and the message).
int standard_output_checked(const std::string& command, int code) {
    // stdio first (std::cout writes through it, synced): its errno is the reason.
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0;
    const int error = flush_failed ? errno : 0;
    std::cout.flush();
    if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return code;
    const std::string why = error != 0 ? std::string(": ") + std::strerror(error) : std::string();
    std::fprintf(stderr, "contend %s: cannot write standard output%s; what it printed is cut short or missing\n",
                 command.c_str(), why.c_str());
    return code == 0 ? exit_output_failed : code;
}

// Out of memory anywhere, even where an exception cannot pass (nlohmann::json's destructor
// allocates while it frees a large document, and is noexcept: a std::bad_alloc there was an
// abort, exit 134): say so and exit exit_out_of_memory. A reserve is freed first, so that
// writing the message cannot fail for memory too.
namespace {
char* memory_reserve = nullptr;
std::string* memory_command = nullptr;

extern "C" void on_out_of_memory() {
    delete[] memory_reserve;
    memory_reserve = nullptr;
    const std::string message = std::string("contend ") + *memory_command +
                                ": out of memory: the inputs (or the history) need more memory than this process "
                                "may use (see ulimit -v); stopped, no output half written\n";
    (void)write_all(STDERR_FILENO, message);
    std::_Exit(exit_out_of_memory);
}
}  // namespace

void install_out_of_memory_handler(const std::string& command) {
    memory_command = new std::string(command);
    memory_reserve = new char[1 << 20];
    std::set_new_handler(on_out_of_memory);
}

// "1,2,64": every item a whole number; an empty item is an error, not skipped.
std::vector<std::int32_t> parse_workers(const std::string& text) {
    std::vector<std::int32_t> workers;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument("--workers: '" + item + "' is not a worker count (give e.g. 1,2,64)");
        workers.push_back(static_cast<std::int32_t>(std::stol(item)));
    }
    if (workers.empty() || text.back() == ',')
        throw std::invalid_argument("--workers: an empty item in '" + text + "'");
    return workers;
}

// A count or a nice level, in decimal as a person writes it: "010" is not 8, "0x10" not 16,
// and a sign is allowed only where the value may be negative. The range is checked later,
// with the other settings (check_cotenant).
std::int32_t parse_small_integer(const char* option, const std::string& text, bool may_be_negative) {
    const std::string digits = may_be_negative && !text.empty() && text[0] == '-' ? text.substr(1) : text;
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(std::string(option) + ": '" + text + "' is not a whole number in decimal");
    return static_cast<std::int32_t>(std::stol(text));
}

// A whole number in decimal from `min` to `max`, as a person writes it: CLI11 reads "-1" into
// an unsigned option as 18446744073709551615 and clamps 99999999999999999999 to the largest
// value, so such options are read as text and parsed here.
std::int64_t parse_whole_number(const char* option, const std::string& text, std::int64_t min, std::int64_t max) {
    std::int64_t value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (text.empty() || (text[0] == '+') || ec == std::errc::invalid_argument || end != last)
        throw std::invalid_argument(std::string(option) + ": '" + lab::message_text(text) +
                                    "' is not a whole number in decimal");
    if (ec == std::errc::result_out_of_range || value < min || value > max)
        throw std::invalid_argument(std::string(option) + ": " + lab::message_text(text) + " is out of range (" +
                                    std::to_string(min) + " to " + std::to_string(max) + ")");
    return value;
}

// Chart.js as built into this binary, for a page about to be written; a binary built without
// it is refused before anything is read or written.
std::string_view page_chart_library() {
    const std::string_view library = lab::chart_library_bundle();
    if (library.empty())
        throw std::invalid_argument("--html: the charting library Chart.js was not built into this binary (" +
                                    std::string(lab::chart_library_path()) +
                                    " was missing at build time). Run scripts/setup.sh, then build again.");
    return library;
}

// POSIX shell quoting for the report's repro command: a path with quotes or spaces in it
// must come back as the same path.
std::string shell_word(const std::string& word) {
    if (!word.empty() &&
        word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%") ==
            std::string::npos)
        return word;
    std::string out = "'";
    for (const char ch : word) {
        if (ch == '\'') out += "'\\''";
        else out += ch;
    }
    return out + "'";
}

// Every run of the history, opened read-only. A history that cannot be opened or read (not a
// history, corrupt pages, cut short) is bad input (exit 2), as a results file that cannot be
// read is: the message names the path. Never exit 1, which is compare's "regression".
// A stop signal ends the read (exit 128 + N), wherever it is.
std::vector<lab::stored_run> read_history(const std::string& db_path) {
    try {
        const lab::history_store store(db_path, lab::history_access::read_only, &stop_signal);
        return store.stored_runs();
    } catch (const lab::interrupted&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument("--db " + lab::history_store::printable(db_path) + ": " + e.what());
    }
}

// --db as given, refused at once (exit 2) when it can hold no history (an empty path,
// SQLite's in-memory forms) or is a mistake for a PostgreSQL URI: history.hpp.
void check_db_option(const std::string& path) {
    try {
        lab::history_store::check_location(path);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--db ") + e.what());
    }
}

}  // namespace contend::lab::cli
