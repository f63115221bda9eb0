// contend::async_mutex: a mutex a coroutine awaits. `co_await m.lock()` suspends the
// coroutine while another holds the mutex, instead of blocking the thread under it, so a
// pool's worker goes on running other items while the coroutine waits.
//
//   contend::async_mutex m;
//   my_task add(...) {                           // a coroutine of any task type
//       auto guard = co_await m.scoped_lock();   // suspends while m is held
//       ... co_await anything: m stays held, the worker is free ...
//   }                                            // the guard unlocks
//
// Ownership belongs to no thread: a coroutine may lock on one worker and unlock on another,
// and any thread may unlock (as with a binary semaphore). A plain thread can take it too,
// blocking (blocking_lock()).
//
// Order: strict FIFO once anyone waits. unlock() with waiters hands the mutex to the oldest
// one directly (it never becomes free in between, so nobody barges past the queue); a
// lock() that finds it free with nobody queued takes it at once. Cost of fairness: the
// mutex stays held while the waiter it was handed to is scheduled.
//
// Where a waiter resumes: on the pool whose worker it suspended on. When unlock() runs on a
// worker of that same pool, the waiter goes to that worker's own deque: it runs on this CPU
// once the unlocking item returns (where the data the lock protects is in cache), or on an
// idle worker that steals it sooner. Otherwise it goes to the pool's global queue. Resuming
// on the unlocking thread instead would run the waiter's whole continuation inside unlock(),
// and a chain of hand-offs would nest one inside the other. A coroutine that suspended off
// every pool (driven by hand) is resumed inline by unlock(), before it returns.
//
// Costs: 32 bytes. try_lock() and an uncontended lock() are a load and a CAS; unlock() with
// nobody queued is a load and a CAS. A waiter allocates nothing (its queue entry and its
// pool work item live in the coroutine's frame); a timed lock allocates its timer and a stop
// state. The queue is guarded by a word lock held for a few dozen instructions, never while
// a waiter is resumed.
//
// Stops and timeouts: lock(std::stop_token) and lock_for(d) resume with false, not holding
// the mutex, when the stop or the time comes first; a waiter handed the mutex at that
// instant returns true and holds it. lock_for needs a coroutine on a contend::thread_pool's
// worker (the timeout is that pool's timer); elsewhere it throws synchronization_error.
//
// Misuse: unlock() of a mutex that is not locked throws synchronization_error and changes
// nothing. Destroying the mutex while a coroutine or a thread waits for it ends the program
// with a message (they would wait for ever), as destroying a joinable std::thread does.
// Not detected, and the caller's to avoid: destroying a waiting coroutine's frame (its queue
// entry is in it), destroying the pool a coroutine waits to resume on before its wait ends,
// and a coroutine locking a mutex it holds (it waits for itself, as with std::mutex).
// Contended lock()s are counted (contend::lock_contention_count()).
#pragma once

#include <chrono>
#include <coroutine>
#include <mutex>
#include <stop_token>
#include <utility>

#include "contend/internal/async_permits.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/synchronization_error.hpp"

namespace contend {

class async_mutex;

// Owns a locked async_mutex and unlocks it when destroyed (or at unlock()). Move-only.
class async_lock_guard {
public:
    async_lock_guard() noexcept = default;
    async_lock_guard(async_mutex& m, std::adopt_lock_t) noexcept : mutex_(&m) {}
    async_lock_guard(async_lock_guard&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    async_lock_guard& operator=(async_lock_guard&& other) noexcept {
        if (this != &other) {
            reset();
            mutex_ = std::exchange(other.mutex_, nullptr);
        }
        return *this;
    }
    ~async_lock_guard() { reset(); }

    bool owns_lock() const noexcept { return mutex_ != nullptr; }
    explicit operator bool() const noexcept { return owns_lock(); }
    // Unlocks now. Throws synchronization_error if the guard owns nothing.
    void unlock();
    // Gives up ownership without unlocking; returns the mutex (or nullptr).
    async_mutex* release() noexcept { return std::exchange(mutex_, nullptr); }

private:
    void reset() noexcept;
    async_mutex* mutex_ = nullptr;
};

class async_mutex : private internal::async_permits {
public:
    async_mutex() : async_permits(1, 1, kind::mutex) {}

    using lock_awaiter = internal::async_permits::acquire_awaiter;
    using cancellable_lock_awaiter = internal::async_permits::cancellable_awaiter;
    using timed_lock_awaiter = internal::async_permits::timed_awaiter;

    // co_await m.lock(): returns holding the mutex.
    [[nodiscard]] lock_awaiter lock() noexcept { return lock_awaiter(*this); }
    // co_await m.lock(token): true holding the mutex, false if the stop came first.
    [[nodiscard]] cancellable_lock_awaiter lock(std::stop_token token) noexcept {
        return cancellable_lock_awaiter(*this, std::move(token));
    }
    // co_await m.lock_for(d): true holding the mutex, false if d passed first. Throws
    // synchronization_error off a thread_pool's workers. Saturating: any duration, NaN too.
    template <class Rep, class Period>
    [[nodiscard]] timed_lock_awaiter lock_for(const std::chrono::duration<Rep, Period>& d) {
        return timed_lock_awaiter(*this, pool_for_timeout(), internal::saturated_duration(d));
    }

    // co_await m.scoped_lock(): an async_lock_guard holding the mutex.
    class scoped_lock_awaiter {
    public:
        explicit scoped_lock_awaiter(async_mutex& m) noexcept : mutex_(m), inner_(m) {}
        bool await_ready() noexcept { return inner_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) noexcept { return inner_.await_suspend(h); }
        async_lock_guard await_resume() const noexcept { return async_lock_guard(mutex_, std::adopt_lock); }

    private:
        async_mutex& mutex_;
        lock_awaiter inner_;
    };
    [[nodiscard]] scoped_lock_awaiter scoped_lock() noexcept { return scoped_lock_awaiter(*this); }

    bool try_lock() noexcept { return try_acquire(); }
    // Hands the mutex to the oldest waiter, or frees it. Throws synchronization_error if it
    // is not locked.
    void unlock() { release(1, 1, "::unlock: the mutex is not locked"); }

    // From a plain thread (or a worker, which it then blocks): waits for the mutex in the
    // same queue as the coroutines.
    void blocking_lock() { blocking_acquire(internal::no_deadline); }
    template <class Rep, class Period>
    bool blocking_try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_acquire() || blocking_acquire(internal::deadline_after(d));
    }
};

inline void async_lock_guard::unlock() {
    if (mutex_ == nullptr) throw synchronization_error("contend::async_lock_guard::unlock: the guard owns no mutex");
    std::exchange(mutex_, nullptr)->unlock();
}

inline void async_lock_guard::reset() noexcept {
    if (mutex_ != nullptr) std::exchange(mutex_, nullptr)->unlock();
}

}  // namespace contend
