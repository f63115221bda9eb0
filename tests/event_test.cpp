#include "contend/event.hpp"

#include <limits>

#include "test_support.hpp"

using namespace contend_test;

TEST(ManualResetEvent, SetReleasesEveryWaiterAndStaysSet) {
    watchdog dog(60s);
    contend::manual_reset_event ev;
    constexpr int n = 16;
    std::atomic<int> released{0};
    std::vector<std::thread> threads;
    std::vector<tid_box> tids(n);
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            if (ev.wait_for(30s)) released.fetch_add(1);
        });
    }
    std::vector<int> ids;
    for (const auto& t : tids) ids.push_back(t.get());
    EXPECT_TRUE(eventually_blocked(ids)) << "the waiters never all blocked";
    EXPECT_FALSE(ev.is_set());
    ev.set();
    for (auto& t : threads) t.join();
    EXPECT_EQ(released.load(), n);
    EXPECT_TRUE(ev.is_set());
    EXPECT_TRUE(ev.wait_for(0ms));  // stays set for later waiters
    ev.reset();
    EXPECT_FALSE(ev.is_set());
}

TEST(ManualResetEvent, WaitForTimesOutNoEarlierThanItsDeadline) {
    contend::manual_reset_event ev;
    const auto start = steady::now();
    EXPECT_FALSE(ev.wait_for(30ms));
    EXPECT_GE(steady::now() - start, 30ms);
    EXPECT_LT(steady::now() - start, 5s);
}

// A far-past deadline on a non-steady clock and a NaN duration time out at once.
TEST(ManualResetEvent, AFarPastDeadlineOrANanDurationTimesOutAtOnce) {
    watchdog dog(60s);
    contend::manual_reset_event e;
    contend::auto_reset_event a;
    const auto start = steady::now();
    EXPECT_FALSE(e.wait_until(std::chrono::system_clock::time_point::min()));
    EXPECT_FALSE(e.wait_for(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())));
    EXPECT_FALSE(a.wait_until(std::chrono::system_clock::time_point::min()));
    EXPECT_FALSE(a.wait_for(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())));
    EXPECT_LT(steady::now() - start, 5s);
}

// A steady deadline or a duration too far off for nanoseconds (hours::max(), 1e30 s, +inf)
// means "no deadline": the wait lasts until the event is set. The cast of such a steady time
// point to nanoseconds overflowed, and the wait timed out at once.
TEST(ManualResetEvent, AWaitWithADeadlineTooFarForNanosecondsLastsUntilSet) {
    watchdog dog(120s);
    for_each_far_future_time_point([&](auto t, const char* what) {
        contend::manual_reset_event e;
        EXPECT_TRUE(wait_outlasts_until_released([&] { return e.wait_until(t); }, [&] { e.set(); })) << what;
        contend::auto_reset_event a;
        EXPECT_TRUE(wait_outlasts_until_released([&] { return a.wait_until(t); }, [&] { a.set(); }))
            << what << ", auto_reset_event";
    });
    for_each_far_future_duration([&](auto d, const char* what) {
        contend::manual_reset_event e;
        EXPECT_TRUE(wait_outlasts_until_released([&] { return e.wait_for(d); }, [&] { e.set(); })) << what;
        contend::auto_reset_event a;
        EXPECT_TRUE(wait_outlasts_until_released([&] { return a.wait_for(d); }, [&] { a.set(); }))
            << what << ", auto_reset_event";
    });
}

// A steady deadline or a duration below what nanoseconds hold, negative, -inf or NaN has
// passed: the wait on an unset event times out without waiting (the watchdog bounds it).
TEST(ManualResetEvent, AWaitWithAPassedDeadlineOfAnyRepresentationTimesOut) {
    watchdog dog(60s);
    contend::manual_reset_event e;
    contend::auto_reset_event a;
    for_each_passed_time_point([&](auto t, const char* what) {
        EXPECT_FALSE(e.wait_until(t)) << what;
        EXPECT_FALSE(a.wait_until(t)) << what << ", auto_reset_event";
    });
    for_each_passed_duration([&](auto d, const char* what) {
        EXPECT_FALSE(e.wait_for(d)) << what;
        EXPECT_FALSE(a.wait_for(d)) << what << ", auto_reset_event";
    });
}

TEST(ManualResetEvent, InitiallySetDoesNotBlock) {
    contend::manual_reset_event ev(true);
    ev.wait();
    EXPECT_TRUE(ev.is_set());
}

TEST(AutoResetEvent, EachSetReleasesExactlyOneWaiter) {
    watchdog dog(60s);
    contend::auto_reset_event ev;
    constexpr int n = 4;
    std::atomic<int> released{0};
    std::atomic<bool> done[n] = {};
    std::vector<std::thread> threads;
    std::vector<tid_box> tids(n);
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            if (ev.wait_for(30s)) released.fetch_add(1);
            done[i].store(true);
        });
    }
    // Every waiter not yet released is blocked again: a set that woke one more would have
    // been counted by then (a woken thread runs until it counts itself).
    const auto rest_blocked = [&] {
        for (int k = 0; k < n; ++k)
            if (!done[k].load() && !thread_blocked(tids[static_cast<std::size_t>(k)].get())) return false;
        return true;
    };
    EXPECT_TRUE(eventually(rest_blocked));
    for (int i = 1; i <= n; ++i) {
        ev.set();
        ASSERT_TRUE(eventually([&] { return released.load() >= i; }));
        ASSERT_TRUE(eventually(rest_blocked));
        EXPECT_EQ(released.load(), i) << "one set released more than one waiter";
    }
    for (auto& t : threads) t.join();
    EXPECT_FALSE(ev.is_set());
}

TEST(AutoResetEvent, ASetWithNoWaiterIsKeptForTheNextWait) {
    contend::auto_reset_event ev;
    ev.set();
    EXPECT_TRUE(ev.is_set());
    EXPECT_TRUE(ev.wait_for(0ms));
    EXPECT_FALSE(ev.is_set());
    EXPECT_FALSE(ev.wait_for(10ms));
}

TEST(AutoResetEvent, PingPongLosesNoSignal) {
    watchdog dog(120s);
    contend::auto_reset_event ping;
    contend::auto_reset_event pong;
    const long rounds = scaled(20000);
    long returned = 0;
    std::thread t([&] {
        for (long i = 0; i < rounds; ++i) {
            ASSERT_TRUE(ping.wait_for(30s)) << "lost ping " << i;
            pong.set();
        }
    });
    for (long i = 0; i < rounds; ++i) {
        ping.set();
        ASSERT_TRUE(pong.wait_for(30s)) << "lost pong " << i;
        ++returned;
    }
    t.join();
    EXPECT_EQ(returned, rounds);
}
