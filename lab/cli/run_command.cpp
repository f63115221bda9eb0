// contend run: a program with its pthread mutexes on contend's locks (run/preload_run.hpp).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "run/preload_run.hpp"

namespace contend::lab::cli {
namespace {

struct run_args {
    preload_request request;
};

std::string lock_help() {
    std::string list;
    for (const auto& n : interpose_lock_names()) list += (list.empty() ? "" : ", ") + n;
    return "The lock for the program's normal mutexes: " + list + " (glibc: glibc's own, for comparison)";
}

int run_program(preload_request request) {
    request.library = find_interpose_library();
    const program_status s = run_preloaded(request);
    const char* program = request.argv.front().c_str();
    if (s.start_error != 0)
        std::fprintf(stderr, "contend run: cannot run %s: %s\n", program, std::strerror(s.start_error));
    else if (s.signalled)
        std::fprintf(stderr, "contend run: %s was killed by signal %d (%s)\n", program, s.value, strsignal(s.value));
    return exit_code_of(s);
}

}  // namespace

command add_run(CLI::App& app) {
    auto a = std::make_shared<run_args>();
    auto* run = app.add_subcommand(
        "run", "Run a program with contend's locks in place of its pthread mutexes (preloaded; no recompiling)");
    run->footer(
        "Exit status: the program's own; 128+N if a signal N killed it; 127 if it was not found, 126 if it could not "
        "be executed; 2 for bad arguments.\nExample: contend run --lock glibc -- sysbench mutex --threads=8 run");
    run->add_option("--lock", a->request.lock, lock_help())->capture_default_str();
    run->add_option("program", a->request.argv, "The program and its arguments, after --")->required();
    return {run, [a] { return run_program(a->request); }};
}

}  // namespace contend::lab::cli
