// The spin-lock family: one word, no parking, no fairness (except ticket_lock).
//
// These exist to be measured beside contend::mutex, as the sleeping-spinlock study measured
// them (see docs/references.md, sleeping-spinlock-study): what decides how a contended word
// behaves is the losing waiter's policy, not the atomic instruction. All are BasicLockable +
// Lockable (work with std::lock_guard and std::unique_lock). Unlocking a lock that is not
// held throws synchronization_error and leaves the lock unchanged (one relaxed load of a
// line the holder already owns).
//
// | type               | waiter policy                                          | fair |
// |--------------------|--------------------------------------------------------|------|
// | tas_lock           | exchange in a tight loop (a deliberately bad baseline) | no   |
// | ttas_lock          | read until free (pause between reads), then exchange   | no   |
// | backoff_spin_lock  | read before exchange; pause count doubles to 1,024     | no   |
// |                    | after each failed attempt, then sched_yield            |      |
// | sleeping_spin_lock | 8 read-only probes, then a 1 ns nanosleep request      | no   |
// | ticket_lock        | take a ticket, wait for it to be served                | FIFO |
//
// None of them belongs where the holder may block or be descheduled for long while
// others wait: waiters stay runnable (sleeping_spin_lock: for a timer-slack-sized nap).
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/synchronization_error.hpp"

namespace contend {

namespace internal {
[[noreturn]] void throw_not_locked(const char* type);
void sleep_one_nanosecond() noexcept;
void thread_yield() noexcept;
}  // namespace internal

// Naive test-and-set: every waiter exchanges on every check, so every losing probe asks
// for exclusive ownership of the line the holder needs to release: under a crowd it is
// orders of magnitude slower than the sleeping lock (docs/design/mutex.md, "The spin
// locks"). A baseline for the lab; do not use it.
class tas_lock {
public:
    void lock() noexcept {
        while (state_.exchange(1, std::memory_order_acquire) != 0) {
        }
    }
    bool try_lock() noexcept { return state_.exchange(1, std::memory_order_acquire) == 0; }
    void unlock() {
        if (state_.load(std::memory_order_relaxed) == 0) [[unlikely]]
            internal::throw_not_locked("tas_lock");
        state_.store(0, std::memory_order_release);
    }

private:
    internal::atomic<std::uint32_t> state_{0};
};

// Test-and-test-and-set: probes with plain loads (shared copies of the line, no ownership
// traffic) and exchanges only when the word looks free.
class ttas_lock {
public:
    void lock() noexcept {
        for (;;) {
            if (state_.exchange(1, std::memory_order_acquire) == 0) return;
            while (state_.load(std::memory_order_relaxed) != 0) cpu_relax();
        }
    }
    bool try_lock() noexcept {
        return state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0;
    }
    void unlock() {
        if (state_.load(std::memory_order_relaxed) == 0) [[unlikely]]
            internal::throw_not_locked("ttas_lock");
        state_.store(0, std::memory_order_release);
    }

private:
    internal::atomic<std::uint32_t> state_{0};
};

// Read-before-exchange with bounded exponential backoff: the lock the sleeping-spinlock
// study's author shipped in the Astral runtime. After each failed exchange the waiter
// pauses 1, 2, 4 ... up to 1,024 times between probes; once at the cap it yields its time
// slice per probe.
class backoff_spin_lock {
public:
    static constexpr std::uint32_t max_pauses = 1024;

    void lock() noexcept {
        if (state_.exchange(1, std::memory_order_acquire) == 0) [[likely]]
            return;
        lock_slow();
    }
    bool try_lock() noexcept {
        return state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0;
    }
    void unlock() {
        if (state_.load(std::memory_order_relaxed) == 0) [[unlikely]]
            internal::throw_not_locked("backoff_spin_lock");
        state_.store(0, std::memory_order_release);
    }

private:
    void lock_slow() noexcept {
        std::uint32_t pauses = 1;
        for (;;) {
            if (pauses > max_pauses) {
                internal::thread_yield();
            } else {
                for (std::uint32_t i = 0; i < pauses; ++i) cpu_relax();
                pauses *= 2;
            }
            if (state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0)
                return;
        }
    }

    internal::atomic<std::uint32_t> state_{0};
};

// The sleeping-spinlock study's winner on x86: 8 read-only probes, then a 1 ns nanosleep
// request, which the kernel rounds up to the timer slack (50 us by default, more under a
// hypervisor: docs/design/mutex.md, "The spin locks"). The nap takes most waiters off the run queue so one thread
// runs the critical section alone: excellent throughput for a one-increment section, poor
// latency and no fairness for an individual waiter.
class sleeping_spin_lock {
public:
    static constexpr int probes_before_sleep = 8;

    void lock() noexcept {
        for (;;) {
            for (int probe = 0; probe < probes_before_sleep; ++probe) {
                if (state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0)
                    return;
            }
            internal::sleep_one_nanosecond();
        }
    }
    bool try_lock() noexcept {
        return state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0;
    }
    void unlock() {
        if (state_.load(std::memory_order_relaxed) == 0) [[unlikely]]
            internal::throw_not_locked("sleeping_spin_lock");
        state_.store(0, std::memory_order_release);
    }

private:
    internal::atomic<std::uint32_t> state_{0};
};

// FIFO ticket lock. Waiters pause in proportion to their distance from the head, and
// yield when far behind, because a strictly FIFO spin lock collapses when the next
// ticket holder is descheduled (any oversubscribed machine): everyone waits for it.
class ticket_lock {
public:
    void lock() noexcept {
        const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
        std::uint32_t serving = serving_.load(std::memory_order_acquire);
        if (serving == ticket) [[likely]]
            return;
        lock_slow(ticket, serving);
    }
    bool try_lock() noexcept {
        std::uint32_t serving = serving_.load(std::memory_order_acquire);
        std::uint32_t expected = serving;
        return next_.compare_exchange_strong(expected, serving + 1, std::memory_order_acquire,
                                             std::memory_order_relaxed);
    }
    void unlock() {
        const std::uint32_t serving = serving_.load(std::memory_order_relaxed);
        if (next_.load(std::memory_order_relaxed) == serving) [[unlikely]]
            internal::throw_not_locked("ticket_lock");
        serving_.store(serving + 1, std::memory_order_release);
    }

    // For the holder when it is the only thread left with a ticket: in a fork() child, the
    // tickets the parent's waiters took belong to threads that do not exist there, and a
    // plain unlock would serve the next of them, leaving the lock held for good. Releases the
    // lock and serves every ticket taken so far. Precondition: held by the caller, and no
    // other live thread holds a ticket.
    void unlock_abandoning_waiters() noexcept {
        serving_.store(next_.load(std::memory_order_relaxed), std::memory_order_release);
    }

    // Tickets taken and not yet served: the holder plus its waiters (a snapshot).
    std::uint32_t queue_length() const noexcept {
        return next_.load(std::memory_order_relaxed) - serving_.load(std::memory_order_relaxed);
    }

private:
    void lock_slow(std::uint32_t ticket, std::uint32_t serving) noexcept {
        for (std::uint32_t round = 0;; ++round) {
            const std::uint32_t distance = ticket - serving;
            if (distance > 4 || round > 64) {
                internal::thread_yield();
            } else {
                for (std::uint32_t i = 0; i < distance * 16; ++i) cpu_relax();
            }
            serving = serving_.load(std::memory_order_acquire);
            if (serving == ticket) return;
        }
    }

    internal::atomic<std::uint32_t> next_{0};
    internal::atomic<std::uint32_t> serving_{0};
};

}  // namespace contend
