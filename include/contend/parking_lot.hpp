// contend::parking_lot: wait and wake keyed by address.
//
// The bottom layer every blocking primitive in contend is built on (after WebKit's
// WTF::ParkingLot and Rust's parking_lot_core). A thread "parks" on any address, and
// another thread "unparks" the threads parked on that address. The parking lot knows no
// lock type: it only keeps, per address, a FIFO queue of parked threads.
//
// Structure: a hash table of buckets, each padded to a cache line and guarded by its own
// small word lock. A bucket holds a FIFO queue of parked threads for every address that
// hashes to it. The table grows (at least 3 buckets per live thread that has parked, WTF's
// maxLoadFactor) and never shrinks; growth takes every bucket lock of the old table, so no parked
// thread is lost or reordered while it grows. Each bucket keeps a randomized fairness
// deadline, 0 to 1 ms ahead (WTF and parking_lot use the same window): unpark_one tells its
// callback when that deadline has passed, so a lock can hand itself directly to the woken
// thread at least about once per millisecond and no waiter starves.
//
// Costs: park and unpark take one bucket lock (uncontended: one CAS and one exchange).
// A park that sleeps costs an OS wait (a futex on Linux, see contend/wait_backend.hpp); an
// unpark that finds a thread, an OS wake.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "contend/internal/deadline.hpp"
#include "contend/internal/function_ref.hpp"

namespace contend::parking_lot {

// steady_clock (the model-checking build's model clock, whose time points are steady_clock's:
// internal/deadline.hpp).
using clock = internal::clock;

// What park() returned.
enum class park_status {
    unparked,  // another thread called unpark_one/unpark_all on the address
    timed_out,  // the deadline passed first
    invalid,  // validate() returned false; the thread never slept
};

struct park_result {
    park_status status = park_status::invalid;
    // The value the unparker's callback returned (0 for timeouts and for the unpark_all without a callback).
    std::intptr_t token = 0;
    // unpark_requeue_one moved the thread to another address's queue before it was unparked
    // or timed out there (then `token` is the last unparker's, on the other address).
    bool requeued = false;

