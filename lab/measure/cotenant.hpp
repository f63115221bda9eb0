// Co-tenants: what else shares the machine while a cell is measured. A figure from a quiet
// machine says little about a busy one, so a cell can be run
//  - on one CPU: every thread of the cell (the workers, and the threads and processes the
//    contender starts itself: a pool's workers, a pipe's reader, a server and wrk) restricted
//    to a single CPU, set on the thread that runs the cell before anything of it starts, so
//    that all of them inherit it;
//  - beside N busy loops: background processes, each a pure busy loop at a chosen nice level,
//    started before the cell's first repetition and killed and reaped after its last.
// Both are recorded in the run's context and in each row's parameters (cotenant_params), so
// that a busy or one-CPU row is a series of its own in the history and in compare.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "os/child_process.hpp"
#include "results/results.hpp"

namespace contend::lab {

inline constexpr std::int32_t max_busy_loops = 64;
inline constexpr std::int32_t default_busy_nice = 19;

struct cotenant_options {
    std::int32_t busy_loops = 0;  // background busy-loop processes, 0..max_busy_loops
    std::int32_t busy_nice = default_busy_nice;  // their nice level, -20..19
    bool one_cpu = false;  // every thread of the cell (busy loops included) on one CPU
    bool operator==(const cotenant_options&) const = default;
};

// Throws std::invalid_argument, saying what is wrong: a loop count outside 0..64, a nice
// level outside -20..19, or one this process may not give a child (a level below its own
// needs CAP_SYS_NICE or RLIMIT_NICE: a throwaway child tries it, so the answer is the
// kernel's own).
void check_cotenant(const cotenant_options& options);

// The row parameters that say how a cell ran: "one_cpu:yes", then "busy_loops:N" and
// "busy_nice:K" when there are busy loops. Empty for a quiet cell.
param_list cotenant_params(const cotenant_options& options);

// What a cell runs with: the row's own busy loops where it has some (a suite's busy-loop row),
// the run's otherwise; one CPU when either asks for it.
cotenant_options effective_cotenant(const cotenant_options& own, const cotenant_options& run);
// The parameters the run adds to a row whose own are `row_params`: those of
// cotenant_params(run) whose key the row does not carry already (a busy-loop row keeps its own).
param_list added_cotenant_params(const param_list& row_params, const cotenant_options& run);

// "2 busy loops at nice 19, on CPU 0", "none".
std::string describe_cotenant(std::int32_t busy_loops, std::int32_t busy_nice, std::int32_t one_cpu);

// The CPU --one-cpu runs a cell on: the first this process may use.
int one_cpu_choice();

// Restricts the calling thread to one_cpu_choice() for its lifetime, and so every thread and
// process the caller starts meanwhile (they inherit the mask); restores the mask it found.
// Throws std::runtime_error when the kernel refuses.
class one_cpu_scope {
public:
    one_cpu_scope();
    ~one_cpu_scope();
    one_cpu_scope(const one_cpu_scope&) = delete;
    one_cpu_scope& operator=(const one_cpu_scope&) = delete;
    int cpu() const { return cpu_; }

private:
    int cpu_ = 0;
    std::vector<int> saved_;
};

// `count` busy-loop processes at nice `nice`, forked by the constructor (each has set its
// nice level and reported before the constructor returns), killed with SIGKILL and reaped by
// the destructor. Each also ends by itself, never left running: when the thread that started
// it dies (PR_SET_PDEATHSIG, so a lab killed with SIGKILL takes them along), when its parent
// is no longer the process that started it, and after `max_seconds` in any case. Their name
// (/proc/PID/comm) is "contend_busy". Throws std::runtime_error, with none left running, when
// one cannot be started or cannot take its nice level.
class busy_loops {
public:
    busy_loops(std::int32_t count, std::int32_t nice, double max_seconds);
    ~busy_loops();
    busy_loops(const busy_loops&) = delete;
    busy_loops& operator=(const busy_loops&) = delete;
    const std::vector<pid_t>& pids() const { return pids_; }

private:
    void stop() noexcept;
    std::vector<child_process> children_;
    std::vector<pid_t> pids_;  // children_'s, while they run
};

}  // namespace contend::lab
