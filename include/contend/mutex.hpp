// contend::mutex: a one-byte parking lock.
//
// Fast like a spin lock when uncontended or briefly contended, idle like a parked thread
// when the wait is long. After WebKit's WTF::Lock and Rust's parking_lot::RawMutex, with two
// changes: an unlock with nobody waiting is a plain release store (no second locked
// instruction), and while one woken waiter is on its way, further unlocks wake nobody.
//
// State byte:
//
//   | bit        | meaning                                                                |
//   |------------|------------------------------------------------------------------------|
//   | 0x01 HELD  | some thread owns the mutex                                             |
//   | 0x02 WAKING| a parked thread was woken and has not yet acquired or re-parked; while |
//   |            | it is set an unlock wakes nobody else (one syscall per wave of         |
//   |            | wake-ups, not one per unlock)                                          |
//
//   0x00 free, nobody on the way    0x01 held    0x02 free, a woken waiter is on its way
//   0x03 held, a woken waiter is on its way
//
// Whether threads are parked is not in the byte: parked threads are queued in
// contend::parking_lot under the mutex's address and counted in a waiter-registry slot
// (internal/waiter_registry.hpp); see src/mutex.cpp for why this is still race-free.
//
// Costs: lock() is one CAS when free. unlock() is a load, a release store and two loads of
// a read-mostly slot when nobody waits. A contended lock() spins briefly (see
// set_spin_limit), then parks. Fairness: barging is allowed (throughput), but an unlock
// that wakes a thread hands the mutex directly to it when the parking lot's randomized
// per-bucket deadline (at most about 1 ms) has passed, so no parked waiter starves.
// unlock_fairly() always hands off.
//
// Not recursive. Unlocking a mutex that is not held throws synchronization_error and
// leaves the mutex as it was. (Ownership is not tracked: one byte has no room for an owner,
// so a thread unlocking a mutex another thread holds is not detected.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "contend/internal/deadline.hpp"
#include "contend/internal/waiter_registry.hpp"

namespace contend {

class mutex {
public:
    constexpr mutex() noexcept = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    void lock() {
        std::uint8_t expected = 0;
        if (!state_.compare_exchange_strong(expected, held_bit, std::memory_order_acquire,
                                            std::memory_order_relaxed)) [[unlikely]]
            lock_slow(internal::no_deadline);
    }

    // One attempt; never spins or parks. May fail spuriously only if the byte changed
    // between load and CAS (another thread took or released the mutex).
    bool try_lock() noexcept {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        while (!(s & held_bit)) {
            if (state_.compare_exchange_weak(s, s | held_bit, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    // Blocks at most until the deadline. Returns whether the mutex was acquired.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock() || lock_slow(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock() || lock_slow(internal::to_deadline(t));
    }

    // Throws synchronization_error if the mutex is not held.
    void unlock() {
        const std::size_t slot = internal::waiter_slot_index(this);
        if (state_.load(std::memory_order_relaxed) == held_bit &&
            internal::waiter_slots[slot].load(std::memory_order_relaxed) == internal::waiter_slot_light) [[likely]] {
            state_.store(0, std::memory_order_release);
            // Only the compiler must not move the load above the store; the hardware
            // ordering is supplied by the registering waiter's heavy barrier.
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (internal::waiter_slots[slot].load(std::memory_order_relaxed) != internal::waiter_slot_light) [[unlikely]]
                wake_after_release();
            return;
        }
        unlock_slow(false);
    }

    // Like unlock(), but if a thread is parked, the mutex passes directly to it: no other
    // thread can barge in between. Costs a wake-up the holder pays for.
    void unlock_fairly() { unlock_slow(true); }

    // True if some thread holds the mutex (a snapshot, for assertions and diagnostics).
    bool is_locked() const noexcept { return state_.load(std::memory_order_relaxed) & held_bit; }

    // Rounds of spinning a contended lock() does before it parks. Default 10: after Rust
    // parking_lot's SpinWait (3 rounds of 2^n pauses, then yields, 10 rounds in all); WTF
    // spins 40 yields. Measured on the 2-core reference VM (bench/lock_bench, env
    // CONTEND_MUTEX_SPIN): 4 rounds made the 2-thread counter 2.4x slower; 20 and 40 were
    // within run-to-run noise of 10, so we keep the smaller CPU burn.
    static void set_spin_limit(std::uint32_t rounds) noexcept;
    static std::uint32_t spin_limit() noexcept;

    static constexpr std::uint8_t held_bit = 0x01;
    static constexpr std::uint8_t waking_bit = 0x02;

private:
    bool lock_slow(internal::deadline until);
    void unlock_slow(bool fair);
    void wake_after_release() noexcept;

    std::atomic<std::uint8_t> state_{0};
};

static_assert(sizeof(mutex) == 1);

// Acquisitions, process-wide, that found a mutex (contend::mutex or a primitive built on
// it) held and had to wait: the "lock contentions" figure seed 002 reports per second.
// Counted only on the slow path, in per-thread stripes summed here, so the fast path
// touches no shared counter.
std::uint64_t lock_contention_count() noexcept;

}  // namespace contend
