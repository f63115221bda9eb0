// contend::mutex: a one-byte parking lock.
//
// Fast like a spin lock when uncontended or briefly contended, idle like a parked thread
// when the wait is long. After WebKit's WTF::Lock and Rust's parking_lot::RawMutex, with two
// changes. An unlock with nobody waiting is a plain release store (no second locked
// instruction). And under contention one waiter, the designee, stays awake in turns (it
// naps about 100 us, probes, naps again, as the sleeping lock of the sleeping-spinlock study
// does; see docs/references.md, sleeping-spinlock-study) while the rest sleep in a FIFO
// queue, so the holder also unlocks with a plain store and no wake-up: a contended mutex
// runs at nearly uncontended speed, and only one waiter polls.
//
// State byte:
//
//   | bit                 | meaning                                                       |
//   |---------------------|---------------------------------------------------------------|
//   | 0x01 HELD           | some thread owns the mutex                                    |
//   | 0x02 WAKING         | a designee exists: it retries by itself, so an unlock need    |
//   |                     | wake nobody. Cleared only by the thread that takes the mutex  |
//   |                     | from free or holds it, which is what lets a holder release   |
//   |                     | HELD|WAKING with a plain store (src/mutex.cpp)                |
//   | 0x04 HANDOFF_REQUEST| the designee has waited its patience (1 ms): the next unlock |
//   |                     | hands the mutex over (to a timed waiter first, else to it)    |
//
// Whether other threads are parked is not in the byte: they are queued in
// contend::parking_lot under keys derived from the mutex's address (src/parking_keys.hpp)
// and counted in a waiter slot (internal/waiter_slots.hpp); src/waiter_registry.cpp says
// why a plain-store unlock still cannot miss one.
//
// Costs: lock() is a prefetch for write, a load and one CAS when free. unlock() is a
// release store and two loads of a read-mostly slot when nobody waits, and a load
// and a store when a designee naps (plus a load of a read-mostly hint, and a wake-up where
// the waiters have found the mutex free when they woke: a sparse mutex, below). A contended
// lock() spins briefly (set_spin_limit), then becomes the designee or queues (a new designee
// first watches the mutex for up to 16 us and takes it if it stays free 1 us, so a hold of a
// microsecond costs it no nap; not while its CPU is shared); when at least
// two waiters per CPU want the mutex, a new waiter stays runnable and yields (up to 20 ms)
// instead of queueing, so that the scheduler, not one wake-up at a time, rotates a crowd
// (CPU time for throughput and fairness).
//
// Sparse mutexes: held briefly between long stretches of other work, a mutex is free most
// of the time a designee naps. Its waiters learn that when they wake (per waiter slot), and
// while they keep finding it free each unlock that leaves the designee napping wakes it (or
// one queued waiter) as glibc's does, instead of leaving the mutex idle for the rest of a nap.
//
// Fairness: barging is allowed (throughput), but the designee is handed the mutex after
// 1 ms, designees are drawn from the queue in order, and an unlock that wakes a queued
// thread hands it the mutex when the parking lot's randomized per-bucket deadline (at most
// about 1 ms) has passed: no waiter starves. unlock_fairly() always hands off to a parked
// waiter if there is one. Timed waiters (try_lock_for/until) queue apart and are only ever
// handed the mutex, first in line at each handoff request.
//
// Not recursive. Unlocking a mutex that is not held is a precondition violation; it never
// changes the mutex (a free byte is stored free again) and is reported by throwing
// synchronization_error whenever the unlock looks at the byte: always when a waiter is
// registered (the slow path), and in every unlock of a build with CONTEND_CHECK_UNLOCK set
// to 1 (the default where NDEBUG is not defined, as for assert). An optimized build's fast
// path does not look: reading back the byte the lock's CAS has just written costs more than
// the rest of the unlock on some CPUs (docs/design/unlock.md). (Ownership is not tracked:
// one byte has no room for an owner, so a thread unlocking a mutex another thread holds is
// not detected.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/prefetch.hpp"
#include "contend/internal/waiter_slots.hpp"

// 1: every unlock() checks that the mutex is held (a load of the state byte). Define it
// to 0 or 1 before including this header to choose; the default follows NDEBUG.
#ifndef CONTEND_CHECK_UNLOCK
#ifdef NDEBUG
#define CONTEND_CHECK_UNLOCK 0
#else
#define CONTEND_CHECK_UNLOCK 1
#endif
#endif

