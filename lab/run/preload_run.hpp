// `contend run`: a program run with contend's pthread interposition library preloaded
// (src/interpose/, docs/interpose.md). The CLI parses arguments into a preload_request and
// turns the program_status into its own exit status; tests call the same functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "os/interpose_library.hpp"

namespace contend::lab {

struct preload_request {
    std::vector<std::string> argv;  // the program and its arguments; argv[0] is looked up in PATH
    std::string lock = "contend_mutex";  // a name or an alias (interpose_lock_named)
    std::string library;  // the interposition library, an absolute path
    std::string profile_path;  // empty: no profile; else where the library writes it at exit
    // empty: none; else where the library leaves its marker at load (read_run_markers in
    // run/profile_files.hpp)
    std::string run_dir;
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

// What the loader will make of a program file, read from its ELF headers before it runs.
// refusal: why the library would never be loaded into it, or "": a static executable (no
// PT_INTERP: the loader that reads LD_PRELOAD never runs), a set-user-ID or set-group-ID
// file that changes our IDs, or a file with capabilities (the loader's secure mode ignores
// LD_PRELOAD paths). c11_locks: the C11 mtx_* and cnd_* functions its dynamic symbols import
// (glibc runs them on its internal mutex functions, which nothing can interpose). A file that
// is not a 64-bit ELF (a script) is neither.
struct program_file_check {
    std::string refusal;
    std::vector<std::string> c11_locks;
};
program_file_check check_program_file(const std::string& path);

// Runs the program with the library preloaded and waits for it. Its standard streams are
// ours. Every catchable signal sent to us while it runs (SIGCHLD and the fault signals but)
// is passed on to it; one the kernel sent (the terminal's ^C, ^Z, hangup) reached it already,
// as a member of the foreground group, and is not sent twice. A stop signal stops it, then
// us. A signal we were started with ignored stays ignored, for it and here. Throws std::invalid_argument for a bad
// request (an unknown lock, no program, a library path that is not absolute) and std::system_error when the child could
// not be made; a program that cannot be executed comes back as start_error.
program_status run_preloaded(const preload_request& request);

// The shell's convention, which `contend run` follows (as env and timeout do): the status a
// program exited with, 128 + N for one killed by signal N, 127 for a program not found and
// 126 for one found but not executable.
int exit_code_of(const program_status& status) noexcept;

}  // namespace contend::lab
