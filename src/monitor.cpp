// contend::monitor: the address-keyed table. See monitor.hpp for the shape; this file says
// how a waiter cannot miss its exit or pulse.
//
// Every change to an entry happens under its stripe's mutex. A thread that must wait
// parks with the stripe still held and releases it in park()'s before_sleep, that is after
// the parking lot has queued it: an exit or pulse, which needs the stripe, then always
// finds it queued. The lock order is therefore stripe, then parking-lot bucket; nothing
// takes a stripe while holding a bucket (validate callbacks do not touch stripes).
#include "contend/monitor.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/thread_id.hpp"
#include "contend/mutex.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "model/mutation.hpp"
#include "parking_keys.hpp"
#include "sync_table.hpp"

namespace contend {
namespace {

using internal::monitor_enter_key;
using internal::monitor_pulse_key;

struct entry {
    const void* address;
    // Extra enters by the owner. 64 bits, which no program reaches: a 32-bit count wrapped at
    // 2^32 enters, and the next exit let the address go.
    std::uint64_t recursion;
    std::uint32_t owner;  // compact thread id, 0 when nobody holds the address
    std::uint32_t entering;  // threads parked (or about to park) waiting to enter
    std::uint32_t waiting;  // threads in wait(), parked until a pulse or their deadline
};

struct alignas(cache_line_size) stripe {
    contend::mutex lock;
    // Addresses in use, and idle entries that exits left behind for the next enter of the
    // same address (no erase and re-insert per enter/exit pair). Adding an entry to a stripe
    // that holds idle_kept or more first drops every idle one, so a stripe never holds more
    // than idle_kept entries or its addresses in use, whichever is more.
    std::vector<entry> entries;

    entry* find(const void* address) {
        for (auto& e : entries)
            if (e.address == address) return &e;
        return nullptr;
    }
    void drop_idle() {
        std::erase_if(entries, [](const entry& e) { return idle(e); });
    }
    static bool idle(const entry& e) noexcept {
        return e.owner == 0 && e.entering == 0 && (e.waiting == 0 || CONTEND_MUTATION(monitor_drops_a_waited_entry));
    }
};

constexpr std::size_t stripe_count = 256;
constexpr std::size_t idle_kept = 8;
stripe stripes[stripe_count];

internal::atomic<std::uint64_t> contentions{0};

stripe& stripe_for(const void* address) noexcept {
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
    return stripes[(bits * 0x9E3779B97F4A7C15ull) >> 56];
}

[[noreturn]] void not_held(const char* what) {
    throw synchronization_error(std::string("contend::monitor::") + what +
                                ": the calling thread has not entered this address");
}

entry& add(stripe& s, const void* address, std::uint32_t owner) {
    if (s.entries.size() >= idle_kept) s.drop_idle();
    s.entries.push_back({address, 0, owner, 0, 0});
    return s.entries.back();
}

// With s.lock held and the address owned by someone else: waits until it is free and takes
// it, or until the deadline. Returns with s.lock held either way.
bool acquire_contended(stripe& s, const void* address, std::uint32_t me, internal::deadline until) {
    contentions.fetch_add(1, std::memory_order_relaxed);
    s.find(address)->entering++;
    for (;;) {
        parking_lot::park(
            monitor_enter_key(address), [] { return true; }, [&s] { s.lock.unlock(); }, until);
        s.lock.lock();
        entry* e = s.find(address);  // kept alive by our `entering` count
        if (e->owner == 0) {
            e->owner = me;
            e->recursion = 0;
            e->entering--;
            return true;
        }
        if (until != internal::no_deadline && internal::clock::now() >= until) {
            e->entering--;
            return false;
        }
    }
}

// With s.lock held, after the owner let go of e: the first thread waiting to enter, if any,
// must be woken once s.lock is released.
bool someone_to_wake(const entry& e) noexcept { return e.entering != 0; }

// With s.lock held: takes the address if nobody else holds it (a new entry, a re-entry, or
// an idle entry). False when another thread holds it.
bool take_if_free(stripe& s, const void* address, std::uint32_t me) {
    entry* e = s.find(address);
    if (e == nullptr) {
        add(s, address, me);
    } else if (e->owner == me) {
        ++e->recursion;
    } else if (e->owner == 0) {
        e->owner = me;
        e->recursion = 0;
    } else {
        return false;
    }
    return true;
}

// Locks s and returns the caller's entry for `address`; if the caller does not hold the
// address, unlocks s and throws, leaving everything as it was.
entry& lock_owned(stripe& s, const void* address, std::uint32_t me, const char* what) {
    s.lock.lock();
    entry* e = s.find(address);
    if (e == nullptr || e->owner != me) {
        s.lock.unlock();
        not_held(what);
    }
    return *e;
}

}  // namespace

void monitor::enter(const void* address) { (void)enter_until(address, internal::no_deadline); }

bool monitor::enter_until(const void* address, internal::deadline until) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    s.lock.lock();
    if (!take_if_free(s, address, me)) {
        if (!acquire_contended(s, address, me, until)) {
            entry* left = s.find(address);
            const bool wake = left->owner == 0 && someone_to_wake(*left);
            s.lock.unlock();
            if (wake) parking_lot::unpark_one(monitor_enter_key(address));
            return false;
        }
    }
    s.lock.unlock();
    ++internal::locks_held;
    return true;
}

