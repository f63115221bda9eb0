// Models of contend::async_mutex and contend::async_semaphore: an unlock racing a coroutine's
// suspending lock; a release racing a thread's timed acquire with a coroutine queued behind
// it; and the mutations the checker must find. The coroutines here run off every pool, so a
// release resumes them inline, on the releasing model thread.
//
// The stop_token form is not modelled: std::stop_callback's destructor waits for a callback
// running on another thread in the C++ library's own futex, which the scheduler cannot see.
// Its races are the stress test's (tests/async_semaphore_test.cpp), under ThreadSanitizer.
#include "../fire_and_forget.hpp"
#include "contend/async_mutex.hpp"
#include "contend/async_semaphore.hpp"
#include "contend/internal/atomic.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using contend_test::fire_and_forget;
using model_test::expect_found;

internal::atomic<int> granted{0};
internal::atomic<bool> timed_got{false};

fire_and_forget lock_then_count(async_mutex& m) {
    co_await m.lock();
    granted.fetch_add(1, std::memory_order_relaxed);
    m.unlock();
}

fire_and_forget acquire_then_count(async_semaphore& s) {
    co_await s.acquire();
    granted.fetch_add(1, std::memory_order_relaxed);
}

// Main holds the mutex; a thread's coroutine locks it (finding it held, it queues and
// suspends) while main unlocks. The coroutine must be handed the mutex exactly once, by the
// unlock or by its own lock, and leave it free.
void unlock_races_a_suspending_lock() {
    granted.store(0);
    async_mutex m;
    model::check(m.try_lock(), "a new mutex was not free");
    model::thread t([&m] { lock_then_count(m); });
    m.unlock();
    t.join();
    model::check(granted.load() == 1, "the coroutine was never handed the mutex: it waits for ever");
    model::check(m.try_lock(), "the mutex was left held");
    m.unlock();
}

// A thread's timed acquire and a coroutine wait on a semaphore of 0, queued in either order,
// and main releases one permit. If the thread got it, it gives it back, for the coroutine. Either way the coroutine
// ends with the permit and none is left over: a permit lost leaves it queued for ever.
void release_races_a_timed_acquire_with_a_coroutine_queued() {
    granted.store(0);
    timed_got.store(false);
    async_semaphore s(0);
    model::thread b([&s] {
        if (s.blocking_try_acquire_for(std::chrono::microseconds(30))) {
            timed_got.store(true);
            s.release();
        }
    });
    acquire_then_count(s);  // queued, before or after the thread: nothing to take yet
    s.release();
    b.join();
    model::check(granted.load() == 1, "the queued coroutine never got a permit: one was lost");
    model::check(!s.try_acquire(), "a permit was left over: one release counted twice");
}

TEST(AsyncMutexModel, AnUnlockRacingASuspendingLockHandsItOverExactlyOnce) {
    model_test::expect_holds_under_every_strategy(unlock_races_a_suspending_lock, 2);
}

TEST(AsyncSemaphoreModel, AReleaseRacingATimedAcquireLosesNoPermit) {
    model_test::expect_holds_under_every_strategy(release_races_a_timed_acquire_with_a_coroutine_queued, 2);
}

TEST(AsyncMutexModel, ALockThatMarksTheQueueAfterQueueingIsFound) {
    // The mark's gap opens only when the locking thread is preempted inside it: two preemptions.
    expect_found("async_lock_marks_after_queueing", unlock_races_a_suspending_lock, 2000, model_test::every_strategy,
                 2);
}

TEST(AsyncSemaphoreModel, AReleaseThatIgnoresTheWaitersIsFound) {
    expect_found("async_release_ignores_the_waiters_mark", release_races_a_timed_acquire_with_a_coroutine_queued, 2000,
                 model_test::every_strategy);
}

}  // namespace
