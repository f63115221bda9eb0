// The gate thread: once per sample interval it feeds the hill climber, and every 500 ms it
// checks for starvation, as .NET's gate thread does (see docs/references.md,
// dotnet-runtime-portable-thread-pool): if items are queued and none has completed since
// the last check, the running items are blocked (on I/O, a lock, each other) and waiting
// for the climber would take too long, so it raises the goal by one thread at once.
#include <algorithm>
#include <chrono>

#include "pool/pool_core.hpp"

namespace contend::internal {
namespace {

constexpr auto starvation_period = std::chrono::milliseconds(500);

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
    auto last = clock::now();
    std::uint64_t last_completed = completed_sum();
    std::uint64_t starvation_mark = last_completed;
    auto next_starvation_check = last + starvation_period;

    while (!gate_stop.wait_for(hill_climber::sample_interval)) {
        const auto now = clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        const std::uint64_t completed = completed_sum();
        const bool waiting = queued() > 0;
        if (climber_reset.exchange(false, std::memory_order_relaxed)) climber.reset();

        if (options.hill_climbing) {
            const auto d = climber.update(goal.load(std::memory_order_relaxed), seconds, completed - last_completed,
                                          waiting, min_threads.load(std::memory_order_relaxed),
                                          max_threads.load(std::memory_order_relaxed));
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
