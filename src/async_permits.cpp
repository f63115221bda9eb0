// The slow paths of contend::async_mutex and contend::async_semaphore.
//
// Why no waiter is left behind: a waiter queues, and sets QUEUED in the same lock hold, only
// while the count is zero. A release adds to the count only with a CAS that finds QUEUED
// clear; one that finds it set takes the queue lock and hands its permits to the queue's
// head. So a release either sees the waiter's QUEUED (and serves it) or made its CAS before
// the waiter's, which then fails, and the waiter finds the permit. A stop or a timeout takes
// its waiter off the queue under the same lock, so a permit goes either to the waiter (which
// then returns holding it, stop or not) or elsewhere, never to a waiter that left.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "contend/async_mutex.hpp"
#include "contend/async_semaphore.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contend/thread_pool.hpp"
#include "contention_counter.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

namespace {
// The pool's work item for a waiter: resume its coroutine. The node is part of the waiter,
// which is part of the coroutine's frame: nothing to free, and nothing to touch afterwards.
void resume_coroutine(task_node* n) { static_cast<async_waiter*>(n)->handle.resume(); }
// A pool torn down with the item queued (it runs every item posted before its destructor
// began, so only a release racing that destructor gets here): resume it here rather than
// leave the coroutine suspended for ever.
void resume_discarded(task_node* n) noexcept { static_cast<async_waiter*>(n)->handle.resume(); }
}  // namespace

async_waiter::async_waiter() noexcept : task_node{&resume_coroutine, &resume_discarded} {}

async_permits::async_permits(std::ptrdiff_t initial, std::ptrdiff_t max, kind k) : state_(0), kind_(k) {
    if (initial < 0 || initial > max)
        throw synchronization_error(std::string(what()) + ": the initial count must be between 0 and max()");
    state_.store(static_cast<std::uint64_t>(initial) << 1, std::memory_order_relaxed);
}

const char* async_permits::what() const noexcept {
    return kind_ == kind::mutex ? "contend::async_mutex" : "contend::async_semaphore";
}

async_permits::~async_permits() {
    if (head_ != nullptr) {
        std::fprintf(stderr, "%s destroyed while a coroutine or a thread waits for it: ending the program\n", what());
        std::abort();
    }
}

bool async_permits::take_or_queue(async_waiter& w) noexcept {
    count_contention();
    std::unique_lock guard(queue_lock_);
    if (w.cancel_requested) return false;
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (s >> 1 != 0) {  // a permit came back meanwhile (and so nobody is queued)
            if (state_.compare_exchange_weak(s, s - 2, std::memory_order_acquire, std::memory_order_relaxed)) {
                w.granted = true;
                return false;
            }
            continue;
        }
        if (s & queued_bit) break;
        if (CONTEND_MUTATION(async_lock_marks_after_queueing)) break;
        if (state_.compare_exchange_weak(s, s | queued_bit, std::memory_order_acquire, std::memory_order_relaxed))
            break;
    }
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.queued = true;
    if (CONTEND_MUTATION(async_lock_marks_after_queueing)) {
        guard.unlock();
        state_.fetch_or(queued_bit, std::memory_order_relaxed);
    }
    return true;
}

void async_permits::release(std::ptrdiff_t n, std::ptrdiff_t max, const char* too_many) {
    if (n < 0) throw synchronization_error(std::string(what()) + ": a negative release");
    if (n == 0) return;
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    while (!(s & queued_bit) || CONTEND_MUTATION(async_release_ignores_the_waiters_mark)) {
        if (n > max - static_cast<std::ptrdiff_t>(s >> 1)) throw synchronization_error(std::string(what()) + too_many);
        if (state_.compare_exchange_weak(s, s + (static_cast<std::uint64_t>(n) << 1), std::memory_order_release,
                                         std::memory_order_relaxed))
            return;
    }
    async_waiter* first = nullptr;  // those handed a permit, in queue order, linked by next
    async_waiter** last = &first;
    {
        std::lock_guard guard(queue_lock_);
        s = state_.load(std::memory_order_relaxed);
        // With nobody queued (they left, stopped) another release may have raised the count.
        const std::ptrdiff_t in_count = head_ ? 0 : static_cast<std::ptrdiff_t>(s >> 1);
        if (n > max - in_count) throw synchronization_error(std::string(what()) + too_many);
        while (n > 0 && head_ != nullptr) {
            async_waiter* w = head_;
            head_ = w->next;
            (head_ ? head_->prev : tail_) = nullptr;
            w->queued = false;
            w->granted = true;
            w->next = nullptr;
            *last = w;
            last = &w->next;
            --n;
        }
        if (head_ == nullptr) {  // the queue is empty: clear QUEUED, the rest into the count
            while (!state_.compare_exchange_weak(s, (s & ~queued_bit) + (static_cast<std::uint64_t>(n) << 1),
                                                 std::memory_order_release, std::memory_order_relaxed)) {
            }
        }
    }
    while (first != nullptr) {
        async_waiter* w = first;
        first = w->next;  // before the resumption, which may end the waiter's frame
        resume(*w);
    }
}