namespace contend {

namespace internal {
// Per waiter slot: whether the waiters of the mutexes hashing there have lately found the
// mutex free when they woke (src/mutex.cpp says who sets it and why). A hint, not part of
// any protocol: a plain std::atomic, so the model checker does not schedule on it.
extern std::atomic<std::uint8_t> mutex_sparse_hints[waiter_slot_count];
inline constexpr std::uint8_t mutex_sparse = 2;  // the hint's value that makes unlocks wake
}  // namespace internal

class thin_lock;
class condition_variable;

class mutex {
public:
    constexpr mutex() noexcept = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    void lock() {
        // Load first: a free mutex may carry WAKING (a designee naps while the holder
        // re-acquires), and a CAS expecting exactly 0 would send every such acquisition
        // down the slow path. The prefetch asks for the line exclusive, so the load does
        // not fetch it shared only for the CAS to wait for ownership (internal/prefetch.hpp).
        internal::prefetch_for_write(&state_);
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if ((s & held_bit) || !state_.compare_exchange_strong(s, static_cast<std::uint8_t>(s | held_bit),
                                                              std::memory_order_acquire, std::memory_order_relaxed))
            [[unlikely]]
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

    // lock() for a caller whose own try_lock() just failed (a profiler that times only the
    // contended acquisitions): straight to the spin and park, without a second attempt on a
    // line other threads are fighting over. Equivalent to lock() in every other respect.
    void lock_contended() { lock_slow(internal::no_deadline); }

    // Blocks at most until the deadline. Returns whether the mutex was acquired.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock() || lock_slow(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock() || lock_slow(internal::to_deadline(t));
    }

    // Precondition: the mutex is held (see the top of this file for what a violation does).
    // Always inlined: a lock built on this one (thin_lock's fat lock) would otherwise pay a
    // call on every release.
    [[gnu::always_inline]] inline void unlock() { unlock_with(internal::waiter_slot_for(this)); }

    // Like unlock(), but if a thread is parked, the mutex passes directly to it: no other
    // thread can barge in between. Costs a wake-up the holder pays for.
    void unlock_fairly() { unlock_slow(true); }

    // Like unlock(), for a holder about to block (contend::condition_variable's wait calls
    // it on any lock that has it, the pipe's too): a waiter napping as the designee is woken
    // at once instead of at the end of its nap, since the holder will not be back to take the
    // mutex soon. Without it a wait/notify ping-pong can settle into a rhythm where each
    // turn waits out a nap (docs/design/mutex.md). Costs an unpark call when a designee
    // exists. Always checks that the mutex is held (synchronization_error otherwise).
    void unlock_before_blocking();

    // True if some thread holds the mutex (a snapshot, for assertions and diagnostics).
    bool is_locked() const noexcept { return state_.load(std::memory_order_relaxed) & held_bit; }

    // How long a contended lock() spins before it parks. Round r of a spin pauses for
    // 2^(r+1) pause lengths for r < 4 (Rust parking_lot's SpinWait; the pause's length is
    // measured at run time), later rounds yield, and no spin lasts longer than about a park
    // and wake (docs/design/mutex.md, "The spin limit").
    //
    // Default: 2 rounds for every mutex (default_spin_limit). set_spin_limit(n) fixes n.
    //
    // set_spin_limit(adaptive_spin) makes the budget adapt per mutex instead, from what
    // waiting instead of spinning would cost (src/mutex.cpp, adaptive_spin_limit): no spin
    // when a crowd of waiters already yields; 2 rounds when parking would first pay a
    // process-wide barrier; else a level, 0 to 3 for 0, 2, 4 or 10 rounds, kept per waiter
    // slot (written only on slow paths, so the unlock fast path stays a store of a constant).
    // A spin in vain drops the level to 0; one success in 8 per thread raises it by one; at
    // level 0 one contended lock() in 16 per thread still spins 2 rounds. Not the default:
    // no fixed limit wins every cell of the lab's counter, hold and striped suites, and this
    // rule is not reliably closer to the best one than the default (docs/design/mutex.md has
    // the measurements).
    static constexpr std::uint32_t adaptive_spin = 0xFFFF'FFFFu;
    static constexpr std::uint32_t default_spin_limit = 2;
    static void set_spin_limit(std::uint32_t rounds) noexcept;
    static std::uint32_t spin_limit() noexcept;

