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
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "contend/internal/deadline.hpp"

namespace contend {

struct monitor_stats {
    std::uint64_t inflations = 0;  // thin_locks inflated to fat locks, ever
    std::uint64_t deflations = 0;  // idle fat locks turned back into thin ones, ever (not destructions)
    std::uint64_t contentions = 0;  // monitor enters that had to wait, ever
    std::size_t live_fat_locks = 0;  // sync-table entries in use
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

    // Deflation of thin_locks (thin_lock.hpp). A background thread, started by the first
    // inflation, sweeps the fat locks every interval: a sweep marks each unowned one idle and
    // deflates those the previous sweep marked that no thread has acquired since, that
    // nobody holds and nobody waits on. So a lock is thin again after one to two intervals
    // of disuse. Zero stops the background sweeps (a lock then stays fat until a sweep is
    // asked for or the thin_lock is destroyed). Default 100 ms; longer than 24 hours counts
    // as 24 hours.
    static void set_deflation_interval(std::chrono::milliseconds interval);
    static std::chrono::milliseconds deflation_interval();
    // One sweep now, on the calling thread; returns how many locks it deflated. Two calls
    // with no acquisition of a lock between them deflate it.
    static std::size_t deflate_idle_locks();

private:
    static bool enter_until(const void* address, internal::deadline until);
    static bool wait_until(const void* address, internal::deadline until);
};

}  // namespace contend
