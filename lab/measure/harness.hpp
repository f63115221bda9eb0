// The harness: runs one cell (a contender at a worker count) the way the sleeping-spinlock study (docs/references.md)
// says a contention benchmark must be run.
//  - Workers are created, pinned and counted outside the timed interval, then released
//    together from a parking start gate (never a spinning one: with 64 workers on 2 cores
//    a spinning gate starves the last arrival). The clock runs from the gate opening to
//    the last worker's finish.
//  - Calibration: the work per worker doubles (or more) until one repetition lasts at
//    least min_time; then `reps` timed repetitions (fewer when the spread is already small,
//    see harness_options), reported as median and quartiles.
//  - Every repetition checks the exact final count: a wrong count makes the cell invalid.
//  - Every repetition has a deadline: workers poll a stop flag, and a repetition that
//    misses its deadline marks the cell timed out. (A worker stuck inside lock() cannot
//    poll: run cells in a child process, see cell_runner.hpp, which the parent can kill.)
//  - Placement: each worker pins itself, reads its mask back, and a mismatch makes the
//    cell invalid. Fixed-width counters throughout.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "measure/cotenant.hpp"
#include "measure/placement.hpp"  // where the workers run (--pin); callers use it with the harness
#include "measure/workload.hpp"
#include "results/results.hpp"

namespace contend::lab {

struct harness_options {
    double min_time_s = 0.05;
    std::int32_t repetitions = 5;
    // Fewer repetitions when more would add little: after min_repetitions (and each later
    // one), a cell stops when its samples' interquartile range is at most spread_to_stop
    // times their median, or when its timed repetitions have lasted time_to_stop_s in all.
    // min_repetitions >= repetitions: always all of them.
    std::int32_t min_repetitions = 5;
    double spread_to_stop = 0.02;
    double time_to_stop_s = 1;
    double deadline_s = 20;
    // "none", "compact" (worker i on the i-th allowed CPU, wrapping), "spread" (workers
    // spaced evenly over the allowed CPUs), or a CPU list such as "0-3,8" (every worker
    // gets that whole set).
    std::string pin = "none";
    // What shares the machine with every cell (cotenant.hpp): one CPU, busy loops. A row of a
    // suite may carry its own busy loops (contender::cotenant), which then take precedence.
    cotenant_options cotenant;
    // The cell's own co-tenant processes while it runs (its busy loops, set by
    // run_cell_in_process): their CPU time is the cell's, not others'
    // (measure/machine_share.hpp).
    std::vector<pid_t> own_cotenants;
    // Which round this is, in a suite run in rounds (measure/rounds.hpp), from 0; 0 otherwise.
    // A cell that makes the same reference in every round can make it in the first only.
    std::int32_t round = 0;
    // Called after every repetition, calibration included (a child process uses it to
    // tell its parent it is still making progress).
    std::function<void()> on_repetition;
};

struct repetition_result {
    double wall_ns = 0;
    double cpu_ns = 0;  // sum of the workers' thread CPU time
    std::uint64_t completed = 0;  // operations the workers report
    std::vector<std::uint64_t> per_worker;  // each worker's completed operations
    check_result check;  // the workload's verdict on the repetition's work
    bool timed_out = false;
    bool affinity_ok = true;
    std::string affinity_detail;
    std::vector<std::uint64_t> progress_for_fairness;  // per worker (see run_repetition)
    double fairness_read_ns = 0;  // when progress_for_fairness was read, after the start
    std::int32_t not_started_at_reading = 0;  // workers that had not begun to run by then
};

// One repetition: `workers` threads, `ops_per_worker` each. Blocks until every worker has
// returned (so a worker that never polls makes it hang: that is what child processes are for).
//
// Fairness is read from the workers' published progress `fairness_at_s` after the start
// (0: not at a fixed time), or, when every worker has finished before then, at the moment
// the first one finished. Not at the first finish always: with a fixed number of
// operations per worker, a worker that holds a lock alone from the start finishes its
// 1/N of the work in 1/N of the repetition (0.8 ms of a 50 ms one with 64 workers), which
// makes every lock that does not rotate its owner within microseconds look starving.
repetition_result run_repetition(workload& w, std::int32_t workers, std::uint64_t ops_per_worker,
                                 const std::vector<std::vector<int>>& cpus, double deadline_s,
                                 double fairness_at_s = 0);

// When a timed repetition reads fairness: this fraction of --min-time after the start
// (every timed repetition runs the calibrated work, which lasted at least --min-time).
inline constexpr double fairness_window = 0.75;

// The fairness rule. A worker's share says how a lock served it only once the scheduler has
// run every worker: before that, a worker at 0 waited for a CPU, not for the lock (64
// workers on 2 CPUs read 37.5 ms in showed a least-served share of 0.00 for every lock,
// std::mutex included). So a cell's shares are reported only when, in every timed repetition,
//  - they were read at least fairness_needed_ns after the start: ceil(workers / CPUs)
//    scheduler slices, the time the scheduler takes to give each runnable worker one slice
//    when every worker is runnable; and
//  - every worker had begun to run by then (observed: each marks its start past the gate).
// Otherwise the shares are NaN and cell_result::fairness_reason says why. The slice is
// Linux's default minimum slice at 8 CPUs or more, 0.75 ms x (1 + log2 8) (CFS's
// sched_min_granularity, EEVDF's base_slice; 1.5 ms at 2 CPUs): the longest default, so
// that the rule needs no debugfs read and holds on any machine.
inline constexpr double scheduler_slice_ns = 3e6;
double fairness_needed_ns(std::int32_t workers, std::size_t cpus);

// What the timed repetitions of a cell say about its fairness reading: add() each
// repetition's reading (when, after the start; how many workers had not run by then), then
// reason() is "" when the shares may be reported and otherwise why not, in words, with the
// --min-time that would measure them when the planned reading comes too early. The same
// cause gives the same words, so that the table's footnote names it once.
struct fairness_evidence {
    double needed_ns;  // fairness_needed_ns of the cell
    double planned_ns;  // when a repetition reads the shares: fairness_window x --min-time
    std::int32_t repetitions = 0, read_early = 0, with_unstarted = 0, most_unstarted = 0;
    double earliest_ns = 0, unstarted_read_ns = 0;