    static constexpr std::uint8_t held_bit = 0x01;
    static constexpr std::uint8_t waking_bit = 0x02;
    static constexpr std::uint8_t handoff_request_bit = 0x04;

private:
    friend class thin_lock;
    friend class condition_variable;  // moves its waiters onto this mutex's queue (src/mutex.cpp)
    // unlock() with this mutex's waiter slot already found (thin_lock keeps it beside its
    // fat locks, saving the address hash on every release).
    [[gnu::always_inline]] inline void unlock_with(const internal::atomic<std::uint32_t>& slot) {
#if CONTEND_CHECK_UNLOCK
        if (!(state_.load(std::memory_order_relaxed) & held_bit)) [[unlikely]]
            unlock_slow(false);  // throws: the mutex is not held
#endif
        // The slot first, and not the state byte: the byte is the one this thread's lock()
        // has just written with a locked CAS, and reading it back right after is slow on some
        // CPUs (docs/design/unlock.md). A slot that is exactly `light`
        // says nobody is registered, and only registered waiters set WAKING or
        // HANDOFF_REQUEST (src/mutex.cpp), so a held byte is exactly HELD: store 0.
        if (slot.load(std::memory_order_relaxed) == internal::waiter_slot_light) [[likely]] {
            state_.store(0, std::memory_order_release);
            // Only the compiler must not move the load above the store; the hardware
            // ordering is supplied by the registering waiter's heavy barrier.
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (slot.load(std::memory_order_relaxed) != internal::waiter_slot_light) [[unlikely]]
                wake_after_release();
            return;
        }
        if (state_.load(std::memory_order_relaxed) == (held_bit | waking_bit)) {
            // A designated waiter is awake or napping and retries by itself: nobody needs
            // waking, and no other thread clears WAKING while the mutex is held, so a plain
            // store cannot undo anyone's write that matters (see src/mutex.cpp).
            state_.store(waking_bit, std::memory_order_release);
            // Unless the lock's waiters have been finding it free when they wake (a sparse
            // lock: short holds, long work between them): then one of them is woken now
            // rather than at the end of its nap (src/mutex.cpp, "Sparse locks").
            if (internal::mutex_sparse_hints[static_cast<std::size_t>(&slot - &internal::waiter_slots[0])].load(
                    std::memory_order_relaxed) == internal::mutex_sparse) [[unlikely]]
                wake_on_sparse_lock(slot);
            return;
        }
        unlock_slow(false);
    }

    bool lock_slow(internal::deadline until);
    bool lock_after_spin(internal::deadline until);
    bool poll_sparse(std::size_t slot_index, internal::deadline until);
    struct release_watch;  // src/mutex.cpp
    bool poll_for_release(std::size_t slot_index, const release_watch& watch);
    bool wait_registered(internal::deadline until);
    bool register_requeued_waiter(bool* arm) noexcept;
    static void arm_waiter_slot(const void* address) noexcept;
    void lock_requeued(bool unparked, std::intptr_t token);
    void drop_requeued_registration() noexcept;
    std::uint32_t adaptive_spin_limit(std::size_t slot_index) const noexcept;
    void wait_as_designee(bool nap_first);
    void unlock_slow(bool fair);
    void release_slow(std::size_t slot_index);
    bool hand_off_to(const void* key);
    bool yield_while_crowded(std::size_t slot_index);
    void wake_after_release() noexcept;
    void wake_on_sparse_lock(const internal::atomic<std::uint32_t>& slot) noexcept;

    internal::atomic<std::uint8_t> state_{0};
};

static_assert(sizeof(mutex) == 1);

// Acquisitions, process-wide, that found a mutex (contend::mutex or a primitive built on
// it) held and had to wait: the "lock contentions" figure that the Pipelines contention PR
// reports per second (see docs/references.md, dotnet-runtime-pipelines-contention).
// Counted only on the slow path, in per-thread stripes summed here, so the fast path
// touches no shared counter.
std::uint64_t lock_contention_count() noexcept;

}  // namespace contend
