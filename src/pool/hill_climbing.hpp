// Hill climbing: how many workers the pool lets run, chosen from the completion rate it
// observes. Internal to the pool.
//
// .NET's portable thread pool climbs by injecting a small sine wave into the thread count
// and reading the response out of the throughput with a Fourier transform, which needs many
// samples and separates signal from noise statistically (see docs/references.md,
// dotnet-runtime-portable-thread-pool). This one is a plain probe-and-compare climber,
// simpler to reason about and to test, with .NET's limits where they carry over:
//
//   - A sample is the completions over one gate-thread tick (sample_interval, 100 ms here,
//     within .NET's 10-200 ms random sample interval). The first sample after a change, and
//     the pool's first, is discarded: threads were starting or retiring during it.
//   - When work is waiting in the queues, it probes one thread up; when none is, one down
//     (a pool that keeps up with fewer threads should run fewer).
//   - A probe up is kept only if throughput rose by more than min_gain (10 %, below .NET's
//     15 % MaxSampleErrorPercent since each of our samples already averages 100 ms); a probe
//     down is kept unless throughput fell by more than min_gain. A probe that loses is
//     reverted and the climber rests for cooldown_samples before probing again, doubling the
//     rest after each consecutive loss (up to 32 samples) so a saturated pool stops
//     probing almost entirely.
//   - At most max_change_per_second (4, .NET's MaxChangePerSecond) moves a second.
//   - At or above the number of CPUs the process may use, throughput alone is a poor guide:
//     a probe up on CPU-bound work can only share the same CPUs among more threads, and
//     its sample differs from the last by noise more often than by 10 %, so a noisy sample
//     keeps the probe (docs/design/pool.md). So there the climber also asks whether the
//     workers were blocked: a worker that is neither running nor waiting for a CPU (in a
//     system call, a sleep, a lock) is one a further thread can work beside. When fewer than half a
//     worker, on average over the sample, was blocked (outside blocking_scopes, which add
//     their own threads), the workers are CPU-bound: no probe up, and above the CPU count
//     a probe down even while work waits (kept unless throughput falls by more than
//     min_gain), so a goal that a noisy sample carried past the CPUs comes back. When the
//     gate thread cannot tell (no per-thread scheduler statistics), the rule is off.
//   - Work counts as waiting only if no worker went idle during the sample (the gate
//     thread's reading): an item queued at the tick of an idle pool (an event loop's next
//     turn) is no shortage of threads, and a probe made then would be kept if load began
//     during it (docs/design/pool.md has the trace).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace contend::internal {

class hill_climber {
public:
    static constexpr auto sample_interval = std::chrono::milliseconds(100);
    static constexpr double min_gain = 0.10;
    static constexpr int cooldown_samples = 2;
    static constexpr int max_cooldown_samples = 32;
    static constexpr double max_change_per_second = 4;

    enum class move { none, probe_up, probe_down, keep, revert };

    // Below this many blocked workers (average over a sample) the workers are CPU-bound.
    static constexpr double min_blocked_workers = 0.5;

    // What the gate thread saw of the CPUs over the sample.
    struct cpu_view {
        std::size_t cpus = 0;  // CPUs this process may run on; 0: unknown
        double blocked_workers = -1;  // average workers blocked (not running nor runnable); < 0: unknown
        bool known() const noexcept { return cpus > 0 && blocked_workers >= 0; }
    };

    struct decision {
        std::size_t goal;  // the new thread goal
        move what;
        double throughput;  // completions per second in this sample
    };

    // One sample: `completions` finished in `seconds` with `goal` workers allowed to run.
    // work_waiting: items sat in a queue at the end of the sample, and no worker went idle
    // during it (the gate thread's reading: a pool with a sleeping worker is not short of
    // threads, whatever an instant's look at the queues shows). cpu: see the top of the
    // file; without it (unknown), throughput and work_waiting decide alone.
    decision update(std::size_t goal, double seconds, std::uint64_t completions, bool work_waiting,
                    std::size_t min_threads, std::size_t max_threads, cpu_view cpu);
    decision update(std::size_t goal, double seconds, std::uint64_t completions, bool work_waiting,
                    std::size_t min_threads, std::size_t max_threads) {
        return update(goal, seconds, completions, work_waiting, min_threads, max_threads, cpu_view{});
    }

    // The goal was changed by someone else (starvation injection, set_min/max_threads):
    // forget the pending probe, measure afresh.
    void reset() noexcept;

private:
    bool probing_ = false;  // a move is being measured
    bool discard_next_ = true;  // the sample right after a move, or after the start (workers were starting)
    std::size_t from_goal_ = 0;  // the goal before the move
    double from_throughput_ = 0;
    int rest_ = 0;  // samples to wait before the next probe
    int losses_ = 0;  // consecutive reverted probes
    double since_last_move_ = 0;  // seconds
};

}  // namespace contend::internal