    void add(double read_ns, std::int32_t not_started);
    std::string reason(std::int32_t workers, std::size_t cpus) const;
};

// Calibration rule: after a repetition of `ops` per worker took `wall_ns`, the next
// size to try, or 0 when `ops` is right. Too short: grow by the measured shortfall (plus
// 20 %), at least 2x and at most 16x per step, so a noisy first step cannot overshoot
// wildly. Long enough: done, unless it lasted more than calibration_overshoot times
// min_time and `may_shrink`: then shrink by the measured excess. Work that does not scale
// linearly (a FIFO lock whose waiters start being descheduled only in longer runs) can
// make a 16x step last a second where 50 ms were asked for, and every repetition after it
// would too. run_cell_in_process allows max_calibration_shrinks, so calibration always ends.
inline constexpr double calibration_overshoot = 3;
inline constexpr int max_calibration_shrinks = 2;
std::uint64_t next_calibration_ops(std::uint64_t ops, double wall_ns, double min_time_ns, bool may_shrink = true);

// Whether a calibration step that was long enough may have been a stall rather than the
// work, so that the same size runs once more before it is kept: the first step (nothing to
// compare it with), or one whose time per operation was over calibration_stall_factor times
// the step before's. Beside a nice-0 busy loop forked for the cell, the first step of 64
// chunks waited out the loop's first run and took the 50 ms minimum; the cell then measured
// 64 chunks a repetition, each landing on one of the loop's 4 ms slices: 40 to 140 us a chunk
// against 2 (the pipe on one CPU, `--interleave`, Intel Xeon VM). A second step of the
// same size that is long enough too is kept; one repeat per calibration at most.
inline constexpr double calibration_stall_factor = 4;
bool calibration_step_suspect(double previous_ns_per_op, double ns_per_op);

// A cell of contender `c` at `workers`, before anything is measured: its suite, contender,
// parameters, worker count and operation filled in. run_cell_in_process and a contender's own
// measure_cell start from it, so every cell names itself the same way.
cell_result new_cell(const contender& c, const std::string& suite, std::int32_t workers);

// A cell that was never measured (refused before its workers ran, or skipped): new_cell named
// as run_cell_in_process names a cell, with the parameters of the run's co-tenant `run`
// (added_cotenant_params), and `status` and `detail` saying why.
cell_result unmeasured_cell(const contender& c, const std::string& suite, std::int32_t workers,
                            const cotenant_options& run, std::string status, std::string detail);

// Sets the cell's median, quartiles and modal flag from its samples (ns_per_op), as every cell
// reports them: run_cell_in_process, a contender's own measure_cell, and rows merged from rounds.
void summarize_samples(cell_result& cell);

// Calibrates and runs one cell in this process (run_cell_in_child, run/cell_runner.hpp, runs
// it in a child process that the parent can kill).
cell_result run_cell_in_process(const contender& c, const std::string& suite, std::int32_t workers,
                                const harness_options& options);

}  // namespace contend::lab
