// contend::once_flag slow paths.
//
// Why no waiter sleeps after the call ends: a waiter sets WAITERS in park's validation, under
// the bucket lock, only while RUNNING is set (one CAS reads RUNNING and sets WAITERS). The
// caller ends with an exchange that clears RUNNING and WAITERS and reads them in the same
// step: if WAITERS was set, it wakes every thread parked here (unpark_all takes the bucket
// lock, after which no validation finds RUNNING set by this call); if not, a waiter's CAS
// comes after the exchange and does not sleep. After a throw the woken threads race for
// RUNNING again, and one makes the call.
#include "contend/once.hpp"

#include "contend/parking_lot.hpp"
#include "contention_counter.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"

namespace contend {

bool once_flag::begin() noexcept {
    std::uint8_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        if (s & done) return false;
        if (!(s & running)) {
            if (state_.compare_exchange_weak(s, running, std::memory_order_acquire, std::memory_order_acquire))
                return true;
            continue;
        }
        internal::count_contention();
        parking_lot::park(this, [this] {
            return internal::mark_waiting(state_, waiters, [](std::uint8_t v) { return (v & running) != 0; });
        });
        s = state_.load(std::memory_order_acquire);
    }
}

void once_flag::end(bool returned) noexcept {
    const std::uint8_t before = state_.exchange(returned ? done : 0, std::memory_order_acq_rel);
    if ((before & waiters) && !CONTEND_MUTATION(once_end_wakes_nobody)) parking_lot::unpark_all(this);
}

}  // namespace contend
