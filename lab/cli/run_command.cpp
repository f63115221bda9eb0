// contend run: a program with its pthread mutexes on contend's locks (run/preload_run.hpp),
// profiled per lock with --profile (run/run_profile.hpp), recorded as one row of the lab's
// results with --json, --csv or --db.
#include <unistd.h>

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
    bool profile = false;
    std::string json_path, csv_path, db_path, label;
};

std::string lock_help() {
    std::string list;
    for (const auto& n : interpose_lock_names()) list += (list.empty() ? "" : ", ") + n;
    return "The lock for the program's normal mutexes: " + list + " (glibc: glibc's own, for comparison)";
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

int run_program(const CLI::App& run, run_args& a) {
    preload_request& request = a.request;
    if (request.argv.empty() || request.argv.front().empty())
        throw std::invalid_argument("no program to run (after --)");
    if (!is_printable_utf8(a.label))
        throw std::invalid_argument("--label: the label must be printable UTF-8 (no control characters)");
    const results_outputs outputs = checked_outputs(run, a);
    const bool recording = outputs.json_path || !outputs.csv_path.empty() || !outputs.db_path.empty();
    request.library = find_interpose_library();
    run_result record;
    if (recording) record.context = read_machine_context(a.label, format_cpu_list(allowed_cpus()));

    std::optional<profile_directory> folder;
    if (a.profile) {
        folder.emplace();
        request.profile_path = folder->path();
    }
    const auto started = std::chrono::steady_clock::now();
    const program_status s = run_preloaded(request);
    const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    const std::string program = message_text(request.argv.front());
    if (s.start_error != 0) {
        std::fprintf(stderr, "contend run: cannot run %s: %s%s\n", program.c_str(), std::strerror(s.start_error),
                     recording ? "; nothing written" : "");
        return exit_code_of(s);
    }
    if (s.signalled)
        std::fprintf(stderr, "contend run: %s was killed by signal %d (%s)\n", program.c_str(), s.value,
                     strsignal(s.value));

    std::optional<program_profile> profile;
    if (folder) {
        const profile_folder read = read_profile_folder(folder->path());
        for (const auto& e : read.errors) std::fprintf(stderr, "contend run: a profile was not read: %s\n", e.c_str());
        if (!read.processes.empty()) {
            profile = merge_profiles(read.processes, s.pid);
            for (const auto& f : symbolize_sites(*profile))
                std::fprintf(stderr, "contend run: sites not symbolized: %s\n", f.c_str());
            std::cerr << profile_table(*profile);
        } else if (read.errors.empty()) {
            std::fprintf(stderr,
                         "contend run: no profile was written: no process of %s locked an interposed mutex, or each "
                         "ended without exit() (killed by a signal, or through _exit)\n",
                         program.c_str());
        }
    }

    const int code = exit_code_of(s);
    if (!recording) return code;
    record.cells.push_back(
        run_cell({request.argv, request.lock, a.profile, s, wall_ns, profile ? &*profile : nullptr}));
    const bench_written written = write_results(outputs, record);
    for (const auto& w : written.wrote) std::fprintf(stderr, "contend run: wrote %s\n", w.c_str());
    for (const auto& f : written.failed) std::fprintf(stderr, "contend run: could not write %s\n", f.c_str());
    // The program's failure came first and decides; a run that passed but was not recorded
    // must not read as a success.
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
        "be executed; 2 for bad arguments (nothing run); 4 when the program exited 0 but a result could not be "
        "written.\nExample: contend run --lock glibc --profile -- sysbench mutex --threads=8 run");
    run->add_option("--lock", a->request.lock, lock_help())->capture_default_str();
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
