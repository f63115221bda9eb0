// contend::thread_pool's timers and registered waits (timer_queue.cpp, wait_thread.cpp,
// through the pool): never early, in deadline order, ahead of a backed-up queue; cancelling;
// waits on a set and on a timeout; delays and deadlines too far off for nanoseconds.
#include "thread_pool_support.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "contend/event.hpp"

using namespace contend_test;
using namespace pool_test;

TEST(ThreadPool, TimersNeverFireEarlyAndFireInDeadlineOrder) {
    watchdog dog(60s);
    thread_pool pool(fixed(1));  // one worker: callbacks run in the order they were dispatched
    std::mutex m;
    std::vector<int> order;
    std::atomic<int> early{0};
    const auto base = steady::now();
    const int delays_ms[] = {50, 10, 40, 20, 30, 0, 60};
    for (int d : delays_ms) {
        const auto due = base + std::chrono::milliseconds(d);
        pool.post_at(due, [&, d, due] {
            if (steady::now() < due) early.fetch_add(1);
            std::lock_guard g(m);
            order.push_back(d);
        });
    }
    const auto all_posted = steady::now();
    ASSERT_TRUE(eventually([&] {
        std::lock_guard g(m);
        return order.size() == 7;
    }));
    EXPECT_EQ(early.load(), 0);
    // The timer thread can order only what it holds: a timer that fell due before the last
    // post_at returned may have fired before an earlier one was added (this thread stalled).
    // Those all run before the rest; the rest run in deadline order. Normally only the 0 ms
    // one is due that soon, and this is the whole order.
    const auto rank = [&](int d) { return base + std::chrono::milliseconds(d) <= all_posted ? -1 : d; };
    std::lock_guard g(m);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [&](int a, int b) { return rank(a) < rank(b); }))
        << ::testing::PrintToString(order);
    EXPECT_EQ(order.size(), 7u);
}

TEST(ThreadPool, ACancelledTimerNeverRunsAndCancelSaysWhetherItWasPending) {
    watchdog dog(60s);
    thread_pool pool(fixed(1));
    std::atomic<int> ran{0};
    // The callback holds the only reference to `token`: once the token is gone, so is the
    // callback, and it can never run.
    auto token = std::make_shared<int>(0);
    const std::weak_ptr<int> callback_alive = token;
    const auto id = pool.post_after(1h, [&ran, token] { ran.fetch_add(1); });
    token.reset();
    EXPECT_EQ(pool.stats().active_timers, 1u);
    EXPECT_TRUE(pool.cancel_timer(id));
    EXPECT_TRUE(callback_alive.expired()) << "cancel_timer kept the callback";
    EXPECT_FALSE(pool.cancel_timer(id));
    const auto fired = pool.post_after(1ms, [&] { ran.fetch_add(10); });
    ASSERT_TRUE(eventually([&] { return ran.load() == 10; }));
    EXPECT_FALSE(pool.cancel_timer(fired));
    EXPECT_EQ(ran.load(), 10);
    EXPECT_EQ(pool.stats().active_timers, 0u);
}

