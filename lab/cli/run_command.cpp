// contend run: a program with its pthread mutexes on contend's locks (run/preload_run.hpp),
// profiled per lock with --profile (run/run_profile.hpp), recorded as one row of the lab's
// results with --json, --csv or --db.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "measure/harness.hpp"
#include "measure/machine.hpp"
#include "run/bench_session.hpp"
#include "run/preload_run.hpp"
#include "run/run_profile.hpp"
#include "store/output_file.hpp"
#include "text/utf8.hpp"

namespace contend::lab::cli {
namespace {

struct run_args {
    preload_request request;
    std::string locks = "contend_mutex";  // --lock: one name, or several joined by commas
    std::string repetitions = "1";
    bool profile = false;
    std::string json_path, csv_path, db_path, label;
};

// The locks' names, each with its older name if it has one.
std::string lock_list() {
    std::string list;
    for (const auto& l : interpose_locks())
        list += (list.empty() ? "" : ", ") + l.name + (l.alias.empty() ? "" : " (or " + l.alias + ")");
    return list;
}

std::string lock_help() {
    std::string help = "The lock for the program's normal mutexes, one of:";
    for (const auto& l : interpose_locks())
        help += "\n  " + l.name + (l.alias.empty() ? "" : " (or " + l.alias + ")") + ": " + l.description;
    return help + "\n";
}

// --lock's names, each known and none twice, as the library names them (an older name taken
// for its lock's); thrown as bad arguments before anything runs.
std::vector<std::string> parse_locks(const std::string& text) {
    std::vector<std::string> locks;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string given = text.substr(start, comma - start);
        const std::string name = interpose_lock_named(given);
        if (name.empty())
            throw std::invalid_argument("--lock " + message_text(text) + ": \"" + message_text(given) +
                                        "\" is not a lock (the locks: " + lock_list() +
                                        "; glibc: glibc's own, for comparison)");
        if (std::find(locks.begin(), locks.end(), name) != locks.end())
            throw std::invalid_argument("--lock " + message_text(text) + ": " + name + " is named twice");
        locks.push_back(name);
        start = comma + 1;
    }
    return locks;
}

// The file the program names, as execvp finds it, or "" (a name not found in PATH).
std::string program_file(const std::string& program) {
    if (program.find('/') != std::string::npos) return program;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
        const std::string candidate = dir + "/" + program;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        start = colon + 1;
    }
    return "";
}

// The outputs asked for, checked as bench checks its own, and none of them on the program: an
// output there would replace the program once it has run.
results_outputs checked_outputs(const CLI::App& run, const run_args& a) {
    results_outputs out;
    out.stop = &stop_signal;
    if (run.count("--json")) out.json_path = a.json_path;
    if (run.count("--csv")) out.csv_path = a.csv_path;
    if (run.count("--db")) {
        check_db_option(a.db_path);
        out.db_path = a.db_path;
    }
    for (const auto& [what, path] : {std::pair{"--json", out.json_path.value_or("")}, std::pair{"--csv", out.csv_path}})
        if (path == "-")
            throw std::invalid_argument(std::string(what) +
                                        " -: standard output is the program's; give a file to write the results to");
    if (run.count("--csv") && a.csv_path.empty()) throw output_error("--csv \"\": an empty path");
    std::vector<named_path> inputs;
    if (const std::string file = program_file(a.request.argv.front()); !file.empty())
        inputs.push_back({"the program", file});
    check_results_outputs(out, inputs);
    return out;
}

