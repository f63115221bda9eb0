#include "run/program_session.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <utility>

#include "measure/harness.hpp"
#include "measure/machine.hpp"
#include "run/preload_run.hpp"
#include "text/utf8.hpp"

namespace contend::lab {
namespace {

// The profile the library left in the folder, merged and symbolized, its table printed; none
// (and a line saying why) when no file was written. `lost` counts the processes that locked
// and left no profile, and the files that could not be read; each is said.
std::optional<program_profile> read_program_profile(const profile_directory& folder, const run_markers& markers,
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

// The locks' names, each with its older name if it has one.
std::string lock_list() {
    std::string list;
    for (const auto& l : interpose_locks())
        list += (list.empty() ? "" : ", ") + l.name + (l.alias.empty() ? "" : " (or " + l.alias + ")");
    return list;
}

// Each lock known and none twice, as the library names them (an older name taken for its
// lock's); a refusal names the list as --lock gave it, joined by commas.
std::vector<std::string> checked_locks(const std::vector<std::string>& given) {
    if (given.empty()) throw std::invalid_argument("--lock: no lock to run the program on");
    std::string text;
    for (const auto& n : given) text += (text.empty() ? "" : ",") + n;
    std::vector<std::string> locks;
    for (const auto& g : given) {
        const std::string name = interpose_lock_named(g);
        if (name.empty())
            throw std::invalid_argument("--lock " + message_text(text) + ": \"" + message_text(g) +
                                        "\" is not a lock (" + lock_choices() + ")");
        if (std::find(locks.begin(), locks.end(), name) != locks.end())
            throw std::invalid_argument("--lock " + message_text(text) + ": " + name + " is named twice");
        locks.push_back(name);
    }
    return locks;
}

}  // namespace

std::string lock_choices() { return "the locks: " + lock_list() + "; glibc: glibc's own, for comparison"; }

std::string lock_help() {
    std::string help = "The lock for the program's normal mutexes, one of:";
    for (const auto& l : interpose_locks())
        help += "\n  " + l.name + (l.alias.empty() ? "" : " (or " + l.alias + ")") + ": " + l.description;
    // The rwlocks' lock is not a choice of its own: contend has one reader-writer lock.
    return help +
           "\nIts default (process-private, reader-preferring) pthread rwlocks run on contend::shared_mutex under "
           "every lock but glibc, which leaves them glibc's.\n";
}

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

program_session::program_session(program_request request) : request_(std::move(request)) {
    const auto& r = request_;
    if (r.argv.empty() || r.argv.front().empty()) throw std::invalid_argument("no program to run (after --)");
    if (!is_printable_utf8(r.label))
        throw std::invalid_argument("--label: the label must be printable UTF-8 (no control characters)");
    for (const auto& [what, path] : {std::pair{"--json", r.json_path}, std::pair{"--csv", r.csv_path}})
        if (path == "-")
            throw std::invalid_argument(std::string(what) +
                                        " -: standard output is the program's; give a file to write the results to");
    if (r.csv_path && r.csv_path->empty()) throw output_error("--csv \"\": an empty path");
    outputs_ = {r.json_path, r.csv_path.value_or(""), r.db_path, false, r.stop};
    // An output on the program would replace it once it has run.
    const std::string file = program_file(r.argv.front(), std::getenv("PATH"));
    std::vector<named_path> inputs;
    if (!file.empty()) inputs.push_back({"the program", file});
    check_results_outputs(outputs_, inputs);
    request_.locks = checked_locks(r.locks);
    if (r.repetitions < 1 || r.repetitions > max_repetitions)
        throw std::invalid_argument("--repetitions: from 1 to " + std::to_string(max_repetitions));
    library_ = find_interpose_library();
    if (file.empty()) return;  // the exec will say it is not found
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

bool program_session::recording() const {
    return outputs_.json_path || !outputs_.csv_path.empty() || !outputs_.db_path.empty();
}

program_outcome program_session::run() const {
    const auto& r = request_;
    const bool recording = this->recording();
    run_result record;
    if (recording) record.context = read_machine_context(r.label, format_cpu_list(allowed_cpus()));
    const bool several = r.locks.size() > 1 || r.repetitions > 1;
    const std::string program = message_text(r.argv.front());
    preload_request preload;
    preload.argv = r.argv;
    preload.library = library_;

    program_outcome outcome;
    std::vector<std::vector<program_run>> runs(r.locks.size());
    const auto ended = [&] { return outcome.program_status != 0 || outcome.not_interposed; };
    for (int rep = 1; rep <= r.repetitions && !ended(); ++rep) {
        for (std::size_t i = 0; i < r.locks.size() && !ended(); ++i) {
            preload.lock = r.locks[i];
            if (several)
                std::fprintf(stderr, "contend run: --lock %s, run %d of %d\n", r.locks[i].c_str(), rep, r.repetitions);
            // The library's markers, and the profile, go here. Run as root, the program may
            // drop its privileges before it writes its profile: the folder is then open to
            // every user (not listable).
            const profile_directory folder(geteuid() == 0);
            preload.run_dir = folder.path();
            if (r.profile) preload.profile_path = folder.path();
            program_run run;
            const auto started = std::chrono::steady_clock::now();
            run.status = run_preloaded(preload);
            run.wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
            const program_status& s = run.status;
            outcome.program_status = exit_code_of(s);
            if (s.start_error != 0) {
                std::fprintf(stderr, "contend run: cannot run %s: %s%s\n", program.c_str(),
                             std::strerror(s.start_error), recording ? "; nothing written" : "");
                outcome.start_failed = true;
                return outcome;
            }
            // A program killed by SIGPIPE (a closed pipe downstream: `contend run -- yes | head -1`)
            // is not news, as a shell does not print it either.
            if (s.signalled && s.value != SIGPIPE)
                std::fprintf(stderr, "contend run: %s was killed by signal %d (%s)\n", program.c_str(), s.value,
                             strsignal(s.value));
            const run_markers markers = read_run_markers(folder.path());
            run.not_interposed = interposition_problem(markers, r.locks[i], program, library_);
            if (!run.not_interposed.empty()) {
                std::fprintf(stderr, "contend run: %s\n", run.not_interposed.c_str());
                outcome.not_interposed = outcome.program_status == 0;
            }
            if (r.profile) run.profile = read_program_profile(folder, markers, program, s.pid, run.processes_lost);
            outcome.profile_incomplete = outcome.profile_incomplete || run.processes_lost > 0;
            runs[i].push_back(std::move(run));
        }
    }
    if (!recording) return outcome;

    for (std::size_t i = 0; i < r.locks.size(); ++i)
        if (!runs[i].empty()) record.cells.push_back(run_cell({r.argv, r.locks[i], r.profile, std::move(runs[i])}));
    const std::atomic<int>* stop = r.stop;
    const bool stopped_before = stop && stop->load() != 0;
    const results_written written = write_results(outputs_, record, stopped_before ? nullptr : stop);
    for (const auto& w : written.wrote) std::fprintf(stderr, "contend run: wrote %s\n", w.c_str());
    for (const auto& f : written.failed) std::fprintf(stderr, "contend run: could not write %s\n", f.c_str());
    outcome.write_failed = !written.failed.empty();
    if (stop && !stopped_before) outcome.stopped_by = stop->load();
    return outcome;
}

}  // namespace contend::lab
