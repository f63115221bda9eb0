// contend::latch: std::latch's contract on the parking lot. A downward counter, set once at
// construction; threads count it down and wait for it to reach zero; it is not reused.
//
//   contend::latch done(workers);
//   ... each worker: done.count_down();
//   done.wait();  // every worker has counted down, and what it wrote before is visible
//
// One word (8 bytes): the count shifted left by one, and WAITERS (bit 0), set by a thread that
// parks while the count is not zero. Costs: count_down() is a load and a CAS, and the one
// that reaches zero with WAITERS set also wakes every parked thread (one parking-lot call);
// try_wait() and a wait() on a released latch are one acquire load. A waiter polls nothing: a
// latch usually waits for work that takes far longer than a wake-up.
//
// Invariants: the count never goes below zero and never rises; WAITERS is set only while the
// count is not zero, under the parking lot's bucket lock, and cleared by the count_down that
// reaches zero, in the same CAS (src/latch.cpp says why no wake-up is lost).
//
// Misuse (a negative count, a count_down by more than is left) throws synchronization_error
// and leaves the latch as it was; the standard makes it undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "contend/internal/atomic.hpp"

namespace contend {

class latch {
public:
    // Throws synchronization_error unless 0 <= expected <= max().
    explicit latch(std::ptrdiff_t expected);
    latch(const latch&) = delete;
    latch& operator=(const latch&) = delete;

    static constexpr std::ptrdiff_t max() noexcept { return std::numeric_limits<std::ptrdiff_t>::max() >> 1; }

    // Lowers the count by n (release); at zero, every waiter is released. Throws
    // synchronization_error if n < 0 or n exceeds the count left.
    void count_down(std::ptrdiff_t n = 1);
    // Whether the count has reached zero (acquire).
    bool try_wait() const noexcept { return state_.load(std::memory_order_acquire) >> 1 == 0; }
    // Blocks until the count reaches zero.
    void wait() const noexcept {
        if (!try_wait()) wait_slow();
    }
    // count_down(n), then wait().
    void arrive_and_wait(std::ptrdiff_t n = 1) {
        count_down(n);
        wait();
    }

private:
    static constexpr std::uint64_t waiters_bit = 1;
    void wait_slow() const noexcept;

    mutable internal::atomic<std::uint64_t> state_;
};

}  // namespace contend
