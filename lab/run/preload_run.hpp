// `contend run`: a program run with contend's pthread interposition library preloaded
// (src/interpose/, docs/interpose.md). The CLI parses arguments into a preload_request and
// turns the program_status into its own exit status; tests call the same functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace contend::lab {

// The locks a preloaded program's normal mutexes can run on: what CONTEND_INTERPOSE_LOCK
// accepts. `glibc` keeps glibc's mutex (interposed for profiling only).
const std::vector<std::string>& interpose_lock_names();

struct preload_request {
    std::vector<std::string> argv;  // the program and its arguments; argv[0] is looked up in PATH
    std::string lock = "contend_mutex";
    std::string library;  // the interposition library, an absolute path
    std::string profile_path;  // empty: no profile; else where the library writes it at exit
};

// How the program ended, or why it never started.
struct program_status {
    int start_error = 0;  // errno of the exec that failed (ENOENT: no such program), or 0
    bool signalled = false;  // killed by a signal (value), else exited with status `value`
    int value = 0;
    int pid = 0;  // the program's process id (0 when it never started)
    // CPU time of the program and of the children it waited for, user and system, in ns.
    double cpu_ns = 0;
};

// Where the interposition library is: $CONTEND_INTERPOSE_LIBRARY if set; else beside this
// executable's installation (<prefix>/<libdir>/libcontend_interpose.so for
// <prefix>/bin/contend, libdir as configured: lib, or lib/x86_64-linux-gnu under /usr);
// else the build tree's copy. Throws std::runtime_error naming the places looked at.
std::string find_interpose_library();

// LD_PRELOAD for the child: whatever the caller's LD_PRELOAD held, then the library,
// separated by a space as ld.so reads it. After, not before: a sanitizer's runtime must stay
// first (ASan refuses to start otherwise), and the library still comes before glibc, which
// is all that interposing needs.
std::string preload_value(std::string_view library, const char* inherited);

// Runs the program with the library preloaded and waits for it. Its standard streams are
// ours. SIGINT and SIGQUIT reach it from the terminal, as they reach every process of the
// foreground group, and are ignored here while it runs (as system() does); SIGTERM and SIGHUP
// sent to us are passed on to it. Throws std::invalid_argument for a bad request (an unknown
// lock, no program, a library path that is not absolute) and std::system_error when the
// child could not be made; a program that cannot be executed comes back as start_error.
program_status run_preloaded(const preload_request& request);

// The shell's convention, which `contend run` follows (as env and timeout do): the status a
// program exited with, 128 + N for one killed by signal N, 127 for a program not found and
// 126 for one found but not executable.
int exit_code_of(const program_status& status) noexcept;

}  // namespace contend::lab
