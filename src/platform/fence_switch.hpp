// A switch that lets one side's publications go without their full barrier while nobody waits
// for them, and the process-wide barrier that a waiter pays to put it back. Internal: the
// thread pool's posts (pool/pool_core.cpp, "Posts without the fence") and the pipe's flushes
// (pipe/pipe.cpp, "Flushes without the fence") use it; each file argues why its protocol
// holds with it.
//
// The protocol it serves: a publisher stores its word and then loads the waiter's flag; a
// waiter stores its flag and then loads the word. Lifted, the publisher stores without a full
// barrier (a compiler barrier in its place). The waiter, before it loads the word, calls
// restore(): the switch goes back down and heavy_fence() runs, so that every publisher either
// made its store visible already or will load the flag after it. Callers decide when to lift
// (a pool that stays saturated, a reader that keeps up); the switch bounds how often a
// restore can cost the barrier.
#pragma once

#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "platform/heavy_fence.hpp"

namespace contend::internal {

// Not lifted again sooner than this after the barrier that last put it back: at most a
// thousand barriers a second per switch, each an interrupt on every CPU that runs a thread of
// the program (a few microseconds each where that interrupt leaves a VM). A time, not a CPU's
// count: what it bounds is the kernel's work, the same on both CPU families. None in the
// model-checking build, so that its schedules lift and restore as often as they like.
#if CONTEND_MODEL_CHECK
inline constexpr std::chrono::nanoseconds fence_lift_hold_off{0};
#else
inline constexpr std::chrono::nanoseconds fence_lift_hold_off = std::chrono::milliseconds(1);
#endif

class fence_switch {
public:
    // Whether the publisher may leave its fence out now: read at every publication.
    bool lifted() const noexcept { return lifted_.load(std::memory_order_seq_cst); }

    // Lifts it, unless it is up or fence_lift_hold_off has not passed since the last restore.
    // Precondition: heavy_fence_available().
    void lift() noexcept {
        if (lifted_.load(std::memory_order_relaxed)) return;
        const auto since =
            clock::now().time_since_epoch() - clock::duration(restored_at_ns_.load(std::memory_order_relaxed));
        if (since < fence_lift_hold_off) return;
        lifted_.store(true, std::memory_order_seq_cst);
        lifts_.fetch_add(1, std::memory_order_relaxed);
    }

    // If lifted: puts it back and issues the process-wide barrier. A waiter calls it after
    // its flag's store and before it looks at the publication again.
    void restore() noexcept {
        if (!lifted_.load(std::memory_order_seq_cst)) return;
        lifted_.store(false, std::memory_order_seq_cst);
        heavy_fence();
        restored_at_ns_.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
        restores_.fetch_add(1, std::memory_order_relaxed);
    }

    std::uint64_t lifts() const noexcept { return lifts_.load(std::memory_order_relaxed); }
    std::uint64_t restores() const noexcept { return restores_.load(std::memory_order_relaxed); }

private:
    internal::atomic<bool> lifted_{false};
    internal::atomic<std::int64_t> restored_at_ns_{0};  // steady clock, ns since its epoch
    internal::atomic<std::uint64_t> lifts_{0};
    internal::atomic<std::uint64_t> restores_{0};
};

}  // namespace contend::internal
