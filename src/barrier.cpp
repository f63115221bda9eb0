// contend::barrier slow paths.
//
// Why no waiter sleeps through the end of its phase: a waiter sets WAITERS in park's
// validation, under the bucket lock, only while the phase is still its own (one CAS reads the
// phase and sets the bit). The last arrival starts the next phase with an exchange of the
// whole word, which reads WAITERS in the same step: if it was set, it wakes every thread
// parked here (unpark_all takes the bucket lock, after which no validation finds the old
// phase); if not, a waiter's CAS comes after the exchange, finds the new phase and does not
// sleep.
#include "contend/barrier.hpp"

#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

namespace {
// How long a waiter watches for the end of its phase before it sleeps (parking_lot's poll):
// where workers meet phase after phase, the last arrival usually comes within microseconds,
// and an end of phase that comes within the poll costs the waiter no sleep and the last
// arrival no wake-up of it. 30 us, as the semaphore's acquire (src/semaphore.cpp says why
// that length holds on both CPU families); the parking lot stops a thread's polls while they
// do not pay. Where the last arrivals need the waiters' CPUs (more workers than CPUs), the
// poll yields them, and an 8 us poll ran out before they came: the sync suite's phase at 4
// workers on 2 CPUs took 5.8 to 6.4 us with 8 us, and 2.4 to 8.8 us over four runs with 30
// (AMD EPYC VM); at 64 workers 7.3 us with 8, 4.1 to 6.9 with 30.
constexpr std::chrono::nanoseconds phase_poll = std::chrono::microseconds(30);
}  // namespace

barrier_base::barrier_base(std::ptrdiff_t expected) : state_(0), expected_(expected) {
    if (expected < 0 || expected > limit)
        throw synchronization_error("contend::barrier: the expected count must be between 0 and barrier::max()");
    state_.store(static_cast<std::uint64_t>(expected) << 1, std::memory_order_relaxed);
}

std::uint32_t barrier_base::arrive_counting(std::ptrdiff_t n, bool* last) {
    if (n < 1) throw synchronization_error("contend::barrier::arrive: the update must be at least 1");
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        const auto left = static_cast<std::ptrdiff_t>((s & 0xFFFF'FFFFu) >> 1);
        if (n > left) throw synchronization_error("contend::barrier::arrive: more arrivals than the phase has left");
        if (state_.compare_exchange_weak(s, s - (static_cast<std::uint64_t>(n) << 1), std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
            *last = left == n;
            return static_cast<std::uint32_t>(s >> 32);
        }
    }
}

// The last arrival, after the completion: the next phase, with the count after the drops.
void barrier_base::finish_phase() noexcept {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    const auto next_phase = static_cast<std::uint64_t>(static_cast<std::uint32_t>(s >> 32) + 1);
    const auto expected = static_cast<std::uint64_t>(expected_.load(std::memory_order_relaxed));
    const std::uint64_t before = state_.exchange(next_phase << 32 | expected << 1, std::memory_order_acq_rel);
    if ((before & waiters_bit) && !CONTEND_MUTATION(barrier_last_arrival_wakes_nobody)) parking_lot::unpark_all(this);
}

void barrier_base::wait_slow(std::uint32_t phase) const noexcept {
    count_contention();
    while (!phase_over(phase)) {
        parking_lot::detail::park(
            this,
            [this, phase] {
                return mark_waiting(state_, waiters_bit,
                                    [phase](std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32) == phase; });
            },
            [] {}, no_deadline, nullptr, phase_poll);
    }
}

}  // namespace contend::internal
