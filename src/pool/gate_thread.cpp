// The gate thread: once per sample interval it feeds the hill climber, and every 500 ms it
// checks for starvation, as .NET's gate thread does (see docs/references.md,
// dotnet-runtime-portable-thread-pool): if items are queued and none has completed since
// the last check, the running items are blocked (on I/O, a lock, each other) and waiting
// for the climber would take too long, so it raises the goal by one thread at once.
//
// Besides the completions, it gives the climber two readings of its own: whether a worker
// went idle during the sample (then work did not really wait, whatever the queues held at
// the tick), and how many workers were blocked rather than running or waiting for a CPU,
// from Linux's per-thread scheduler statistics (hill_climbing.hpp says what it does above
// the CPU count with them).
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "platform/yield.hpp"
#include "pool/pool_core.hpp"

namespace contend::internal {
namespace {

constexpr auto starvation_period = std::chrono::milliseconds(500);
// Reading a worker's scheduler statistics is a file read; past this many workers the CPU
// view is left unknown rather than costing the gate thread a file per worker per tick.
constexpr std::size_t max_metered_workers = 256;

// Nanoseconds a thread of this process has spent running or waiting for a CPU (the first two
// fields of Linux's /proc/<pid>/task/<tid>/schedstat), or false if unavailable.
bool runnable_ns(int tid, std::uint64_t& out) noexcept {
#ifdef __linux__
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char text[128];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) return false;
    text[n] = '\0';
    char* end = nullptr;
    const unsigned long long running = std::strtoull(text, &end, 10);
    if (end == text) return false;
    char* end2 = nullptr;
    const unsigned long long waiting = std::strtoull(end, &end2, 10);
    if (end2 == end) return false;
    out = running + waiting;
    return true;
#else
    (void)tid;
    (void)out;
    return false;
#endif
}

// The average number of workers that were blocked (neither running nor waiting for a CPU)
// between two calls, from each worker's scheduler statistics. Each worker's share is
// reckoned over the time between its own two readings, so a gate thread that was itself
// kept off a CPU between its tick and its readings does not skew it.
class blocked_meter {
public:
    // < 0: unknown (statistics unavailable, too many workers, or no worker seen twice). A
    // worker that cannot be read (it is exiting) or was not seen before is left out.
    double sample(const pool_core& core) {
        const std::size_t used = core.slots_used.load(std::memory_order_acquire);
        if (used > max_metered_workers) {
            last_.clear();
            return -1;
        }
        last_.resize(used);
        double blocked = 0;
        std::size_t measured = 0;
        for (std::size_t i = 0; i < used; ++i) {
            worker* w = core.slots[i].load(std::memory_order_acquire);
            const int tid = w != nullptr && w->alive.load(std::memory_order_relaxed)
                                ? w->os_tid.load(std::memory_order_relaxed)
                                : 0;
            std::uint64_t ns = 0;
            if (tid == 0 || !runnable_ns(tid, ns)) {
                last_[i] = {};
                continue;
            }
            const auto at = std::chrono::steady_clock::now();
            const reading& before = last_[i];
            if (before.tid == tid && ns >= before.runnable_ns && at > before.at) {
                const double wall = std::chrono::duration<double, std::nano>(at - before.at).count();
                blocked += std::clamp(1.0 - static_cast<double>(ns - before.runnable_ns) / wall, 0.0, 1.0);
                ++measured;
            }
            last_[i] = {tid, ns, at};
        }
        return measured == 0 ? -1 : blocked;
    }

private:
    struct reading {
        int tid = 0;
        std::uint64_t runnable_ns = 0;
        std::chrono::steady_clock::time_point at{};
    };
    std::vector<reading> last_;
};

const char* move_name(hill_climber::move m) noexcept {
    switch (m) {
        case hill_climber::move::probe_up:
        case hill_climber::move::probe_down:
            return "probe";
        case hill_climber::move::keep:
            return "climb";
        case hill_climber::move::revert:
            return "revert";
        case hill_climber::move::none:
            break;
    }
    return "";
}

}  // namespace

void pool_core::gate_main() {
    using clock = std::chrono::steady_clock;
    hill_climber climber;
    blocked_meter meter;
    auto last = clock::now();
    std::uint64_t last_completed = completed_sum();
    std::uint64_t last_sleeps = sleeps_sum();
    std::uint64_t starvation_mark = last_completed;
    auto next_starvation_check = last + starvation_period;

    while (!gate_stop.wait_for(hill_climber::sample_interval)) {
        const auto now = clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        const std::uint64_t completed = completed_sum();
        const bool waiting = queued() > 0;
        if (climber_reset.exchange(false, std::memory_order_relaxed)) climber.reset();

        // For the climber, work waits only if no worker had none meanwhile: a worker that
        // slept during the sample (or sleeps now) was one the pool did not need, and an item
        // seen queued at the tick (an event loop's next turn, posted as the last one ends)
        // says nothing about a shortage of threads. Without this, an idle server probes a
        // thread up and keeps it when load starting during the probe raises throughput.
        const std::uint64_t sleeps = sleeps_sum();
        const bool spare_worker = sleeps != last_sleeps || idle.size() > 0;
        last_sleeps = sleeps;
        if (options.hill_climbing) {
            hill_climber::cpu_view cpu;
            cpu.cpus = internal::allowed_cpu_count();
            cpu.blocked_workers = meter.sample(*this);
            // Workers inside a blocking_scope have their extra threads already.
            if (cpu.blocked_workers >= 0)
                cpu.blocked_workers =
                    std::max(0.0, cpu.blocked_workers - static_cast<double>(blocked.load(std::memory_order_relaxed)));
            const auto d = climber.update(goal.load(std::memory_order_relaxed), seconds, completed - last_completed,
                                          waiting && !spare_worker, min_threads.load(std::memory_order_relaxed),
                                          max_threads.load(std::memory_order_relaxed), cpu);
            last_throughput.store(d.throughput, std::memory_order_relaxed);
            if (d.goal != goal.load(std::memory_order_relaxed)) adjust_goal(d.goal, move_name(d.what), d.throughput);
        } else {
            last_throughput.store(seconds > 0 ? static_cast<double>(completed - last_completed) / seconds : 0,
                                  std::memory_order_relaxed);
        }

        if (now >= next_starvation_check) {
            if (waiting && completed == starvation_mark &&
                alive.load(std::memory_order_relaxed) < max_threads.load(std::memory_order_relaxed)) {
                starvation_injections.fetch_add(1, std::memory_order_relaxed);
                const std::size_t to =
                    std::min(std::max(goal.load(std::memory_order_relaxed), alive.load(std::memory_order_relaxed)) + 1,
                             max_threads.load(std::memory_order_relaxed));
                adjust_goal(to, "starvation", last_throughput.load(std::memory_order_relaxed));
                climber.reset();
            }
            starvation_mark = completed;
            next_starvation_check = now + starvation_period;
        }
        ensure_workers();
        last = now;
        last_completed = completed;
    }
}

}  // namespace contend::internal
