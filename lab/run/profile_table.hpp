// `contend run --profile`: the profiles of a program's processes merged into one, and the
// table printed at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "run/profile_files.hpp"

namespace contend::lab {

// The program's processes together: totals summed, seconds the longest process's, every
// lock kept apart by (pid, address), sorted by total wait (then contentions, pid, address).
struct program_profile {
    std::int64_t main_pid = 0;  // the program contend started (0: unknown)
    std::size_t processes = 0;
    // Processes whose profile is missing (a `.running` marker left) or could not be read; set
    // by the caller, printed in the table's header.
    std::size_t processes_lost = 0;
    std::string executable;  // the main process's, else the first file's
    std::vector<std::string> locks_named;  // each distinct "lock" of the files
    std::vector<std::uint64_t> hold_sample_periods;  // each distinct period
    std::vector<std::uint64_t> stack_sample_periods;  // each distinct one, of the files that sampled stacks
    double seconds = 0;
    std::uint64_t acquisitions = 0, contended = 0, trylock_busy = 0, timeouts = 0, wait_ns = 0, locks_dropped = 0;
    std::uint64_t read_acquisitions = 0, write_acquisitions = 0;  // the rwlocks', within acquisitions
    std::vector<lock_profile> locks;

    // Contended acquisitions per second (the bench suites' contentions_per_second); NaN when
    // seconds is 0.
    double contentions_per_second() const;
};
program_profile merge_profiles(const std::vector<process_profile>& processes, std::int64_t main_pid = 0);

// The table printed at exit: a header for the program, the `top` locks by contended wait
// (a rwlock's with a second line, its reads and writes apart), and a line for the rest. A
// program that took no rwlock gets the table it got before rwlocks were profiled.
std::string profile_table(const program_profile& profile, std::size_t top = 20);

}  // namespace contend::lab
