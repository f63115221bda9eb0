// What contend::async_mutex and contend::async_semaphore share: a count of permits and a FIFO
// queue of waiters, each a suspended coroutine or a blocked thread. Internal.
//
// One word of state, like the blocking semaphore's: the permits shifted left by one and
// QUEUED (bit 0), set while the queue holds a waiter. The fast paths are one CAS on it and
// touch nothing else: an acquire that finds a permit and QUEUED clear, a release that finds
// QUEUED clear. Everything else takes the queue lock (a word_lock, held for a few dozen
// instructions and never across a resumption or a wake-up).
//
// Invariants, under the queue lock: QUEUED set <=> the queue is not empty, and then the count
// is zero (a waiter queues only while it is; a release that finds QUEUED set hands its
// permits to the queue's head instead of the count). So while anyone waits, nobody arriving
// takes a permit past them: waiters are served in the order they queued.
//
// A waiter handed a permit is resumed after the queue lock is released: a coroutine on the
// pool it suspended on (see async_mutex.hpp for where and why), a coroutine that suspended
// off every pool inline on the releasing thread, a blocked thread through the parking lot.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/task.hpp"
#include "contend/internal/word_lock.hpp"

namespace contend {

class thread_pool;

namespace internal {

// One waiter. For a coroutine it lives in the coroutine's frame (the awaiter), so queueing
// allocates nothing; it is also the pool work item that resumes the coroutine (task_node),
// so the hand-off allocates nothing either. For a blocked thread it lives on its stack.
struct async_waiter : task_node {
    async_waiter() noexcept;
    async_waiter* prev = nullptr;  // the queue's links, under the queue lock
    async_waiter* next = nullptr;
    std::coroutine_handle<> handle;  // empty for a blocked thread
    thread_pool* pool = nullptr;  // the pool the coroutine suspended on, or none
    bool queued = false;  // under the queue lock
    bool cancel_requested = false;  // under the queue lock: a stop came before it queued
    bool granted = false;  // written before the waiter is resumed, read after
    internal::atomic<std::uint32_t> woken{0};  // a blocked thread's: set when resumed (parking key)
};

class async_permits {
public:
    async_permits(const async_permits&) = delete;
    async_permits& operator=(const async_permits&) = delete;

    static constexpr std::ptrdiff_t limit = static_cast<std::ptrdiff_t>(INTPTR_MAX >> 1);

    // A permit if one is in the count and nobody waits (QUEUED clear): one load and a CAS.
    bool try_acquire() noexcept {
        std::uint64_t s = state_.load(std::memory_order_relaxed);
        while (s >> 1 != 0 && !(s & queued_bit)) {
            if (state_.compare_exchange_weak(s, s - 2, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    // co_await: a permit, suspending while none is left.
    class acquire_awaiter {
    public:
        explicit acquire_awaiter(async_permits& p) noexcept : permits_(p) {}
        bool await_ready() noexcept { return permits_.try_acquire(); }
        bool await_suspend(std::coroutine_handle<> h) noexcept;
        void await_resume() const noexcept {}

    private:
        async_permits& permits_;
        async_waiter waiter_;
    };

    // co_await: true with a permit, false if `token` was stopped first (no permit taken).
    class cancellable_awaiter {
    public:
        cancellable_awaiter(async_permits& p, std::stop_token token) noexcept : permits_(p), token_(std::move(token)) {}
        cancellable_awaiter(cancellable_awaiter&& other) noexcept
            : permits_(other.permits_), token_(std::move(other.token_)) {}
        bool await_ready() noexcept;
        bool await_suspend(std::coroutine_handle<> h) noexcept;
        bool await_resume() noexcept;

    private:
        struct canceller {
            cancellable_awaiter* self;
            void operator()() const noexcept { self->permits_.cancel(self->waiter_); }
        };
        async_permits& permits_;
        std::stop_token token_;
        async_waiter waiter_;
        std::optional<std::stop_callback<canceller>> callback_;
        bool got_ = false;  // decided without suspending
    };

    // co_await: true with a permit, false if `delay` passed first (no permit taken). The
    // timeout is a timer of the pool the coroutine runs on, stopping a stop source.
    class timed_awaiter {
    public:
        timed_awaiter(async_permits& p, thread_pool& pool, std::chrono::steady_clock::duration delay)
            : source_(std::make_shared<std::stop_source>()),
              inner_(p, source_->get_token()),
              pool_(pool),
              delay_(delay) {}
        bool await_ready() noexcept { return inner_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h);
        bool await_resume() noexcept;

    private:
        std::shared_ptr<std::stop_source> source_;  // shared with the timer, which may outlive us
        cancellable_awaiter inner_;
        thread_pool& pool_;
        std::chrono::steady_clock::duration delay_;
        std::uint64_t timer_ = 0;
    };

protected:
    enum class kind : std::uint8_t { mutex, semaphore };  // which type, for messages
    // Throws synchronization_error unless 0 <= initial <= max.
    async_permits(std::ptrdiff_t initial, std::ptrdiff_t max, kind k);
    // Ends the program (with a message naming the type) if a waiter is queued: its coroutine
    // or thread would wait for ever on a lock that no longer exists.
    ~async_permits();

    // Adds n permits: each to the queue's head while a waiter is queued, the rest to the
    // count. Throws synchronization_error (what() + too_many), changing nothing, if the count
    // would pass max.
    void release(std::ptrdiff_t n, std::ptrdiff_t max, const char* too_many);
    // Blocks the calling thread for a permit; false if `until` passed first.
    bool blocking_acquire(deadline until);
    // The pool whose timer ends a timed acquire: the calling thread's. Throws
    // synchronization_error off every pool's workers.
    thread_pool& pool_for_timeout() const;
    // The count now (a snapshot), and whether anyone waits.
    std::ptrdiff_t available() const noexcept {
        return static_cast<std::ptrdiff_t>(state_.load(std::memory_order_relaxed) >> 1);
    }

    // "contend::async_mutex" or "contend::async_semaphore".
    const char* what() const noexcept;

private:
    friend class acquire_awaiter;
    friend class cancellable_awaiter;
    friend class timed_awaiter;
    static constexpr std::uint64_t queued_bit = 1;

    // Under the queue lock: a permit if there is one (false), or the waiter queued (true).
    // A waiter whose stop came before it could queue is neither: cancelled (false, no permit).
    bool take_or_queue(async_waiter& w) noexcept;
    // A stop: off the queue (resumed without a permit) if it is still there.
    void cancel(async_waiter& w) noexcept;
    static void resume(async_waiter& w) noexcept;

    internal::atomic<std::uint64_t> state_;
    word_lock queue_lock_;
    kind kind_;  // in the word lock's padding: 32 bytes in all
    async_waiter* head_ = nullptr;  // under queue_lock_
    async_waiter* tail_ = nullptr;
};

}  // namespace internal
}  // namespace contend
