#include "contend/async_mutex.hpp"

#include <cmath>
#include <stop_token>
#include <vector>

#include "contend/mutex.hpp"  // lock_contention_count
#include "contend/synchronization_error.hpp"
#include "contend/thread_pool.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::async_mutex) == 32, "a word of state, the queue lock, the queue's ends");

namespace {

contend::thread_pool_options two_workers() {
    contend::thread_pool_options o;
    o.min_threads = o.max_threads = 2;
    o.hill_climbing = false;
    return o;
}

// Takes the mutex (suspending while it is held), records `id`, lets go.
fire_and_forget take_in_turn(contend::async_mutex& m, int id, std::vector<int>& order) {
    co_await m.lock();
    order.push_back(id);
    m.unlock();
}

}  // namespace

TEST(AsyncMutex, WaitersAreHandedTheMutexInTheOrderTheyQueued) {
    watchdog dog(60s);
    contend::async_mutex m;
    ASSERT_TRUE(m.try_lock());
    const auto contended_before = contend::lock_contention_count();
    std::vector<int> order;
    for (int i = 0; i < 5; ++i) take_in_turn(m, i, order);  // off every pool: each suspends here
    EXPECT_TRUE(order.empty()) << "a coroutine took a held mutex";
    EXPECT_FALSE(m.try_lock()) << "try_lock took a held mutex";
    m.unlock();  // resumes the first inline, whose unlock resumes the next...
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_TRUE(m.try_lock()) << "the last waiter's unlock did not free the mutex";
    m.unlock();
    EXPECT_GE(contend::lock_contention_count(), contended_before + 5) << "the suspended locks were not counted";
}

TEST(AsyncMutex, ANewcomerDoesNotTakeTheMutexPastTheQueue) {
    watchdog dog(60s);
    contend::async_mutex m;
    ASSERT_TRUE(m.try_lock());
    bool first_ran = false;
    auto waiter = [&]() -> fire_and_forget {
        co_await m.lock();
        first_ran = true;
        // Holding it, this coroutine sees a try_lock fail: the hand-off left no gap.
        EXPECT_FALSE(m.try_lock());
        m.unlock();
    };
    waiter();
    m.unlock();
    EXPECT_TRUE(first_ran);
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(AsyncMutex, UnlockingAMutexThatIsNotLockedThrowsAndChangesNothing) {
    contend::async_mutex m;
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
    EXPECT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());
    m.unlock();
    contend::async_lock_guard empty;
    EXPECT_THROW(empty.unlock(), contend::synchronization_error);
}