    bool was_unparked() const noexcept { return status == park_status::unparked; }
};

// What an unpark_one callback learns. It runs under the bucket lock, so it sees a state
// that no park on the same address can change under it.
struct unpark_result {
    bool did_unpark_thread = false;  // a thread was taken off the queue and will be woken
    bool did_requeue_thread = false;  // unpark_requeue_one moved a thread instead (not woken)
    bool may_have_more_threads = false;  // more threads remain parked on this address
    bool time_to_be_fair = false;  // the bucket's fairness deadline passed (only when a thread was unparked)
};

// An unpark_all callback's answer that leaves every thread parked.
inline constexpr std::intptr_t keep_parked = INTPTR_MIN;

// What an unpark_all callback learns, under the bucket lock.
struct unpark_all_result {
    std::size_t threads = 0;  // taken off the queue, to be woken
    bool time_to_be_fair = false;  // the bucket's fairness deadline passed (only when threads > 0)
};

namespace detail {
park_result park(const void* address, internal::function_ref<bool()> validate,
                 internal::function_ref<void()> before_sleep, clock::time_point deadline, const void* requeue_context,
                 std::chrono::nanoseconds poll = std::chrono::nanoseconds::zero());
unpark_result unpark_one(const void* address, internal::function_ref<std::intptr_t(unpark_result)> callback);
unpark_result unpark_requeue_one(const void* from, internal::function_ref<const void*(const void*)> target,
                                 internal::function_ref<bool(const void*)> validate,
                                 internal::function_ref<std::intptr_t(unpark_result)> callback);
std::size_t unpark_all(const void* address, internal::function_ref<std::intptr_t(unpark_all_result)> callback);
// Whether this thread's last park was requeued (read by a caller whose park threw).
bool this_thread_was_requeued() noexcept;
// This thread's parks with a poll: how many polled, how many of those the unpark came
// within, and how many slept at once because this thread's recent polls had not paid.
struct poll_counts {
    std::uint64_t polled = 0;
    std::uint64_t won = 0;
    std::uint64_t skipped = 0;
    std::uint64_t missed_shared = 0;  // ran out after its yields on a shared CPU
    std::uint64_t near_misses = 0;  // ran out, and the unpark came soon after
    std::uint64_t sleeps = 0;  // waits in the OS backend, by any park of this thread, polled or not
};
poll_counts this_thread_poll_counts() noexcept;
}  // namespace detail

// Parks the calling thread on `address`:
//  1. takes the bucket lock and calls validate(); if it returns false, returns `invalid`
//     at once (the thread never sleeps). validate runs under the bucket lock, so an
//     unparker that changes the state it checks and then unparks cannot slip in between.
//  2. enqueues the thread (FIFO per address), releases the bucket lock, calls
//     before_sleep() (a condition variable releases its lock here), and sleeps;
//  3. returns `unparked` with the unparker's token, or `timed_out` once `deadline` passes.
// validate must not park or throw. If before_sleep throws, the thread is taken off the
// queue and the exception propagates (a token sent to it in that instant is dropped).
template <class Validate, class BeforeSleep>
park_result park(const void* address, Validate&& validate, BeforeSleep&& before_sleep,
                 clock::time_point deadline = internal::no_deadline) {
    return detail::park(address, validate, before_sleep, deadline, nullptr);
}

template <class Validate>
park_result park(const void* address, Validate&& validate, clock::time_point deadline = internal::no_deadline) {
    const auto nothing_before_sleep = [] {};
    return detail::park(address, validate, nothing_before_sleep, deadline, nullptr);
}

// park(), leaving `context` (not null) for an unpark_requeue_one on `address` to decide
// with. A requeued thread is asleep on the other address and has its unparker's token; if
// it times out there, or a throwing before_sleep or a cancellation takes it off that queue,
// it learns so from park_result::requeued or detail::this_thread_was_requeued().
//
// A `poll` above zero makes the thread, once queued and past before_sleep, watch for its
// unpark for up to that long (pausing, and yielding its CPU as internal spin_wait does)
// before it sleeps: an unpark that comes within the poll costs the thread no sleep and no
// wake-up latency, which across CPUs is most of a hand-off's time, and costs the unparker no
// system call. The cost is up to `poll` of CPU time per park that waits longer. Once a yield
// shows that another thread wants the CPU, the poll is a few yields instead (at most 8),
// whatever `poll` says. A thread whose last three polls ran out on a CPU of its own, each
// followed by a wait over twice the poll, sleeps at once instead, polling again on one park
// in 16 to see whether polling pays again (src/parking_lot.cpp says why). Being queued, the
// thread is unparked, requeued and timed out exactly as without the poll.
template <class Validate, class BeforeSleep>
park_result park_requeueable(const void* address, const void* context, Validate&& validate, BeforeSleep&& before_sleep,
                             clock::time_point deadline = internal::no_deadline,
                             std::chrono::nanoseconds poll = std::chrono::nanoseconds::zero()) {
    return detail::park(address, validate, before_sleep, deadline, context, poll);
}

// Unparks the longest-parked thread on `address`, if any. callback(unpark_result) runs
// under the bucket lock whether or not a thread was found; its return value becomes the
// unparked thread's token. The thread is woken after the bucket lock is released.
template <class Callback>
unpark_result unpark_one(const void* address, Callback&& callback) {
    return detail::unpark_one(address, callback);
}

inline unpark_result unpark_one(const void* address) {
    return detail::unpark_one(address, [](unpark_result) -> std::intptr_t { return 0; });
}

// Wakes or moves the longest-parked thread on `from` (what a condition variable's notify
// does when the waiter would only find its mutex held: it moves to the mutex's queue and is
// woken by the unlock, once). If that thread parked with a context (park_requeueable),
// target(context) names the address to move it to, or nullptr; then, with both addresses'
// bucket locks held, validate(context) decides: true moves it (to the back of that queue,
// with its own deadline still running), false unparks it as unpark_one would. callback runs
// under the lock(s) in every case, told did_unpark_thread or did_requeue_thread; its value is
// the token of an unparked thread and is ignored for a moved one. validate and callback must
// not park or take a bucket lock. Costs one more bucket lock than unpark_one when it moves.
template <class Target, class Validate, class Callback>
unpark_result unpark_requeue_one(const void* from, Target&& target, Validate&& validate, Callback&& callback) {
    return detail::unpark_requeue_one(from, target, validate, callback);
}

// Unparks every thread parked on `address`; returns how many.
std::size_t unpark_all(const void* address);

// unpark_all, calling callback(unpark_all_result) under the bucket lock once the threads
// (possibly none) are off the queue and before any is woken; its value becomes every one's
// token, or, if it returns keep_parked, no thread is unparked at all (a lock that learns here
// that the parked threads' turn has not come). A lock that hands itself to all its parked
// readers at once counts them here, where no thread can park on or leave the address.
// callback must not park or take a bucket lock. Returns how many threads it unparked.
template <class Callback>
std::size_t unpark_all(const void* address, Callback&& callback) {
    return detail::unpark_all(address, callback);
}

// Diagnostics, for tests and the lab.
struct table_stats {
    std::size_t buckets = 0;  // current table size
    std::size_t threads = 0;  // threads that have a parking slot (ever parked, still alive)
    std::size_t growths = 0;  // times the table grew
};
table_stats stats();

}  // namespace contend::parking_lot
