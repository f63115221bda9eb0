// One `contend run`, from its request to its written outputs, as a library call, beside
// run/bench_session: every check that can fail before the program runs (the program, the
// label, each output, none on the program, the locks, the repetitions, the interposition
// library, a program file the library cannot be loaded into); the runs, each timed, each in a
// fresh run folder (run/run_profile.hpp) that holds the library's markers and, with a profile,
// its files; and the results written. The CLI parses into a program_request and turns the
// outcome into its exit status.
//
// What a person reads while the program runs is printed here, on standard error, as it
// happens, each line "contend run: ...": the warning about C11 locks, which run of which lock
// starts, a program that could not start or was killed, a run not on its lock, the profile's
// table and its losses, and each output written or not. Standard output is the program's.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "os/child_process.hpp"  // program_file, which the session uses to find the program
#include "run/run_profile.hpp"
#include "store/results_outputs.hpp"

namespace contend::lab {

// The locks a run can take, each with its older name if it has one: the end of the refusal
// of a name that is not one ("the locks: ...; glibc: ..."), and --lock's help (a line each,
// with its description).
std::string lock_choices();
std::string lock_help();

// Why a run did not run on `lock`, from the library's markers, or "" when it did: no process
// of the program loaded `library`, or one took another lock. `program` and `library` as the
// message names them.
std::string interposition_problem(const run_markers& markers, const std::string& lock, const std::string& program,
                                  const std::string& library);

struct program_request {
    std::vector<std::string> argv;  // the program and its arguments; argv[0] is looked up in PATH
    // The locks, each run in turn within a repetition (an A/B), each a row of the results;
    // each a lock's name or older name (interpose_lock_named), none twice; the session keeps
    // the library's names.
    std::vector<std::string> locks = {"contend_mutex"};
    std::int32_t repetitions = 1;  // runs per lock, 1 to program_session::max_repetitions
    bool profile = false;  // profile every contended mutex; the table is printed after each run
    std::string label;  // the recorded run's label ("": git describe); printable UTF-8
    // Where the results go; none given: nothing recorded. No output may be standard output
    // ('-'), which is the program's, nor the program's file.
    std::optional<std::string> json_path, csv_path;  // none: no JSON, no CSV; "" is refused
    std::string db_path;  // "": no history
    // Ends the check of the history (a wait for its lock) at a stop signal, and stops the
    // writing (write_results); null: never.
    const std::atomic<int>* stop = nullptr;
};

// How the session ended, for the caller's exit status. The run that ended the runs early
// sets program_status (it failed) or not_interposed (it exited 0, not on its lock).
struct program_outcome {
    int program_status = 0;  // exit_code_of the run that failed; 0: every run exited 0
    bool start_failed = false;  // that run could not start (status 127 or 126): nothing written
    bool not_interposed = false;  // a run that exited 0 did not run on its lock
    bool profile_incomplete = false;  // a profile misses processes, or a file could not be read
    bool write_failed = false;  // an output could not be written
    int stopped_by = 0;  // the signal that stopped the writing (0: none, or one came before it)
};

class program_session {
public:
    static constexpr std::int32_t max_repetitions = 1000;

    // Checks the request in the order the list above gives and finds the interposition
    // library: throws std::invalid_argument (or output_error) naming the option at fault, and
    // std::runtime_error when the library is not found, before anything runs or is written.
    // Prints the warning about a program that calls C11 locks.
    explicit program_session(program_request request);

    // Runs the program `repetitions` times under each lock, interleaved: each repetition runs
    // every lock in turn, so that a drift of the machine reaches each lock alike. The first
    // run that fails or is not on its lock ends the runs (a comparison with a failing program
    // means nothing). Then, unless that run could not start, writes what ran as one cell per
    // lock (run_cell). A signal during the writing stops it, unless one came before (then
    // the writing goes on).
    program_outcome run() const;

private:
    bool recording() const;

    program_request request_;
    results_outputs outputs_;
    std::string library_;
};

}  // namespace contend::lab