TEST(AsyncMutex, AStoppedLockResumesWithoutTheMutexAndLeavesTheQueue) {
    watchdog dog(60s);
    contend::async_mutex m;
    ASSERT_TRUE(m.try_lock());
    std::stop_source stop;
    int result = -1;
    auto waiter = [&]() -> fire_and_forget { result = (co_await m.lock(stop.get_token())) ? 1 : 0; };
    waiter();
    EXPECT_EQ(result, -1) << "the lock returned while the mutex was held";
    stop.request_stop();  // resumes it here, inline
    EXPECT_EQ(result, 0) << "the stopped lock did not return false";
    m.unlock();
    EXPECT_TRUE(m.try_lock()) << "the stopped waiter was handed the mutex";
    m.unlock();
    // A stop already requested: false without waiting, even for a free mutex.
    auto stopped = [&]() -> fire_and_forget { result = (co_await m.lock(stop.get_token())) ? 1 : 0; };
    result = -1;
    stopped();
    EXPECT_EQ(result, 0);
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(AsyncMutex, ATimedLockOnAPoolTimesOutNoEarlierThanItsDelayAndOffAPoolIsRefused) {
    watchdog dog(60s);
    contend::async_mutex m;
    EXPECT_THROW((void)m.lock_for(1ms), contend::synchronization_error) << "a timed lock off every pool";
    ASSERT_TRUE(m.try_lock());
    std::atomic<int> result{-1};
    std::atomic<std::int64_t> waited_us{0};
    {
        contend::thread_pool pool(two_workers());
        auto waiter = [&]() -> fire_and_forget {
            co_await pool.schedule();
            const auto start = steady::now();
            const bool got = co_await m.lock_for(30ms);
            waited_us = std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - start).count();
            result = got ? 1 : 0;
        };
        waiter();
        ASSERT_TRUE(eventually([&] { return result.load() != -1; }));
        EXPECT_EQ(result.load(), 0);
        EXPECT_GE(waited_us.load(), 30'000);
        // A delay already past, NaN or negative, is no wait at all: false at once.
        std::atomic<int> odd{0};
        auto odd_delays = [&]() -> fire_and_forget {
            co_await pool.schedule();
            if (!co_await m.lock_for(-1s)) odd.fetch_add(1);
            if (!co_await m.lock_for(std::chrono::duration<double>(std::nan("")))) odd.fetch_add(1);
        };
        odd_delays();
        EXPECT_TRUE(eventually([&] { return odd.load() == 2; })) << "a timed lock with a past or NaN delay";
        // Handed the mutex in time: true, holding it.
        result = -1;
        auto waiter2 = [&]() -> fire_and_forget {
            co_await pool.schedule();
            const bool got = co_await m.lock_for(std::chrono::hours(1));
            result = got ? 1 : 0;
            if (got) m.unlock();
        };
        waiter2();
        std::this_thread::sleep_for(5ms);
        m.unlock();
        ASSERT_TRUE(eventually([&] { return result.load() != -1; }));
        EXPECT_EQ(result.load(), 1);
        EXPECT_TRUE(eventually([&] { return m.try_lock(); }));
        m.unlock();
    }
}

// 64 coroutines on two workers take turns in a critical section that suspends (moving to
// the pool's queue) while holding the mutex, and the counter it guards ends exact. Waiting
// never blocks a worker: with all 64 queued behind this thread's hold, a plain item runs.
TEST(AsyncMutex, CoroutinesOnTwoWorkersShareItWithoutEverBlockingAWorker) {
    watchdog dog(120s);
    contend::async_mutex m;
    constexpr int coroutines = 64;
    const int rounds = static_cast<int>(scaled(400));
    long counter = 0;  // guarded by m
    std::atomic<int> inside{0}, overlaps{0}, done{0};
    {
        contend::thread_pool pool(two_workers());
        auto worker = [&](int id) -> fire_and_forget {
            co_await pool.schedule();
            for (int r = 0; r < rounds; ++r) {
                auto guard = co_await m.scoped_lock();
                if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
                const long seen = counter;
                if ((r + id) % 4 == 0) {
                    co_await pool.schedule();  // moves, holding the mutex, maybe to the other worker
                }
                counter = seen + 1;
                inside.fetch_sub(1);
            }
            done.fetch_add(1);
        };
        ASSERT_TRUE(m.try_lock());
        for (int i = 0; i < coroutines; ++i) worker(i);
        // Every worker stays free while the coroutines wait: an item posted now runs.
        std::atomic<bool> ran{false};
        pool.post([&] { ran = true; });
        EXPECT_TRUE(eventually([&] { return ran.load(); })) << "a worker was blocked";
        EXPECT_EQ(done.load(), 0);
        m.unlock();
        ASSERT_TRUE(eventually([&] { return done.load() == coroutines; }, 60s)) << done.load() << " finished";
    }
    EXPECT_EQ(overlaps.load(), 0) << "two coroutines held the mutex at once";
    EXPECT_EQ(counter, static_cast<long>(coroutines) * rounds);
}

TEST(AsyncMutex, AThreadsBlockingLockQueuesWithTheCoroutines) {
    watchdog dog(60s);
    contend::async_mutex m;
    ASSERT_TRUE(m.try_lock());
    std::vector<int> order;
    take_in_turn(m, 1, order);  // queued first
    std::atomic<bool> thread_in{false};
    tid_box tid;
    std::thread t([&] {
        tid.publish();
        m.blocking_lock();
        order.push_back(2);
        thread_in = true;
        m.unlock();
    });
    ASSERT_TRUE(eventually_blocked({tid.get()}));
    EXPECT_FALSE(m.blocking_try_lock_for(20ms)) << "a timed blocking lock took a held mutex";
    m.unlock();  // to the coroutine (inline), whose unlock hands it to the thread
    t.join();
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_TRUE(m.blocking_try_lock_for(1s));
    m.unlock();
}

TEST(AsyncMutexDeathTest, DestroyingItWhileACoroutineWaitsEndsTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            auto* m = new contend::async_mutex;
            (void)m->try_lock();
            std::vector<int> order;
            take_in_turn(*m, 0, order);
            delete m;
        },
        "contend::async_mutex destroyed while a coroutine or a thread waits for it");
}
