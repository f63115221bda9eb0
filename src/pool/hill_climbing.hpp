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
//     within .NET's 10-200 ms random sample interval). The first sample after a change is
//     discarded: threads were starting or retiring during it.
//   - When work is waiting in the queues, it probes one thread up; when none is, one down
//     (a pool that keeps up with fewer threads should run fewer).
//   - A probe up is kept only if throughput rose by more than min_gain (10 %, below .NET's
//     15 % MaxSampleErrorPercent since each of our samples already averages 100 ms); a probe
//     down is kept unless throughput fell by more than min_gain. A probe that loses is
//     reverted and the climber rests for cooldown_samples before probing again, doubling the
//     rest after each consecutive loss (up to 32 samples) so a saturated pool stops
//     probing almost entirely.
//   - At most max_change_per_second (4, .NET's MaxChangePerSecond) moves a second.
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

    struct decision {
        std::size_t goal;  // the new thread goal
        move what;
        double throughput;  // completions per second in this sample
    };

    // One sample: `completions` finished in `seconds` with `goal` workers allowed to run.
    // work_waiting: items sat in a queue at the end of the sample.
    decision update(std::size_t goal, double seconds, std::uint64_t completions, bool work_waiting,
                    std::size_t min_threads, std::size_t max_threads);

    // The goal was changed by someone else (starvation injection, set_min/max_threads):
    // forget the pending probe, measure afresh.
    void reset() noexcept;

private:
    bool probing_ = false;  // a move is being measured
    bool discard_next_ = false;  // the sample right after a move
    std::size_t from_goal_ = 0;  // the goal before the move
    double from_throughput_ = 0;
    int rest_ = 0;  // samples to wait before the next probe
    int losses_ = 0;  // consecutive reverted probes
    double since_last_move_ = 0;  // seconds
};

}  // namespace contend::internal
