// Event slow paths. The WAITERS bit is set only under the parking-lot bucket lock (in
// park's validation), so a set() that sees it clear knows nobody can be asleep, and a
// waiter that sees SET clear while holding the bucket lock knows set() must come through
// the same lock before anyone could miss it.
#include "contend/event.hpp"

#include "contend/parking_lot.hpp"

namespace contend {
namespace {

constexpr std::intptr_t signal_delivered = 1;

// Validation shared by both events: sleep only if not signalled, and say we are here.
bool mark_waiting(std::atomic<std::uint32_t>& state, std::uint32_t set_bit, std::uint32_t waiters_bit) noexcept {
    std::uint32_t s = state.load(std::memory_order_acquire);
    for (;;) {
        if (s & set_bit) return false;
        if (s & waiters_bit) return true;
        if (state.compare_exchange_weak(s, s | waiters_bit, std::memory_order_acq_rel, std::memory_order_acquire))
            return true;
    }
}

}  // namespace

void manual_reset_event::set() noexcept {
    const std::uint32_t before = state_.fetch_or(set_bit, std::memory_order_release);
    if (!(before & waiters_bit)) return;
    state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
    parking_lot::unpark_all(this);
}

bool manual_reset_event::wait_until_internal(internal::deadline until) noexcept {
    for (;;) {
        if (is_set()) return true;
        const auto r = parking_lot::park(
            this, [this] { return mark_waiting(state_, set_bit, waiters_bit); }, until);
        if (r.status == parking_lot::park_status::timed_out) return is_set();
    }
}

void auto_reset_event::set() noexcept {
    std::uint32_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (s & set_bit) return;
        if (s & waiters_bit) break;
        if (state_.compare_exchange_weak(s, s | set_bit, std::memory_order_release, std::memory_order_relaxed)) return;
    }
    // Someone may be parked: give the signal to exactly one of them, directly.
    parking_lot::unpark_one(this, [this](parking_lot::unpark_result r) -> std::intptr_t {
        if (r.did_unpark_thread) {
            if (!r.may_have_more_threads) state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
            return signal_delivered;
        }
        // The waiters left (timed out) before we came: keep the signal for the next wait.
        std::uint32_t v = state_.load(std::memory_order_relaxed);
        while (!state_.compare_exchange_weak(v, (v & ~waiters_bit) | set_bit, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        }
        return 0;
    });
}

bool auto_reset_event::wait_until_internal(internal::deadline until) noexcept {
    for (;;) {
        if (try_consume()) return true;
        const auto r = parking_lot::park(
            this, [this] { return mark_waiting(state_, set_bit, waiters_bit); }, until);
        if (r.was_unparked() && r.token == signal_delivered) return true;
        if (r.status == parking_lot::park_status::timed_out) return try_consume();
    }
}

}  // namespace contend