bool monitor::try_enter(const void* address) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    s.lock.lock();
    const bool got = take_if_free(s, address, me);  // one shot: no waiting, no counters touched
    s.lock.unlock();
    if (got) ++internal::locks_held;
    return got;
}

void monitor::exit(const void* address) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    entry* e = &lock_owned(s, address, me, "exit");  // throws unless this thread entered
    --internal::locks_held;
    if (e->recursion > 0) {
        --e->recursion;
        s.lock.unlock();
        return;
    }
    e->owner = 0;
    const bool wake = someone_to_wake(*e);
    s.lock.unlock();
    if (wake) parking_lot::unpark_one(monitor_enter_key(address));
}

bool monitor::is_entered(const void* address) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    s.lock.lock();
    const entry* e = s.find(address);
    const bool mine = e != nullptr && e->owner == me;
    s.lock.unlock();
    return mine;
}

void monitor::wait(const void* address) { (void)wait_until(address, internal::no_deadline); }

bool monitor::wait_until(const void* address, internal::deadline until) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    entry* e = &lock_owned(s, address, me, "wait");
    const std::uint64_t depth = e->recursion;
    e->owner = 0;
    e->recursion = 0;
    e->waiting++;
    const bool wake = someone_to_wake(*e);
    // Queued for a pulse before the stripe is released: a pulse cannot come first.
    const auto result = parking_lot::park(
        monitor_pulse_key(address), [] { return true; },
        [&] {
            s.lock.unlock();
            if (wake) parking_lot::unpark_one(monitor_enter_key(address));
        },
        until);
    s.lock.lock();
    e = s.find(address);  // kept alive by our `waiting` count
    e->waiting--;
    if (e->owner == 0) {
        e->owner = me;
    } else {
        (void)acquire_contended(s, address, me, internal::no_deadline);  // no deadline: always true
        e = s.find(address);
    }
    e->recursion = depth;
    s.lock.unlock();
    return result.was_unparked();
}

bool internal::set_monitor_reentries_for_testing(const void* address, std::uint64_t extra) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    std::lock_guard guard(s.lock);
    entry* e = s.find(address);
    if (e == nullptr || e->owner != me) return false;
    e->recursion = extra;
    return true;
}

namespace {
void pulse_waiters(const void* address, bool all, const char* what) {
    const std::uint32_t me = internal::compact_thread_id();
    stripe& s = stripe_for(address);
    const bool any = lock_owned(s, address, me, what).waiting != 0;
    s.lock.unlock();
    if (!any || CONTEND_MUTATION(monitor_pulse_wakes_nobody)) return;
    if (all) parking_lot::unpark_all(monitor_pulse_key(address));
    else parking_lot::unpark_one(monitor_pulse_key(address));
}
}  // namespace

void monitor::pulse(const void* address) { pulse_waiters(address, false, "pulse"); }
void monitor::pulse_all(const void* address) { pulse_waiters(address, true, "pulse_all"); }

monitor_stats monitor::stats() {
    monitor_stats st;
    st.contentions = contentions.load(std::memory_order_relaxed);
    for (auto& s : stripes) {
        s.lock.lock();
        for (const auto& e : s.entries) st.live_address_entries += stripe::idle(e) ? 0 : 1;
        s.lock.unlock();
    }
    return st;
}

}  // namespace contend
