// Event slow paths. The WAITERS bit is set only under the parking-lot bucket lock (in
// park's validation), so a set() that sees it clear knows nobody can be asleep, and a
// waiter that sees SET clear while holding the bucket lock knows set() must come through
// the same lock before anyone could miss it.
//
// Watchers miss no set() by the same kind of argument, on the state word alone: a watcher
// turns WATCHED on with an RMW and reads SET in that RMW's result; set() turns SET on with
// an RMW and reads WATCHED in its result. The two RMWs are ordered on the one word, so
// either the watcher's result shows SET, or set()'s shows WATCHED and it notifies. The
// watcher list is changed and walked under one lock per table stripe, and WATCHED changes
// only under it, so a set() that saw WATCHED finds the list as it was when the bit went on
// or later, and unwatch_event returning means no notification for that watcher is running.
#include "contend/event.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "contend/parking_lot.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"
#include "platform/first_use.hpp"

namespace contend {
namespace internal {

struct event_access {
    static internal::atomic<std::uint32_t>& state(void* event, bool auto_reset) noexcept {
        return auto_reset ? static_cast<auto_reset_event*>(event)->state_
                          : static_cast<manual_reset_event*>(event)->state_;
    }
    static constexpr std::uint32_t set_bit = manual_reset_event::set_bit;
    static constexpr std::uint32_t watched_bit = manual_reset_event::watched_bit;
    static_assert(set_bit == auto_reset_event::set_bit && watched_bit == auto_reset_event::watched_bit);
    static bool try_consume(void* event) noexcept { return static_cast<auto_reset_event*>(event)->try_consume(); }
};

}  // namespace internal

namespace {

// Who watches which event: rarely written (a registration, an unregistration) and read
// only by set()s of watched events. Striped so that sets of unrelated watched events rarely
// meet on one lock. A watched set() already pays a lock and the wait thread's wake-up, so
// the count only has to spread events, not be tuned: 64 stripes, 4 KiB.
struct watch_stripe {
    mutex lock;
    std::unordered_map<const void*, std::vector<internal::event_watcher*>> watchers;
};

constexpr std::size_t watch_stripes = 64;

using watch_stripes_array = std::array<cache_padded<watch_stripe>, watch_stripes>;
internal::first_use_object<watch_stripes_array> watch_table;

watch_stripe& stripe_for(const void* event) noexcept {
    // Built on first use, so a set() or watch from another static initializer finds it, and
    // never destroyed: a static thread_pool's destructor unwatches after this TU's statics
    // are gone.
    // No guard a forked child could find held, either (platform/first_use.hpp).
    auto& table = watch_table.get();
    // Events are at least 4-byte aligned; fold the higher bits in so neighbours spread.
    auto a = reinterpret_cast<std::uintptr_t>(event);
    a ^= a >> 12;
    return *table[(a >> 2) % watch_stripes];
}

void notify_watchers(const void* event) noexcept {
    watch_stripe& s = stripe_for(event);
    std::lock_guard guard(s.lock);
    const auto it = s.watchers.find(event);
    if (it == s.watchers.end()) return;  // the last watcher left after set() saw WATCHED
    for (internal::event_watcher* w : it->second) w->signalled(w);
}

constexpr std::intptr_t signal_delivered = 1;

// Validation shared by both events: sleep only if not signalled, and say we are here.
bool wait_unless_set(internal::atomic<std::uint32_t>& state, std::uint32_t set_bit,
                     std::uint32_t waiters_bit) noexcept {
    return internal::mark_waiting(state, waiters_bit, [set_bit](std::uint32_t s) { return !(s & set_bit); });
}

}  // namespace

void manual_reset_event::set() noexcept {
    const std::uint32_t before = state_.fetch_or(set_bit, std::memory_order_release);
    if (before & (waiters_bit | watched_bit)) [[unlikely]]
        set_slow(before);
}

void manual_reset_event::set_slow(std::uint32_t before) noexcept {
    if (before & waiters_bit) {
        state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
        if (!CONTEND_MUTATION(manual_reset_event_set_wakes_nobody)) parking_lot::unpark_all(this);
    }
    // Every set() of a watched manual event notifies, even one that finds it set already:
    // a repeating wait may be between firings and must learn that a set() came since.
    if (before & watched_bit) notify_watchers(this);
}

bool manual_reset_event::wait_until_internal(internal::deadline until) noexcept {
    for (;;) {
        if (is_set()) return true;
        const auto r = parking_lot::park(
            this, [this] { return wait_unless_set(state_, set_bit, waiters_bit); }, until);
        if (r.status == parking_lot::park_status::timed_out) return is_set();
    }
}

void auto_reset_event::set() noexcept {
    std::uint32_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        // Already set: whoever watches was told when it became set (or saw SET when it
        // started watching), and the signal is still there for it to consume.
        if (s & set_bit) return;
        if (s & waiters_bit) break;
        if (state_.compare_exchange_weak(s, s | set_bit, std::memory_order_release, std::memory_order_relaxed)) {
            if (s & watched_bit) [[unlikely]]
                notify_watchers(this);
            return;
        }
    }
    // Someone may be parked: give the signal to exactly one of them, directly. A parked
    // thread takes precedence over a watcher, as it would over a thread about to wait.
    bool kept_for_watchers = false;
    parking_lot::unpark_one(this, [this, &kept_for_watchers](parking_lot::unpark_result r) -> std::intptr_t {
        if (r.did_unpark_thread) {
            if (!r.may_have_more_threads) state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
            if (CONTEND_MUTATION(auto_reset_event_set_wakes_without_the_signal)) return 0;
            return signal_delivered;
        }
        // The waiters left (timed out) before we came: keep the signal for the next wait.
        std::uint32_t v = state_.load(std::memory_order_relaxed);
        while (!state_.compare_exchange_weak(v, (v & ~waiters_bit) | set_bit, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        }
        kept_for_watchers = (v & watched_bit) != 0;
        return 0;
    });
    // Outside the bucket lock: the watchers' lock is never taken inside a parking-lot lock.
    if (kept_for_watchers) notify_watchers(this);
}

bool auto_reset_event::wait_until_internal(internal::deadline until) noexcept {
    for (;;) {
        if (try_consume()) return true;
        const auto r = parking_lot::park(
            this, [this] { return wait_unless_set(state_, set_bit, waiters_bit); }, until);
        if (r.was_unparked() && r.token == signal_delivered) return true;
        if (r.status == parking_lot::park_status::timed_out) return try_consume();
    }
}

namespace internal {

bool watch_event(void* event, bool auto_reset, event_watcher* watcher) {
    watch_stripe& s = stripe_for(event);
    std::lock_guard guard(s.lock);
    auto& list = s.watchers[event];
    try {
        list.push_back(watcher);
    } catch (...) {
        if (list.empty()) s.watchers.erase(event);
        throw;
    }
    const std::uint32_t before =
        event_access::state(event, auto_reset).fetch_or(event_access::watched_bit, std::memory_order_acq_rel);
    return (before & event_access::set_bit) != 0;
}

void unwatch_event(void* event, bool auto_reset, event_watcher* watcher) noexcept {
    watch_stripe& s = stripe_for(event);
    std::lock_guard guard(s.lock);
    const auto it = s.watchers.find(event);
    if (it == s.watchers.end()) return;
    auto& list = it->second;
    const auto w = std::find(list.begin(), list.end(), watcher);
    if (w == list.end()) return;
    list.erase(w);
    if (!list.empty()) return;
    s.watchers.erase(it);
    // The last watcher: set() goes back to its one-test fast path.
    event_access::state(event, auto_reset).fetch_and(~event_access::watched_bit, std::memory_order_relaxed);
}

bool take_event(void* event, bool auto_reset) noexcept {
    if (auto_reset) return event_access::try_consume(event);
    return event_access::state(event, false).load(std::memory_order_acquire) & event_access::set_bit;
}

}  // namespace internal

}  // namespace contend
