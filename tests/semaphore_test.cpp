#include "contend/semaphore.hpp"

#include "contend/mutex.hpp"  // lock_contention_count
#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::counting_semaphore<>) == 8, "one word");
static_assert(sizeof(contend::binary_semaphore) == 8, "one word");
static_assert(contend::binary_semaphore::max() == 1);
static_assert(contend::counting_semaphore<5>::max() == 5);

TEST(Semaphore, AReleaseOfOneLetsExactlyOneBlockedThreadThrough) {
    watchdog dog(60s);
    contend::counting_semaphore<> sem(0);
    const auto contended_before = contend::lock_contention_count();
    constexpr int n = 3;
    std::atomic<int> through{0};
    std::vector<std::thread> threads;
    std::vector<tid_box> tids(n);
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            sem.acquire();
            through.fetch_add(1);
        });
    }
    std::vector<int> ids;
    for (const auto& t : tids) ids.push_back(t.get());
    EXPECT_TRUE(eventually_blocked(ids)) << "the waiters never all blocked";
    sem.release();
    EXPECT_TRUE(eventually([&] { return through.load() == 1; }));
    std::this_thread::sleep_for(50ms);  // a second thread let through would show by now
    EXPECT_EQ(through.load(), 1);
    EXPECT_FALSE(sem.try_acquire()) << "the permit was both handed over and left in the count";
    sem.release(2);
    for (auto& t : threads) t.join();
    EXPECT_EQ(through.load(), n);
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_GE(contend::lock_contention_count(), contended_before + n) << "the blocked acquires were not counted";
}

TEST(Semaphore, TimedAcquiresTimeOutNoEarlierThanTheirDeadlineAndTakeAPermitReleasedInTime) {
    watchdog dog(60s);
    contend::binary_semaphore sem(0);
    auto start = steady::now();
    EXPECT_FALSE(sem.try_acquire_for(30ms));
    EXPECT_GE(steady::now() - start, 30ms);
    EXPECT_FALSE(sem.try_acquire_until(steady::now() - 1s));
    EXPECT_FALSE(sem.try_acquire_for(std::chrono::nanoseconds::min()));
    // Deadlines as far back as a clock goes: the acquire's look at how long is left before
    // its watch must not subtract the clock from the minimum time point (UBSan).
    EXPECT_FALSE(sem.try_acquire_until(steady::time_point::min()));
    EXPECT_FALSE(sem.try_acquire_until(std::chrono::system_clock::time_point::min()));
    std::thread releaser([&] {
        std::this_thread::sleep_for(20ms);
        sem.release();
    });
    EXPECT_TRUE(sem.try_acquire_for(30s));
    releaser.join();
    EXPECT_FALSE(sem.try_acquire());
    sem.release();
    EXPECT_TRUE(sem.try_acquire_until(std::chrono::system_clock::now() + 1s));
}

TEST(Semaphore, MisuseThrowsAndLeavesTheSemaphoreAsItWas) {
    using three = contend::counting_semaphore<3>;
    EXPECT_THROW(three(4), contend::synchronization_error);
    EXPECT_THROW(three(-1), contend::synchronization_error);
    three s(2);
    EXPECT_THROW(s.release(-1), contend::synchronization_error);
    EXPECT_THROW(s.release(2), contend::synchronization_error);  // 4 > max()
    s.release(1);
    EXPECT_THROW(s.release(), contend::synchronization_error);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.try_acquire());
    EXPECT_FALSE(s.try_acquire());
    contend::binary_semaphore b(1);
    EXPECT_THROW(b.release(), contend::synchronization_error);
    EXPECT_TRUE(b.try_acquire());
    EXPECT_FALSE(b.try_acquire());
    s.release(0);  // no permit, no error
    EXPECT_FALSE(s.try_acquire());
}

// A bounded buffer: K slots, producers acquire a free slot and consumers a full one, some of
// them with timed acquires that retry. A lost permit hangs it (the watchdog fails it); a
// permit made twice lets more than K items in at once, or a consumer read an empty slot.
TEST(Semaphore, ABoundedBufferOfProducersAndConsumersLosesAndInventsNoPermit) {
    watchdog dog(120s);
    constexpr int slots = 4, producers = 3, consumers = 3;
    const long per_producer = scaled(20000);
    contend::counting_semaphore<slots> free_slots(slots);
    contend::counting_semaphore<slots> full_slots(0);
    std::atomic<int> in_buffer{0}, most{0};
    std::atomic<long> consumed{0}, sum{0};
    const long total = per_producer * producers;
    run_threads(producers + consumers, [&](int t) {
        if (t < producers) {
            for (long i = 0; i < per_producer; ++i) {
                if (i % 5 == 0) {
                    while (!free_slots.try_acquire_for(100us)) {
                    }
                } else {
                    free_slots.acquire();
                }
                const int now = in_buffer.fetch_add(1) + 1;
                int m = most.load();
                while (now > m && !most.compare_exchange_weak(m, now)) {
                }
                full_slots.release();
            }
        } else {
            for (;;) {
                if (consumed.fetch_add(1) >= total) break;
                if (t % 2 == 0) {
                    while (!full_slots.try_acquire_for(100us)) {
                    }
                } else {
                    full_slots.acquire();
                }
                EXPECT_GE(in_buffer.fetch_sub(1), 1) << "a consumer took an item nobody put in";
                sum.fetch_add(1);
                free_slots.release();
            }
        }
    });
    EXPECT_EQ(sum.load(), total);
    EXPECT_LE(most.load(), slots);
    EXPECT_EQ(in_buffer.load(), 0);
    EXPECT_FALSE(full_slots.try_acquire());
    for (int i = 0; i < slots; ++i) EXPECT_TRUE(free_slots.try_acquire());
    EXPECT_FALSE(free_slots.try_acquire());
}

// Two threads take and give back the only permit as fast as they can; a third, parked for it,
// still gets it: a release hands it to the longest-parked thread directly once the parking
// lot's fairness deadline (about a millisecond) passes, whoever else is running.
TEST(Semaphore, AParkedThreadIsNotPassedOverForEverByThreadsThatKeepTakingThePermit) {
    watchdog dog(60s);
    contend::binary_semaphore sem(1);
    std::atomic<bool> stop{false}, through{false};
    std::vector<std::thread> hammers;
    for (int i = 0; i < 2; ++i) {
        hammers.emplace_back([&] {
            while (!stop.load()) {
                sem.acquire();
                sem.release();
            }
        });
    }
    std::thread waiter([&] {
        sem.acquire();
        through = true;
        sem.release();
    });
    EXPECT_TRUE(eventually([&] { return through.load(); }, 20s)) << "the parked thread never got the permit";
    stop = true;
    for (auto& h : hammers) h.join();
    waiter.join();
    EXPECT_TRUE(sem.try_acquire());
}
