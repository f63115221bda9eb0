// run_suite: one `contend bench` run as a library call. The CLI parses arguments into
// bench_options and prints what comes back; tests call the same functions directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "results/results.hpp"
#include "suites/suites.hpp"

namespace contend::lab {

struct bench_options {
    std::string suite = "counter";
    std::string contenders = "*";  // globs, comma-separated, on a contender's name or id
    std::vector<std::int32_t> workers;  // empty: the suite's default worker counts
    harness_options harness;  // min_time_s, repetitions, deadline_s, pin
    std::string label;  // empty: git describe of the source tree
    bool in_process = false;  // run cells in this process (no protection against hangs)
    // A contender that timed out at some worker count is not run at larger counts in the
    // same run: its cells there are recorded as "skipped", with the reason. true: run every
    // cell anyway (contend bench --full).
    bool run_after_timeout = false;
    // Run every suite's repetitions in rounds, one of every chosen row per round, as the
    // server suite always does (measure/rounds.hpp): rows that are compared then sample the
    // same stretches of a VM whose speed drifts (contend bench --interleave).
    bool interleave = false;
    std::string executable;  // runs a cell as `<executable> __cell`; empty: this program
    // Before each cell, wait up to this many seconds for the cell's CPUs to be quiet (others
    // at most shared_above, results.hpp; measure/machine_share.hpp); 0: do not wait.
    double wait_quiet_s = 0;
};

inline constexpr std::int32_t max_workers = 4096;

// The cells a run will measure, in order: every chosen contender at the first worker
// count, then at the next.
struct bench_plan {
    const suite* chosen_suite = nullptr;
    std::vector<const contender*> contenders;
    std::vector<std::int32_t> workers;
    std::size_t cell_count() const { return contenders.size() * workers.size(); }
};

// Checks everything that can be checked before the first cell, and throws
// std::invalid_argument saying what is wrong: an unknown suite, globs that match no
// contender, worker counts out of 1..4096 or repeated, a repetition time or deadline
// that is not a positive finite number, a repetition count out of 1..1000, a pin mode or
// CPU list this process cannot use, a co-tenant out of range or with a nice level this
// process may not give, --one-cpu with a pin, a label that is not printable UTF-8. With the
// run's own busy loops, the suite's busy-loop rows are left out of the plan.
bench_plan plan_suite(const bench_options& options);

struct run_hooks {
    // Called before each cell: cells done so far, cells in all, the row it starts.
    std::function<void(std::size_t done, std::size_t total, const std::string& row)> on_cell;
    // Non-zero (a signal number) when the run must end early: the cell in progress is
    // abandoned (its process killed) and the run comes back with the cells already done,
    // its context's run_status saying so.
    const std::atomic<int>* stop = nullptr;
    // Called when --wait-quiet waited its whole time before a cell and the CPUs never were
    // quiet: the row, the time waited and what others took in the last look (0 to 1).
    std::function<void(const std::string& row, double waited_s, double share)> on_not_quiet;
};

// Plans (throwing as plan_suite does), then measures every cell: each in its own process
// unless in_process, with one work-loop rate for all of them. Cells of a contender that
// timed out at fewer workers are skipped (see bench_options::run_after_timeout).
run_result run_suite(const bench_options& options, const run_hooks& hooks = {});

// This program's own path (for `__cell` children and `contend disasm`).
std::string self_executable();

}  // namespace contend::lab
