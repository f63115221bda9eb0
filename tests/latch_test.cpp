#include "contend/latch.hpp"

#include <memory>

#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::latch) == 8, "one word");

TEST(Latch, ReachingZeroReleasesEveryWaiterAndWhatTheCountersWroteIsVisible) {
    watchdog dog(60s);
    constexpr int workers = 4, waiters = 8;
    contend::latch done(workers);
    int written[workers] = {};  // plain: the latch orders the writes before the waits' return
    std::atomic<int> saw_all{0};
    std::vector<std::thread> threads;
    std::vector<tid_box> tids(waiters);
    for (int i = 0; i < waiters; ++i) {
        threads.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            done.wait();
            int sum = 0;
            for (int w : written) sum += w;
            if (sum == workers) saw_all.fetch_add(1);
        });
    }
    std::vector<int> ids;
    for (const auto& t : tids) ids.push_back(t.get());
    EXPECT_TRUE(eventually_blocked(ids)) << "the waiters never all blocked";
    EXPECT_FALSE(done.try_wait());
    std::vector<std::thread> counters;
    for (int w = 0; w < workers; ++w) {
        counters.emplace_back([&, w] {
            written[w] = 1;
            done.count_down();
        });
    }
    for (auto& t : counters) t.join();
    for (auto& t : threads) t.join();
    EXPECT_EQ(saw_all.load(), waiters);
    EXPECT_TRUE(done.try_wait());
    done.wait();  // released: returns at once
}

TEST(Latch, AZeroLatchIsReleasedAndArriveAndWaitCountsDownThenWaits) {
    watchdog dog(60s);
    contend::latch zero(0);
    EXPECT_TRUE(zero.try_wait());
    zero.wait();
    contend::latch both(2);
    std::thread other([&] { both.arrive_and_wait(); });
    both.arrive_and_wait();
    other.join();
    EXPECT_TRUE(both.try_wait());
    contend::latch by_two(4);
    by_two.count_down(2);
    EXPECT_FALSE(by_two.try_wait());
    by_two.arrive_and_wait(2);
    EXPECT_TRUE(by_two.try_wait());
}

TEST(Latch, MisuseThrowsAndLeavesTheLatchAsItWas) {
    EXPECT_THROW(contend::latch(-1), contend::synchronization_error);
    EXPECT_THROW(contend::latch(contend::latch::max() + 1), contend::synchronization_error);
    contend::latch big(contend::latch::max());
    EXPECT_FALSE(big.try_wait());
    big.count_down(contend::latch::max());
    EXPECT_TRUE(big.try_wait());
    contend::latch l(2);
    EXPECT_THROW(l.count_down(3), contend::synchronization_error);
    EXPECT_THROW(l.count_down(-1), contend::synchronization_error);
    EXPECT_FALSE(l.try_wait());
    l.count_down();
    EXPECT_FALSE(l.try_wait());
    l.count_down();
    EXPECT_TRUE(l.try_wait());
    EXPECT_THROW(l.count_down(), contend::synchronization_error);  // nothing left
    EXPECT_TRUE(l.try_wait());
}

// Rounds of latches, each counted down by every thread and waited on by all: a lost wake-up
// hangs a round (the watchdog fails it), a latch released early lets a thread see a round
// whose count-downs are not all in.
TEST(Latch, ManyRoundsOfThreadsArrivingAndWaitingLoseNoWakeUp) {
    watchdog dog(120s);
    constexpr int n = 4;
    const int rounds = static_cast<int>(scaled(4000));
    std::vector<std::unique_ptr<contend::latch>> latches;
    std::vector<std::atomic<int>> arrived(static_cast<std::size_t>(rounds));
    for (int r = 0; r < rounds; ++r) latches.push_back(std::make_unique<contend::latch>(n));
    std::atomic<long> early{0};
    run_threads(n, [&](int t) {
        for (int r = 0; r < rounds; ++r) {
            arrived[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed);
            if ((r + t) % 3 == 0) {
                latches[static_cast<std::size_t>(r)]->arrive_and_wait();
            } else {
                latches[static_cast<std::size_t>(r)]->count_down();
                latches[static_cast<std::size_t>(r)]->wait();
            }
            if (arrived[static_cast<std::size_t>(r)].load(std::memory_order_relaxed) != n) early.fetch_add(1);
        }
    });
    EXPECT_EQ(early.load(), 0) << "a latch let a thread through before every count-down";
}