// Why the run did not run on `lock`, from the library's markers, or "".
std::string interposition_problem(const run_markers& markers, const std::string& lock, const std::string& program,
                                  const std::string& library) {
    if (markers.loaded.empty())
        return "no process of " + program + " loaded the interposition library " + message_text(library) +
               ": its mutexes were glibc's, unprofiled (a statically linked or set-user-ID program that it started, "
               "one whose LD_PRELOAD was cleared, or a CONTEND_INTERPOSE_LIBRARY that is not contend's library)";
    for (const auto& [pid, taken] : markers.loaded)
        if (taken != lock)
            return "process " + std::to_string(pid) + " of " + program + " ran its mutexes on " +
                   message_text(taken, 40) + ", not " + lock +
                   " (the library at CONTEND_INTERPOSE_LIBRARY does not know the lock, or the program changed "
                   "CONTEND_INTERPOSE_LOCK)";
    return "";
}

// The profile the library left in the folder, merged and symbolized, its table printed; none
// (and a line saying why) when no file was written. `lost` counts the processes that locked
// and left no profile, and the files that could not be read; each is said.
std::optional<program_profile> read_profile(const profile_directory& folder, const run_markers& markers,
                                            const std::string& program, pid_t pid, std::size_t& lost) {
    const profile_folder read = read_profile_folder(folder.path());
    for (const auto& e : read.errors) std::fprintf(stderr, "contend run: a profile was not read: %s\n", e.c_str());
    lost = read.errors.size() + markers.unfinished.size();
    if (!markers.unfinished.empty()) {
        std::string pids;
        for (std::size_t i = 0; i < markers.unfinished.size() && i < 10; ++i)
            pids += (i ? ", " : "") + std::to_string(markers.unfinished[i]);
        if (markers.unfinished.size() > 10) pids += ", ...";
        std::fprintf(stderr,
                     "contend run: the profile is incomplete: %zu process%s of %s locked and left no profile (pid%s "
                     "%s): killed by a signal, still running when the program ended, or the write failed (the "
                     "library said why above)\n",
                     markers.unfinished.size(), markers.unfinished.size() == 1 ? "" : "es", program.c_str(),
                     markers.unfinished.size() == 1 ? "" : "s", pids.c_str());
    }
    if (read.processes.empty()) {
        if (lost == 0)
            std::fprintf(stderr, "contend run: no profile was written: no process of %s locked an interposed mutex\n",
                         program.c_str());
        return std::nullopt;
    }
    program_profile profile = merge_profiles(read.processes, pid);
    profile.processes_lost = lost;
    for (const auto& f : symbolize_sites(profile))
        std::fprintf(stderr, "contend run: sites not symbolized: %s\n", f.c_str());
    std::cerr << profile_table(profile);
    return profile;
}

