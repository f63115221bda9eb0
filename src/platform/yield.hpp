// How this build yields, polls and times out its tidying: the one place that knows whether
// the library runs on hardware or in the model-checking build (docs/design/model-checking.md),
// for everything a wait does besides the wait itself (platform/wait.hpp, one backend per
// build) and the clock (contend/internal/deadline.hpp). A primitive asks here, and does not
// know which build it is in.
//
// In the model-checking build one thread runs at a time, and the model's clock moves only when
// a thread yields (1 us) or a timed wait times out. So a yield is a scheduling point where the
// strategies prefer another thread, a pause of a poll is a yield, and a poll's budget is
// counted in those yields.
//
// Every yield of a spin or a crowd goes through yield_cpu(); a measurement of what
// sched_yield costs (spin_wait.cpp) calls sched_yield itself.
#pragma once

#include <sched.h>

#include <chrono>
#include <thread>

#if CONTEND_MODEL_CHECK
#include "contend/internal/model_atomic.hpp"
#endif

namespace contend::internal {

// Gives the CPU to another runnable thread: sched_yield, or in the model-checking build a
// scheduling point where the strategies prefer another thread.
inline void yield_cpu() noexcept {
#if CONTEND_MODEL_CHECK
    if (model::hooks::in_execution()) {
        model::hooks::point(model::step_kind::yield, nullptr);
        return;
    }
#endif
    sched_yield();
}

// A point where the model may run other threads, at `address`, before something it cannot
// see (a std::mutex taken outside the model). Nothing on hardware, where the OS may preempt a
// thread anywhere.
inline void preemption_point([[maybe_unused]] const void* address) noexcept {
#if CONTEND_MODEL_CHECK
    if (model::hooks::in_execution()) model::hooks::point(model::step_kind::fence, address);
#endif
}

// Whether every pause of a poll (platform/spin_wait.hpp) is a yield: in the model-checking
// build, where a pause that only relaxed would neither let the awaited thread run nor ever
// spend the budget (the poll would end only at the model's step bound).
#if CONTEND_MODEL_CHECK
inline constexpr bool every_pause_yields = true;
#else
inline constexpr bool every_pause_yields = false;
#endif

// A poll's budget: `on_hardware`, or in the model-checking build 2 us of model time: two
// pauses there (each a yield of 1 us), which reach both ends of a poll (the other side
// answers, or the budget runs out and the poller sleeps) in few steps; a longer poll only
// repeats the same look.
constexpr std::chrono::microseconds poll_budget(std::chrono::microseconds on_hardware) noexcept {
#if CONTEND_MODEL_CHECK
    (void)on_hardware;
    return std::chrono::microseconds(2);
#else
    return on_hardware;
#endif
}

// A timeout after which a sleeper only tidies up (a pool worker retires): `on_hardware`, or
// none in the model-checking build (the wait saturates to no deadline), so that a lost
// wake-up leaves the sleeper asleep for good, which the checker reports, instead of an item
// delayed until the sleeper's timeout.
template <class Rep, class Period>
constexpr std::chrono::duration<Rep, Period> tidy_up_after(std::chrono::duration<Rep, Period> on_hardware) noexcept {
#if CONTEND_MODEL_CHECK
    (void)on_hardware;
    return std::chrono::duration<Rep, Period>::max();
#else
    return on_hardware;
#endif
}

// The CPUs this process may run on (its affinity: taskset, cgroups' cpusets), at least 1; in
// the model-checking build always 2, so that what a primitive decides from it (when a crowd
// yields) is the same on every machine, and a schedule's spec replays anywhere. The checker
// runs each execution on one CPU of its own (src/model/explore.cpp).
inline unsigned allowed_cpu_count() noexcept {
#if CONTEND_MODEL_CHECK
    return 2;
#else
    int cpus = 0;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
    if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
    return cpus > 0 ? static_cast<unsigned>(cpus) : 1u;
#endif
}

}  // namespace contend::internal