TEST(ThreadPool, ATimerFiresWhileTenThousandSlowItemsAreQueued) {
    watchdog dog(120s);
    thread_pool pool(fixed(2));
    std::atomic<int> done{0};
    std::atomic<bool> fired{false};
    for (int i = 0; i < 10'000; ++i)
        pool.post([&] {
            // Slow until the timer has run; the rest then drain at once (the test checks
            // the timer, not 5 s of sleeping items).
            if (!fired.load()) std::this_thread::sleep_for(1ms);
            done.fetch_add(1);
        });
    std::atomic<int> done_at_fire{-1};
    pool.post_after(10ms, [&] {
        done_at_fire.store(done.load());
        fired.store(true);
    });
    ASSERT_TRUE(eventually([&] { return done_at_fire.load() >= 0; }, 60s));
    // The timer jumped the queue: most of the 10,000 items (each >= 1 ms, two at a time)
    // were still waiting when it ran.
    EXPECT_LT(done_at_fire.load(), 5'000);
    pool.wait_idle();
    EXPECT_EQ(done.load(), 10'000);
}

TEST(ThreadPool, RegisteredWaitsFireOnSetAndOnTimeout) {
    watchdog dog(60s);
    thread_pool pool(fixed(2));
    contend::manual_reset_event ev;
    std::atomic<int> signalled{0}, timed_out{0};
    auto reg = pool.register_wait(
        ev, [&](bool to) { (to ? timed_out : signalled).fetch_add(1); }, thread_pool::no_timeout, true);
    EXPECT_TRUE(reg.active());
    ev.set();
    ASSERT_TRUE(eventually([&] { return signalled.load() == 1; }));
    contend::auto_reset_event never;
    auto reg2 = pool.register_wait(
        never, [&](bool to) { (to ? timed_out : signalled).fetch_add(1); }, 20ms, false);
    ASSERT_TRUE(eventually([&] { return timed_out.load() >= 3; }));  // repeating: the timeout re-arms
    reg2.unregister();
    EXPECT_FALSE(reg2.active());
    EXPECT_EQ(signalled.load(), 1);
}

// Timer ids are unique across pools: another pool's id cancels nothing there.
TEST(ThreadPool, CancellingAnotherPoolsTimerIdCancelsNothing) {
    watchdog dog(60s);
    thread_pool a(fixed(1));
    thread_pool b(fixed(1));
    std::atomic<int> ran_a{0}, ran_b{0};
    const auto id_a = a.post_after(20ms, [&] { ran_a.fetch_add(1); });
    const auto id_b = b.post_after(20ms, [&] { ran_b.fetch_add(1); });
    EXPECT_NE(id_a, id_b);
    EXPECT_FALSE(b.cancel_timer(id_a)) << "pool b cancelled pool a's id";
    EXPECT_FALSE(a.cancel_timer(id_b)) << "pool a cancelled pool b's id";
    ASSERT_TRUE(eventually([&] { return ran_a.load() == 1 && ran_b.load() == 1; }, 10s));
}

// A delay too long to add to now means never, not at once (it overflowed into the past).
TEST(ThreadPool, PostAfterNoTimeoutOrTheLongestDurationNeverFires) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    {
        thread_pool pool(fixed(1));
        const auto a = pool.post_after(thread_pool::no_timeout, [&] { ran.fetch_add(1); });
        const auto b = pool.post_after(std::chrono::steady_clock::duration::max(), [&] { ran.fetch_add(1); });
        const auto c = pool.post_after(std::chrono::steady_clock::duration::max() - std::chrono::seconds(1),
                                       [&] { ran.fetch_add(1); });
        std::atomic<bool> soon{false};
        pool.post_after(std::chrono::steady_clock::duration::min(), [&] { soon = true; });
        ASSERT_TRUE(eventually([&] { return soon.load(); }, 10s)) << "a negative delay must fire at once";
        std::this_thread::sleep_for(50ms);
        EXPECT_EQ(ran.load(), 0) << "a timer for (nearly) never fired";
        EXPECT_TRUE(pool.cancel_timer(a));
        EXPECT_TRUE(pool.cancel_timer(b));
        EXPECT_TRUE(pool.cancel_timer(c));
    }
    EXPECT_EQ(ran.load(), 0);
}

// Timers and registered waits take any duration and any steady time point: one too far off
// for nanoseconds (hours::max(), a coarse time point's max()) means never, as no_timeout
// does. hours::max() converted to nanoseconds on the way in overflowed, and the timer fired
// at once.
TEST(ThreadPool, TimersAndWaitsTooFarForNanosecondsNeverFire) {
    watchdog dog(60s);
    using namespace std::chrono;
    std::atomic<int> ran{0};
    std::atomic<int> timed_out{0};
    std::atomic<int> set_seen{0};
    contend::manual_reset_event ev;
    {
        thread_pool pool(fixed(1));
        std::vector<thread_pool::timer_id> timers;
        timers.push_back(pool.post_after(hours::max(), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_after(duration<double>(1e30), [&] { ran.fetch_add(1); }));
        timers.push_back(
            pool.post_after(duration<double>(std::numeric_limits<double>::infinity()), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_at(time_point<steady_clock, hours>::max(), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_at(time_point<steady_clock, duration<double>>(duration<double>(1e30)),
                                      [&] { ran.fetch_add(1); }));
        auto reg = pool.register_wait(
            ev, [&](bool timeout) { (timeout ? timed_out : set_seen).fetch_add(1); }, hours::max(), true);
        std::atomic<int> soon_count{0};
        pool.post_after(hours::min(), [&] { soon_count.fetch_add(1); });
        pool.post_after(duration<double>(std::numeric_limits<double>::quiet_NaN()), [&] { soon_count.fetch_add(1); });
        pool.post_at(time_point<steady_clock, hours>::min(), [&] { soon_count.fetch_add(1); });
        ASSERT_TRUE(eventually([&] { return soon_count.load() == 3; }, 10s))
            << "a negative or NaN delay, or a time long past, must fire at once";
        std::this_thread::sleep_for(50ms);
        EXPECT_EQ(ran.load(), 0) << "a timer for never fired";
        EXPECT_EQ(timed_out.load(), 0) << "a wait with no timeout timed out";
        for (const auto id : timers) EXPECT_TRUE(pool.cancel_timer(id));
        ev.set();
        EXPECT_TRUE(eventually([&] { return set_seen.load() == 1; }, 10s)) << "the set did not fire the wait";
    }
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(timed_out.load(), 0);
}
