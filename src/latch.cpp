// contend::latch slow paths.
//
// Why no wake-up is lost: a waiter sets WAITERS in park's validation, under the bucket lock,
// only while the count is not zero (one CAS reads the count and sets the bit). The
// count_down that reaches zero reads WAITERS in its own CAS on the same word. So either that
// CAS sees WAITERS, and it wakes every thread parked here (unpark_all takes the bucket lock,
// after which no validation can find the count not zero), or the waiter's CAS came after it
// and finds the count zero and does not sleep.
#include "contend/latch.hpp"

#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"

namespace contend {

latch::latch(std::ptrdiff_t expected) : state_(0) {
    if (expected < 0 || expected > max())
        throw synchronization_error("contend::latch: the expected count must be between 0 and latch::max()");
    state_.store(static_cast<std::uint64_t>(expected) << 1, std::memory_order_relaxed);
}

void latch::count_down(std::ptrdiff_t n) {
    if (n < 0) throw synchronization_error("contend::latch::count_down: a negative update");
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        const auto left = static_cast<std::ptrdiff_t>(s >> 1);
        if (n > left) throw synchronization_error("contend::latch::count_down: the update exceeds the count left");
        const std::uint64_t next =
            left == n ? 0 : s - (static_cast<std::uint64_t>(n) << 1);  // at zero WAITERS goes too
        if (state_.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_relaxed)) break;
    }
    if (static_cast<std::ptrdiff_t>(s >> 1) == n && (s & waiters_bit) &&
        !CONTEND_MUTATION(latch_count_down_wakes_nobody))
        parking_lot::unpark_all(this);
}

void latch::wait_slow() const noexcept {
    internal::count_contention();
    while (!try_wait()) {
        parking_lot::park(this, [this] {
            return internal::mark_waiting(state_, waiters_bit, [](std::uint64_t s) { return s >> 1 != 0; });
        });
    }
}

}  // namespace contend
