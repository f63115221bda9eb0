// contend run: its options, parsed into a program_request for run/program_session, which
// runs the program with its pthread mutexes on contend's locks (run/preload_run.hpp), profiled
// per lock with --profile (run/run_profile.hpp), and records it as one row of the lab's
// results with --json, --csv or --db.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "run/program_session.hpp"

namespace contend::lab::cli {
namespace {

struct run_args {
    std::vector<std::string> argv;
    std::string locks = "contend_mutex";  // --lock: one name, or several joined by commas
    std::string repetitions = "1";
    bool profile = false;
    std::string json_path, csv_path, db_path, label;
};

// --lock's names as written, every one between commas: the session checks each.
std::vector<std::string> split_locks(const std::string& text) {
    std::vector<std::string> locks;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        locks.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return locks;
}

// The program's failure comes first and decides, then a run that was not on the lock (3),
// then a profile that misses processes (4, as a result that could not be written); then a
// signal that stopped the writing, and an output not written: a run that passed but was not
// recorded must not read as a success.
int exit_status(const program_outcome& o) {
    if (o.program_status != 0) return o.program_status;
    if (o.not_interposed) return exit_no_valid_cell;
    if (o.profile_incomplete) return exit_output_failed;
    if (o.stopped_by != 0) return 128 + o.stopped_by;
    if (o.write_failed) return exit_output_failed;
    return 0;
}

int run_program(const CLI::App& run, const run_args& a) {
    program_request r;
    r.argv = a.argv;
    r.label = a.label;
    r.profile = a.profile;
    r.stop = &stop_signal;
    if (run.count("--db")) {
        check_db_option(a.db_path);
        r.db_path = a.db_path;
    }
    if (run.count("--json")) r.json_path = a.json_path;
    if (run.count("--csv")) r.csv_path = a.csv_path;
    r.locks = split_locks(a.locks);
    r.repetitions = parse_small_integer("--repetitions", a.repetitions, false);
    const program_session session(std::move(r));
    return exit_status(session.run());
}

}  // namespace

command add_run(CLI::App& app) {
    auto a = std::make_shared<run_args>();
    auto* run = app.add_subcommand(
        "run",
        "Run a program with contend's locks in place of its pthread mutexes and rwlocks (preloaded; no recompiling)");
    run->footer(
        "Exit status: the program's own; 128+N if a signal N killed it; 127 if it was not found, 126 if it could not "
        "be executed; 2 for bad arguments and programs the library cannot be loaded into (static, set-user-ID: "
        "nothing run); when the program exited 0: 3 if it did not run on the lock asked for (no process loaded the "
        "library), 4 if a result could not be written or the profile misses processes.\nExample: contend run --lock "
        "glibc --profile -- sysbench mutex --threads=8 run");
    run->add_option("--lock", a->locks,
                    lock_help() +
                        "Several, joined by commas, run one after the other (an A/B), each a row of the "
                        "results")
        ->capture_default_str();
    run->add_option("--repetitions", a->repetitions,
                    "Run the program this many times under each lock, interleaved (each run a sample of the row)")
        ->capture_default_str();
    run->add_flag("--profile", a->profile,
                  "Profile every contended mutex (counts, waits, sampled holds, the call site) and print the top 20 "
                  "on standard error at exit");
    run->add_option("--json", a->json_path, "Write the run as the lab's JSON results here");
    run->add_option("--csv", a->csv_path, "Write the run as CSV here");
    run->add_option("--db", a->db_path,
                    "Append the run to this history: an SQLite file, or a PostgreSQL database as postgresql://...");
    run->add_option("--label", a->label, "Label for the recorded run (default: git describe)");
    run->add_option("program", a->argv, "The program and its arguments, after --")->required();
    return {run, [run, a] { return run_program(*run, *a); }};
}

}  // namespace contend::lab::cli
