// Models of contend::latch and contend::counting_semaphore: the count_down that reaches zero
// against a waiter that is checking, queueing or parked; a release racing a timed acquire and
// an untimed one; and the mutations the checker must find.
#include "contend/internal/atomic.hpp"
#include "contend/latch.hpp"
#include "contend/semaphore.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;

internal::atomic<int> wrote{0};
internal::atomic<bool> timed_got{false};

// A thread waits on a latch of 1 while main writes and counts it down: the wait returns,
// and sees the write.
void latch_releases_waiters() {
    wrote.store(0, std::memory_order_relaxed);
    latch l(1);
    model::thread w([&l] {
        l.wait();
        model::check(wrote.load(std::memory_order_relaxed) == 1, "a waiter saw the latch released early");
    });
    wrote.store(1, std::memory_order_relaxed);
    l.count_down();
    w.join();
}

// One permit released while an untimed and a timed acquire race for it. If the timed one got
// it, a second release lets the untimed one finish. Either way no permit is left over, and the
// untimed acquire returns (a lost permit leaves it parked: the checker reports the deadlock).
void release_races_a_timed_acquire() {
    timed_got.store(false);
    counting_semaphore<2> sem(0);
    model::thread a([&sem] { sem.acquire(); });
    model::thread b([&sem] {
        if (sem.try_acquire_for(std::chrono::microseconds(30))) timed_got.store(true);
    });
    sem.release();
    b.join();  // not a spin: time passes in a model only while every thread waits
    if (timed_got.load()) sem.release();
    a.join();
    model::check(!sem.try_acquire(), "a permit was left over: one release counted twice");
}

TEST(LatchModel, ReachingZeroReleasesEveryWaiter) {
    model_test::expect_holds_under_every_strategy(latch_releases_waiters, 2);
}

TEST(SemaphoreModel, AReleaseRacingATimedAcquireLosesNoPermit) {
    model_test::expect_holds_under_every_strategy(release_races_a_timed_acquire, 1);
}

TEST(LatchModel, ACountDownThatWakesNobodyIsFound) {
    expect_found("latch_count_down_wakes_nobody", latch_releases_waiters, 2000, model_test::every_strategy);
}

TEST(SemaphoreModel, AReleaseThatWakesWithoutAPermitIsFound) {
    expect_found("semaphore_release_wakes_without_a_permit", release_races_a_timed_acquire, 2000,
                 model_test::every_strategy);
}

}  // namespace