int run_program(const CLI::App& run, run_args& a) {
    preload_request& request = a.request;
    if (request.argv.empty() || request.argv.front().empty())
        throw std::invalid_argument("no program to run (after --)");
    if (!is_printable_utf8(a.label))
        throw std::invalid_argument("--label: the label must be printable UTF-8 (no control characters)");
    const results_outputs outputs = checked_outputs(run, a);
    const bool recording = outputs.json_path || !outputs.csv_path.empty() || !outputs.db_path.empty();
    const std::vector<std::string> locks = parse_locks(a.locks);
    const int repetitions = parse_small_integer("--repetitions", a.repetitions, false);
    if (repetitions < 1 || repetitions > 1000) throw std::invalid_argument("--repetitions: from 1 to 1000");
    request.library = find_interpose_library();
    if (const std::string file = program_file(request.argv.front()); !file.empty()) {
        const program_file_check check = check_program_file(file);
        if (!check.refusal.empty())
            throw std::invalid_argument(message_text(file) + ": " + check.refusal + "; nothing run");
        if (!check.c11_locks.empty()) {
            std::string names;
            for (const auto& n : check.c11_locks) names += (names.empty() ? "" : ", ") + n;
            std::fprintf(stderr,
                         "contend run: warning: %s calls the C11 %s: glibc runs those on its own mutex through "
                         "internal calls, which no preloaded library can replace: they stay glibc's, unprofiled\n",
                         message_text(file).c_str(), names.c_str());
        }
    }
    run_result record;
    if (recording) record.context = read_machine_context(a.label, format_cpu_list(allowed_cpus()));
    const bool several = locks.size() > 1 || repetitions > 1;
    const std::string program = message_text(request.argv.front());

    // Interleaved: each repetition runs every lock in turn, so that a drift of the machine
    // reaches each lock alike. The first run that fails ends it: a comparison with a failing
    // program means nothing.
    std::vector<std::vector<program_run>> runs(locks.size());
    int code = 0;
    bool incomplete = false;
    for (int r = 1; r <= repetitions && code == 0; ++r) {
        for (std::size_t i = 0; i < locks.size() && code == 0; ++i) {
            request.lock = locks[i];
            if (several)
                std::fprintf(stderr, "contend run: --lock %s, run %d of %d\n", locks[i].c_str(), r, repetitions);
            // The library's markers, and the profile, go here. Run as root, the program may
            // drop its privileges before it writes its profile: the folder is then open to
            // every user (not listable).
            const profile_directory folder(geteuid() == 0);
            request.run_dir = folder.path();
            if (a.profile) request.profile_path = folder.path();
            program_run run;
            const auto started = std::chrono::steady_clock::now();
            run.status = run_preloaded(request);
            run.wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
            const program_status& s = run.status;
            code = exit_code_of(s);
            if (s.start_error != 0) {
                std::fprintf(stderr, "contend run: cannot run %s: %s%s\n", program.c_str(),
                             std::strerror(s.start_error), recording ? "; nothing written" : "");
                return code;
            }
            // A program killed by SIGPIPE (a closed pipe downstream: `contend run -- yes | head -1`)
            // is not news, as a shell does not print it either.
            if (s.signalled && s.value != SIGPIPE)
                std::fprintf(stderr, "contend run: %s was killed by signal %d (%s)\n", program.c_str(), s.value,
                             strsignal(s.value));
            const run_markers markers = read_run_markers(folder.path());
            run.not_interposed = interposition_problem(markers, locks[i], program, request.library);
            if (!run.not_interposed.empty()) {
                std::fprintf(stderr, "contend run: %s\n", run.not_interposed.c_str());
                if (code == 0) code = exit_no_valid_cell;
            }
            if (a.profile) run.profile = read_profile(folder, markers, program, s.pid, run.processes_lost);
            incomplete = incomplete || run.processes_lost > 0;
            runs[i].push_back(std::move(run));
        }
    }

    // The program's failure comes first and decides, then a run that was not on the lock (3),
    // then a profile that misses processes (4, as a result that could not be written).
    if (code == 0 && incomplete) code = exit_output_failed;
    if (!recording) return code;
    for (std::size_t i = 0; i < locks.size(); ++i)
        if (!runs[i].empty()) record.cells.push_back(run_cell({request.argv, locks[i], a.profile, std::move(runs[i])}));
    // A signal during the writing stops it (bench_session.hpp), unless one came before.
    const bool stopped_before = stop_signal.load() != 0;
    const bench_written written = write_results(outputs, record, stopped_before ? nullptr : &stop_signal);
    for (const auto& w : written.wrote) std::fprintf(stderr, "contend run: wrote %s\n", w.c_str());
    for (const auto& f : written.failed) std::fprintf(stderr, "contend run: could not write %s\n", f.c_str());
    // The program's failure came first and decides; a run that passed but was not recorded
    // must not read as a success.
    if (const int sig = stop_signal.load(); code == 0 && !stopped_before && sig != 0) return 128 + sig;
    if (code == 0 && !written.failed.empty()) return exit_output_failed;
    return code;
}

}  // namespace

command add_run(CLI::App& app) {
    auto a = std::make_shared<run_args>();
    auto* run = app.add_subcommand(
        "run", "Run a program with contend's locks in place of its pthread mutexes (preloaded; no recompiling)");
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
    run->add_option("program", a->request.argv, "The program and its arguments, after --")->required();
    return {run, [run, a] { return run_program(*run, *a); }};
}

}  // namespace contend::lab::cli
