// The validation every parking-lot wait on a state word shares (events, latch, semaphore,
// barrier, once). Internal.
//
// Run inside park()'s validation, under the bucket lock: while `still_wait(value)` holds, it
// sets `waiters_bit` in the word (one CAS that also re-reads the value) and says to sleep;
// once the wait is over it says not to. Whoever ends the wait changes the word with an atomic
// step that reads the bit, and then unparks under the same bucket lock, so a waiter either
// sees the end here or is found parked. The barrier uses it before a futex wait instead: its
// last arrival writes the futex word after that atomic step and wakes after the write
// (src/barrier.cpp).
#pragma once

#include <atomic>

#include "contend/internal/atomic.hpp"

namespace contend::internal {

template <class T, class StillWait>
bool mark_waiting(internal::atomic<T>& word, T waiters_bit, StillWait still_wait) noexcept {
    T v = word.load(std::memory_order_acquire);
    for (;;) {
        if (!still_wait(v)) return false;
        if (v & waiters_bit) return true;
        if (word.compare_exchange_weak(v, static_cast<T>(v | waiters_bit), std::memory_order_acq_rel,
                                       std::memory_order_acquire))
            return true;
    }
}

}  // namespace contend::internal
