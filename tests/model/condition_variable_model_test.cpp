// Models of contend::condition_variable over contend::mutex: wait against notify_one and
// notify_all (the waiter queues before it releases the lock; unlock_before_blocking wakes a
// napping designee), notify_one under the mutex (the waiter moves to the mutex's queue and
// the unlock wakes it), a timed wait whose deadline the strategy may fire at any point, and
// the mutations the checker must find.
#include <mutex>

#include "contend/condition_variable.hpp"
#include "contend/mutex.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

mutex m;
condition_variable cv;
int tokens = 0;  // guarded by m
int taken = 0;  // guarded by m

void take_one() {
    std::unique_lock lk(m);
    cv.wait(lk, [] { return tokens > 0; });
    --tokens;
    ++taken;
}

void give(int n, bool all) {
    for (int i = 0; i < n; ++i) {
        {
            std::lock_guard g(m);
            ++tokens;
        }
        if (all) cv.notify_all();
        else cv.notify_one();
    }
}

// notify_one while holding the mutex: a waiter moves to the mutex's queue (registered on its
// behalf) and the unlock that follows must wake it.
void give_under_the_mutex(int n) {
    for (int i = 0; i < n; ++i) {
        std::lock_guard g(m);
        ++tokens;
        cv.notify_one();
    }
}

void two_waiters_two_notify_one_under_the_mutex() {
    tokens = taken = 0;
    model::thread a(take_one);
    model::thread b(take_one);
    give_under_the_mutex(2);
    a.join();
    b.join();
    model::check(taken == 2 && tokens == 0, "each waiter moved to the mutex's queue took one token");
}

// A timed waiter that may be moved to the mutex's queue and time out there.
void timed_wait_against_notify_under_the_mutex() {
    tokens = taken = 0;
    model::thread waiter([] {
        std::unique_lock lk(m);
        const bool got = cv.wait_for(lk, std::chrono::microseconds(30), [] { return tokens > 0; });
        model::check(got == (tokens > 0), "wait_for's result is the predicate's value at its return");
    });
    give_under_the_mutex(1);
    waiter.join();
}

// Two waiters, two notify_one calls outside the lock: each waiter takes one token.
void two_waiters_two_notify_one() {
    tokens = taken = 0;
    model::thread a(take_one);
    model::thread b(take_one);
    give(2, false);
    a.join();
    b.join();
    model::check(taken == 2 && tokens == 0, "each notified waiter took one token");
}

void two_waiters_notify_all() {
    tokens = taken = 0;
    model::thread a(take_one);
    model::thread b(take_one);
    {
        std::lock_guard g(m);
        tokens = 2;
    }
    cv.notify_all();
    a.join();
    b.join();
    model::check(taken == 2 && tokens == 0, "notify_all released both waiters");
}

// A timed wait with a predicate: whatever it returns must agree with the predicate then.
void timed_wait_against_notify() {
    tokens = taken = 0;
    model::thread waiter([] {
        std::unique_lock lk(m);
        const bool got = cv.wait_for(lk, std::chrono::microseconds(30), [] { return tokens > 0; });
        model::check(got == (tokens > 0), "wait_for's result is the predicate's value at its return");
    });
    give(1, false);
    waiter.join();
}

TEST(ConditionVariableModel, NotifyOneTwiceReleasesBothWaiters) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = model_test::sampled_schedules},
                 two_waiters_two_notify_one);
    expect_holds({.strategy = model::strategy_kind::random, .executions = model_test::sampled_schedules},
                 two_waiters_two_notify_one);
}

TEST(ConditionVariableModel, NotifyOneTwiceEveryScheduleWithOnePreemption) {
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 1},
                 two_waiters_two_notify_one);
}

TEST(ConditionVariableModel, NotifyAllReleasesEveryWaiter) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = model_test::sampled_schedules},
                 two_waiters_notify_all);
}

TEST(ConditionVariableModel, ATimedWaitAgreesWithItsPredicateWhicheverComesFirst) {
    expect_holds({.strategy = model::strategy_kind::random, .executions = model_test::sampled_schedules},
                 timed_wait_against_notify);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 2},
                 timed_wait_against_notify);
}

TEST(ConditionVariableModel, NotifyOneUnderTheMutexReleasesBothWaiters) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = model_test::sampled_schedules},
                 two_waiters_two_notify_one_under_the_mutex);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 1},
                 two_waiters_two_notify_one_under_the_mutex);
}

TEST(ConditionVariableModel, ATimedWaitMovedToTheMutexQueueAgreesWithItsPredicate) {
    expect_holds({.strategy = model::strategy_kind::random, .executions = model_test::sampled_schedules},
                 timed_wait_against_notify_under_the_mutex);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 2},
                 timed_wait_against_notify_under_the_mutex);
}

// A waiter moved to the mutex's queue without being counted in the waiter registry: the
// notifier's unlock is a plain store that wakes nobody, and the waiter sleeps for good.
TEST(ConditionVariableModel, AMoveToTheMutexQueueThatSkipsTheRegistryIsFound) {
    expect_found("mutex_requeue_without_registering", two_waiters_two_notify_one_under_the_mutex, 2000,
                 model_test::every_strategy);
}

// notify_one that clears "threads may be waiting" although another waiter is queued: the
// second notify_one skips the parking lot and that waiter sleeps for good. PCT and random
// find it; the bounded search does not: each waiter's poll before it sleeps yields at every
// step, and in the order those yields hand the CPU on, queueing both waiters before the
// first notify takes a second preemption, past the 2,000 schedules' budget of that search
// (it ran out with the mutation unfound).
TEST(ConditionVariableModel, ANotifyOneThatForgetsTheOtherWaitersIsFound) {
    expect_found("condition_variable_notify_one_forgets_the_rest", two_waiters_two_notify_one, 2000,
                 {model::strategy_kind::pct, model::strategy_kind::random});
}

}  // namespace