void async_permits::cancel(async_waiter& w) noexcept {
    {
        std::lock_guard guard(queue_lock_);
        if (!w.queued) {  // not yet queued (it will not), or a release handed it a permit
            w.cancel_requested = true;
            return;
        }
        (w.prev ? w.prev->next : head_) = w.next;
        (w.next ? w.next->prev : tail_) = w.prev;
        w.queued = false;
        if (head_ == nullptr) state_.fetch_and(~queued_bit, std::memory_order_relaxed);  // the count is zero
    }
    resume(w);
}

// A coroutine resumes on the pool it suspended on: on the releasing worker's own deque when
// the release runs on that pool (it runs there next, where the data the releaser just wrote
// is in cache, unless an idle worker steals it first), on the global queue otherwise. Off
// every pool it resumes here, on the releasing thread, before release() returns.
void async_permits::resume(async_waiter& w) noexcept {
    if (!w.handle) {
        // A blocked thread: set its flag under the bucket lock, so that it cannot return (and
        // end the waiter) before this call has finished with it.
        parking_lot::unpark_one(&w.woken, [&w](parking_lot::unpark_result) -> std::intptr_t {
            w.woken.store(1, std::memory_order_release);
            return 0;
        });
        return;
    }
    if (w.pool == nullptr) {
        w.handle.resume();
        return;
    }
    thread_pool* pool = w.pool;
    pool->post_node(&w, thread_pool::current() == pool);
}

bool async_permits::blocking_acquire(deadline until) {
    if (try_acquire()) return true;
    async_waiter w;
    if (!take_or_queue(w)) return true;  // a permit after all (a thread's wait is not stopped)
    for (;;) {
        const auto r = parking_lot::park(
            &w.woken, [&w] { return w.woken.load(std::memory_order_relaxed) == 0; }, until);
        if (w.woken.load(std::memory_order_acquire) != 0) return true;
        if (r.status != parking_lot::park_status::timed_out) continue;  // a stale unpark: look again
        {
            std::lock_guard guard(queue_lock_);
            if (w.queued) {
                (w.prev ? w.prev->next : head_) = w.next;
                (w.next ? w.next->prev : tail_) = w.prev;
                w.queued = false;
                if (head_ == nullptr) state_.fetch_and(~queued_bit, std::memory_order_relaxed);
                return false;
            }
        }
        // A release handed us a permit as the time ran out: wait for its wake-up, which is
        // on its way and touches w, and keep the permit.
        until = no_deadline;
    }
}

thread_pool& async_permits::pool_for_timeout() const {
    thread_pool* pool = thread_pool::current();
    if (pool == nullptr)
        throw synchronization_error(std::string(what()) +
                                    ": a timed wait needs a coroutine on a contend::thread_pool's worker (the "
                                    "timeout is one of that pool's timers); use a std::stop_token elsewhere");
    return *pool;
}

bool async_permits::acquire_awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    waiter_.handle = h;
    waiter_.pool = thread_pool::current();
    return permits_.take_or_queue(waiter_);
}

bool async_permits::cancellable_awaiter::await_ready() noexcept {
    if (token_.stop_requested()) return true;
    got_ = permits_.try_acquire();
    return got_;
}

bool async_permits::cancellable_awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    waiter_.handle = h;
    waiter_.pool = thread_pool::current();
    // Before queueing: a stop from now on finds the waiter either not yet queued (and marks
    // it) or queued (and takes it off). A stop already requested runs cancel() right here.
    callback_.emplace(token_, canceller{this});
    if (permits_.take_or_queue(waiter_)) return true;  // from here the waiter is not ours to touch
    got_ = waiter_.granted;
    return false;
}

bool async_permits::cancellable_awaiter::await_resume() noexcept {
    // Waits for a stop callback running on another thread right now: it may still be
    // finishing the resumption that brought us here.
    callback_.reset();
    return got_ || waiter_.granted;
}

bool async_permits::timed_awaiter::await_suspend(std::coroutine_handle<> h) {
    // The timer first: once queued the waiter (and this awaiter) may be resumed and gone.
    timer_ = pool_.post_after(delay_, [source = source_] { source->request_stop(); });
    return inner_.await_suspend(h);
}

bool async_permits::timed_awaiter::await_resume() noexcept {
    const bool got = inner_.await_resume();
    if (timer_ != 0) pool_.cancel_timer(timer_);
    return got;
}

}  // namespace contend::internal
