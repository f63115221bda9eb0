// contend::async_semaphore: a counting semaphore a coroutine awaits. `co_await s.acquire()`
// suspends the coroutine while no permit is left, instead of blocking the thread under it.
//
//   contend::async_semaphore connections(8);      // at most 8 at once
//   my_task fetch(...) {                           // a coroutine of any task type
//       co_await connections.acquire();
//       ... co_await the request ...
//       connections.release();
//   }
//
// The same queue as contend::async_mutex (async_mutex.hpp says where a waiter resumes and
// why): strict FIFO once anyone waits. release(n) hands each of its permits to the oldest
// waiter directly, so release(1) resumes at most one waiter, a waiter resumed always holds
// its permit, and nobody arriving takes a permit past the queue. An acquire that finds a
// permit with nobody queued takes it at once.
//
// Costs: 32 bytes. try_acquire() and an acquire() with a permit left are a load and a CAS;
// release() with nobody queued is a load and a CAS. A waiter allocates nothing.
//
// Stops and timeouts, as async_mutex's: acquire(std::stop_token) and acquire_for(d) resume
// with false, holding no permit, when the stop or the time comes first.
//
// Misuse (a negative initial count or release, a count above max()) throws
// synchronization_error and changes nothing. Destroying the semaphore while a coroutine or a
// thread waits for it ends the program with a message. Contended acquires are counted.
#pragma once

#include <chrono>
#include <cstddef>
#include <stop_token>
#include <utility>

#include "contend/internal/async_permits.hpp"
#include "contend/internal/deadline.hpp"

namespace contend {

class async_semaphore : private internal::async_permits {
public:
    // Throws synchronization_error unless 0 <= initial <= max().
    explicit async_semaphore(std::ptrdiff_t initial) : async_permits(initial, limit, kind::semaphore) {}

    static constexpr std::ptrdiff_t max() noexcept { return limit; }

    using acquire_awaiter = internal::async_permits::acquire_awaiter;
    using cancellable_acquire_awaiter = internal::async_permits::cancellable_awaiter;
    using timed_acquire_awaiter = internal::async_permits::timed_awaiter;

    // co_await s.acquire(): returns holding a permit.
    [[nodiscard]] acquire_awaiter acquire() noexcept { return acquire_awaiter(*this); }
    // co_await s.acquire(token): true holding a permit, false if the stop came first.
    [[nodiscard]] cancellable_acquire_awaiter acquire(std::stop_token token) noexcept {
        return cancellable_acquire_awaiter(*this, std::move(token));
    }
    // co_await s.acquire_for(d): true holding a permit, false if d passed first. Throws
    // synchronization_error off a thread_pool's workers.
    template <class Rep, class Period>
    [[nodiscard]] timed_acquire_awaiter acquire_for(const std::chrono::duration<Rep, Period>& d) {
        return timed_acquire_awaiter(*this, pool_for_timeout(), internal::saturated_duration(d));
    }

    using async_permits::try_acquire;
    // Adds n permits, each to the oldest waiter while any waits. Throws
    // synchronization_error if n < 0 or the count would exceed max().
    void release(std::ptrdiff_t n = 1) { async_permits::release(n, limit, "::release: the count would exceed max()"); }

    // From a plain thread: waits for a permit in the same queue as the coroutines.
    void blocking_acquire() { async_permits::blocking_acquire(internal::no_deadline); }
    template <class Rep, class Period>
    bool blocking_try_acquire_for(const std::chrono::duration<Rep, Period>& d) {
        return try_acquire() || async_permits::blocking_acquire(internal::deadline_after(d));
    }

    // The permits in the count now (a snapshot): zero while anyone waits.
    std::ptrdiff_t available() const noexcept { return async_permits::available(); }
};

}  // namespace contend
