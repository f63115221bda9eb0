// contend::counting_semaphore<LeastMaxValue> and contend::binary_semaphore: std::
// counting_semaphore's contract on the parking lot.
//
//   contend::counting_semaphore<8> slots(8);
//   slots.acquire();   // blocks while no permit is left
//   ... use one of 8 slots ...
//   slots.release();   // gives it back; a thread waiting for one is handed it
//
// One word (8 bytes): the permits shifted left by one, and WAITERS (bit 0), set under the
// parking lot's bucket lock by a thread that parks while no permit is left. Costs:
// try_acquire() and an acquire() with a permit left are a load and a CAS; release() with
// nobody parked is a load and a CAS. A release() that finds WAITERS wakes one parked thread
// per permit (release(1) wakes at most one) and puts the permit into the count, where the
// woken thread or a thread already running takes it: with more threads than CPUs a running
// thread takes it without a context switch, which is most of what a hand-off costs (a
// bounded buffer of 64 threads on 2 CPUs: 6 us an item when every permit went to the woken
// thread, 1.3 us with this). A woken thread that finds the permit gone parks again. An
// acquire that finds no permit watches the count for about one system call's time (measured
// at run time; 0.14 us on an Intel Xeon) before its first park, where a permit that a thread
// on another CPU is about to release costs no park and no wake-up. A parked acquire watches
// for its wake-up for up to 30 us before it sleeps, or yields a few times where its CPU is
// shared (src/semaphore.cpp, parking_lot.hpp).
//
// Invariants: a thread parks only while the count is zero (its validation, under the bucket
// lock, reads the count and sets WAITERS in one CAS), and the count rises while WAITERS is
// set only under the bucket lock, with one parked thread woken per permit. A timed acquire
// that times out has left the queue under the bucket lock, so a release either woke it or
// did not find it.
//
// Fairness: eventual. About once a millisecond (the parking lot's fairness deadline) a
// release hands its permit to the longest-parked thread directly, so running threads cannot
// pass a parked one over for ever; in between, whoever comes first takes a permit (as glibc's
// sem_t and the standard library's semaphore let them).
//
// Misuse (a negative initial count or release, a count above max()) throws
// synchronization_error and leaves the semaphore as it was; the standard makes it undefined
// behaviour. One exception: releases racing each other past max() while threads are parked
// can be caught only after some of the permits have gone to those threads (the message says
// how many). Contended acquisitions are counted (contend::lock_contention_count()).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"

namespace contend {

namespace internal {

// What every counting_semaphore shares; LeastMaxValue only bounds the count.
class semaphore_base {
public:
    semaphore_base(const semaphore_base&) = delete;
    semaphore_base& operator=(const semaphore_base&) = delete;

    static constexpr std::ptrdiff_t limit = std::numeric_limits<std::ptrdiff_t>::max() >> 1;

    bool try_acquire() noexcept {
        std::uint64_t s = state_.load(std::memory_order_relaxed);
        while (s >> 1 != 0) {
            if (state_.compare_exchange_weak(s, s - 2, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

protected:
    semaphore_base(std::ptrdiff_t desired, std::ptrdiff_t max);
    void release(std::ptrdiff_t n, std::ptrdiff_t max);
    bool acquire_slow(deadline until) noexcept;

private:
    static constexpr std::uint64_t waiters_bit = 1;
    void hand_out(std::ptrdiff_t n, std::ptrdiff_t max);

    internal::atomic<std::uint64_t> state_;
};

}  // namespace internal

template <std::ptrdiff_t LeastMaxValue = internal::semaphore_base::limit>
class counting_semaphore : public internal::semaphore_base {
    static_assert(LeastMaxValue >= 0 && LeastMaxValue <= internal::semaphore_base::limit,
                  "contend::counting_semaphore: LeastMaxValue out of range");

public:
    // Throws synchronization_error unless 0 <= desired <= max().
    explicit counting_semaphore(std::ptrdiff_t desired) : semaphore_base(desired, LeastMaxValue) {}

    static constexpr std::ptrdiff_t max() noexcept { return LeastMaxValue; }

    // Adds n permits (release): each goes to a parked thread if there is one. Throws
    // synchronization_error if n < 0 or the count would exceed max().
    void release(std::ptrdiff_t n = 1) { semaphore_base::release(n, LeastMaxValue); }

    void acquire() noexcept {
        if (!try_acquire()) acquire_slow(internal::no_deadline);
    }
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period>& d) noexcept {
        return try_acquire() || acquire_slow(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& t) noexcept {
        return try_acquire() || acquire_slow(internal::to_deadline(t));
    }
};

using binary_semaphore = counting_semaphore<1>;

}  // namespace contend
