// The interposition library as a program's environment sees it: which locks it offers, where
// the library is, and the environment that preloads it. `contend run` (run/preload_run.hpp)
// and the programs suite (suites/programs.cpp) start programs with it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace contend::lab {

// The locks a preloaded program's normal mutexes can run on, as CONTEND_INTERPOSE_LOCK names
// them, read from the library's own list (src/interpose/interpose_locks.hpp). `glibc` keeps
// glibc's mutex (interposed for profiling only).
struct interpose_lock {
    std::string name;  // the lab's contender name for the same lock type
    std::string alias;  // an older name also accepted, or ""
    std::string description;
};
const std::vector<interpose_lock>& interpose_locks();
// Their names, in the list's order.
const std::vector<std::string>& interpose_lock_names();
// The name of the lock `given` names by its name or its alias; "" when none does.
std::string interpose_lock_named(std::string_view given);

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

// The environment of a program run with the library preloaded: this process's, with
// LD_PRELOAD (preload_value) and the library's settings replaced: CONTEND_INTERPOSE_LOCK
// (the lock `lock` names, by name or alias), and CONTEND_INTERPOSE_PROFILE and
// CONTEND_INTERPOSE_RUN_DIR when given (non-empty).
std::vector<std::string> preloaded_environment(std::string_view library, std::string_view lock,
                                               const std::string& profile_path = {}, const std::string& run_dir = {});

}  // namespace contend::lab
