// contend::monitor: lock any address without embedding anything in the object (C#'s
// lock(obj), Java's synchronized): recursive enter/exit, one-shot try_enter, timed
// try_enter_for, and Monitor.Wait/Pulse.
//
// Addresses map to entries in a striped table (256 stripes, each a contend::mutex and a
// small vector of entries). An entry records the owner's compact thread id, the recursion
// depth and how many threads wait to enter or wait for a pulse. It is created by the first
// enter of its address. The exit that leaves it unowned and unwaited does not remove it:
// the next enter of the same address reuses it, and it goes when an enter of another
// address needs room in a stripe that already holds 8 entries or more (every idle entry of
// that stripe is dropped then). So a stripe holds at most 8 entries or the number of its
// addresses in use at once, whichever is more: memory follows the peak number of addresses
// in use, not the number of distinct addresses that pass through.
//
// Waiting threads park in the parking lot under keys derived from the address (top bits
// set, so they collide with no contend::mutex or thin_lock key; src/parking_keys.hpp),
// enqueued before the stripe is released, so an exit or pulse cannot slip past them.
//
// Misuse (exit without enter, by another thread, or more exits than enters; wait or pulse
// without holding) throws synchronization_error and leaves the address's state unchanged.
//
// Why not the thin_lock's fat locks. A thin_lock finds its fat lock by the index in its own
// word, and the sync table exists to make that index stable while a sweep deflates locks
// nobody uses. An address has no word: whatever backs it must be found by the address, under
// a lock, on every enter and exit, which is what a stripe's short vector is; a fat lock
// behind each entry would add an allocation and a second lock (its contend::mutex) to that
// path, and an index nobody reads. What the two share is the parking lot, where both wait.
// thin_lock's deflation controls and counters are thin_lock's (thin_lock.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "contend/internal/deadline.hpp"

namespace contend {

struct monitor_stats {
    std::uint64_t contentions = 0;  // monitor enters that had to wait, ever
    std::size_t live_address_entries = 0;  // monitor entries in use (addresses entered or waited on)
};

class monitor {
public:
    monitor() = delete;

    static void enter(const void* address);
    // One shot: takes the address if it is free (or already ours); never waits.
    static bool try_enter(const void* address);
    template <class Rep, class Period>
    static bool try_enter_for(const void* address, const std::chrono::duration<Rep, Period>& d) {
        return enter_until(address, internal::deadline_after(d));
    }
    static void exit(const void* address);
    static bool is_entered(const void* address);

    static void wait(const void* address);
    // False on timeout; the address is held again, at the same depth, either way.
    template <class Rep, class Period>
    static bool wait_for(const void* address, const std::chrono::duration<Rep, Period>& d) {
        return wait_until(address, internal::deadline_after(d));
    }
    static void pulse(const void* address);
    static void pulse_all(const void* address);

    static monitor_stats stats();

private:
    static bool enter_until(const void* address, internal::deadline until);
    static bool wait_until(const void* address, internal::deadline until);
};

namespace internal {
// Tests only: sets the calling thread's extra entries (re-entries) of `address` to `extra`,
// so that a test reaches a depth of billions without as many calls. The thread must have
// entered `address`; false, changing nothing, otherwise. The count of locks held
// (thread_id.hpp) is not changed: the test unwinds to its own depth before it exits.
bool set_monitor_reentries_for_testing(const void* address, std::uint64_t extra);
}  // namespace internal

}  // namespace contend
