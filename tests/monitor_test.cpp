// contend::monitor: any address as a recursive lock with wait/pulse. Every wait is bounded
// by a watchdog or a deadline.
#include "contend/monitor.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>

#include "contend/internal/thread_id.hpp"
#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::monitor;

namespace {

template <class Fn>
void on_other_thread(Fn fn) {
    std::thread t(fn);
    t.join();
}

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void check_exclusion(int threads, int addresses, long per_thread) {
    watchdog dog(240s, "monitor exclusion");
    std::vector<long> counters(static_cast<std::size_t>(addresses), 0);
    run_threads(threads, [&](int t) {
        for (long i = 0; i < per_thread; ++i) {
            long& c = counters[static_cast<std::size_t>((t + i) % addresses)];
            monitor::enter(&c);
            c = c + 1;
            monitor::exit(&c);
        }
    });
    long sum = 0;
    for (long c : counters) sum += c;
    EXPECT_EQ(sum, per_thread * threads);
    EXPECT_EQ(monitor::stats().live_address_entries, 0u);
}

}  // namespace

TEST(Monitor, ExclusionOnOneAddressAtTwoEightAndSixtyFourThreads) {
    check_exclusion(2, 1, scaled(200000));
    check_exclusion(8, 1, scaled(50000));
    check_exclusion(64, 1, scaled(4000));
}

TEST(Monitor, ExclusionOnManyAddresses) {
    check_exclusion(8, 16, scaled(50000));
    check_exclusion(64, 100, scaled(4000));
}

TEST(Monitor, RecursionToDepthThousandUnwindsExactly) {
    watchdog dog(60s);
    int object = 0;
    for (int i = 0; i < 1000; ++i) monitor::enter(&object);
    EXPECT_TRUE(monitor::is_entered(&object));
    for (int i = 0; i < 999; ++i) monitor::exit(&object);
    bool other = true;
    on_other_thread([&] { other = monitor::try_enter(&object); });
    EXPECT_FALSE(other);
    monitor::exit(&object);
    EXPECT_FALSE(monitor::is_entered(&object));
    EXPECT_THROW(monitor::exit(&object), contend::synchronization_error);
    EXPECT_EQ(monitor::stats().live_address_entries, 0u);
}

// The depth counts past 2^32 entries: at 2^32 + 1 enters one exit leaves the address
// entered, and another thread cannot enter it. A 32-bit count wrapped to 0 there, and that
// exit let the address go while its owner still held it 2^32 times. The test hook sets the
// depth of 2^32 entries instead of making them.
TEST(Monitor, PastTwoToTheThirtyTwoEntersOneExitLeavesTheAddressEntered) {
    watchdog dog(60s);
    int object = 0;
    monitor::enter(&object);
    ASSERT_TRUE(contend::internal::set_monitor_reentries_for_testing(&object, 0xFFFF'FFFFull));  // 2^32 enters
    monitor::enter(&object);  // 2^32 + 1
    monitor::exit(&object);
    bool entered = true;
    std::thread([&] {
        entered = monitor::try_enter(&object);
        if (entered) monitor::exit(&object);
    }).join();
    EXPECT_FALSE(entered) << "another thread entered an address held 2^32 times";
    EXPECT_TRUE(monitor::is_entered(&object));
    // Back to the one enter this thread made, and out of it.
    ASSERT_TRUE(contend::internal::set_monitor_reentries_for_testing(&object, 0));
    monitor::exit(&object);
    EXPECT_FALSE(monitor::is_entered(&object));
}

TEST(Monitor, OneShotTryEnterOnAnAddressHeldElsewhereFailsAndChangesNoCounter) {
    watchdog dog(60s);
    int object = 0;
    monitor::enter(&object);
    const auto before = monitor::stats();
    int successes = 0;
    on_other_thread([&] {
        for (int i = 0; i < 100000; ++i) successes += monitor::try_enter(&object) ? 1 : 0;
    });
    const auto after = monitor::stats();
    EXPECT_EQ(successes, 0);
    EXPECT_EQ(after.contentions, before.contentions);
    EXPECT_EQ(after.live_address_entries, before.live_address_entries);
    monitor::exit(&object);
}

TEST(Monitor, TryEnterForTimesOutAndLeavesNoEntryBehind) {
    watchdog dog(60s);
    int object = 0;
    monitor::enter(&object);
    bool got = true;
    on_other_thread([&] { got = monitor::try_enter_for(&object, 20ms); });
    EXPECT_FALSE(got);
    monitor::exit(&object);
    EXPECT_EQ(monitor::stats().live_address_entries, 0u);
    on_other_thread([&] {
        got = monitor::try_enter_for(&object, 1s);
        if (got) monitor::exit(&object);
    });
    EXPECT_TRUE(got);
}

TEST(Monitor, WaitPulsePingPongHundredThousandRounds) {
    watchdog dog(240s);
    int object = 0;
    long turn = 0;
    const long rounds = scaled(100000);
    std::thread pong([&] {
        monitor::enter(&object);
        for (long r = 0; r < rounds; ++r) {
            while (turn % 2 == 0) monitor::wait(&object);
            ++turn;
            monitor::pulse(&object);
        }
        monitor::exit(&object);
    });
    monitor::enter(&object);
    for (long r = 0; r < rounds; ++r) {
        while (turn % 2 == 1) monitor::wait(&object);
        ++turn;
        monitor::pulse(&object);
    }
    while (turn < 2 * rounds) monitor::wait(&object);
    monitor::exit(&object);
    pong.join();
    EXPECT_EQ(turn, 2 * rounds);
    EXPECT_EQ(monitor::stats().live_address_entries, 0u);
}

TEST(Monitor, PulseAllWakesEveryOneOfThirtyTwoWaiters) {
    watchdog dog(120s);
    int object = 0;
    int waiting = 0, woke = 0;
    bool go = false;
    std::vector<std::thread> threads;
    for (int i = 0; i < 32; ++i) {
        threads.emplace_back([&] {
            monitor::enter(&object);
            ++waiting;
            while (!go) monitor::wait(&object);
            ++woke;
            monitor::exit(&object);
        });
    }
    ASSERT_TRUE(eventually([&] {
        monitor::enter(&object);
        const bool all = waiting == 32;
        monitor::exit(&object);
        return all;
    }));
    monitor::enter(&object);
    go = true;
    monitor::pulse_all(&object);
    monitor::exit(&object);
    for (auto& t : threads) t.join();
    EXPECT_EQ(woke, 32);
}

TEST(Monitor, WaitForTimingOutReturnsFalseAndHoldsAtTheSameDepth) {
    watchdog dog(60s);
    int object = 0;
    for (int i = 0; i < 3; ++i) monitor::enter(&object);
    const auto start = steady::now();
    EXPECT_FALSE(monitor::wait_for(&object, 20ms));
    EXPECT_GE(steady::now() - start, 20ms);
    bool other = true;
    for (int i = 0; i < 3; ++i) {
        on_other_thread([&] { other = monitor::try_enter(&object); });
        EXPECT_FALSE(other);
        monitor::exit(&object);
    }
    EXPECT_THROW(monitor::exit(&object), contend::synchronization_error);
}

TEST(Monitor, MisuseThrowsAndLeavesTheAddressUsable) {
    watchdog dog(60s);
    int object = 0;
    EXPECT_THROW(monitor::exit(&object), contend::synchronization_error);
    EXPECT_THROW(monitor::wait_for(&object, 1ms), contend::synchronization_error);
    EXPECT_THROW(monitor::pulse(&object), contend::synchronization_error);
    EXPECT_THROW(monitor::pulse_all(&object), contend::synchronization_error);
    monitor::enter(&object);
    bool threw = false;
    on_other_thread([&] {
        try {
            monitor::exit(&object);
        } catch (const contend::synchronization_error&) {
            threw = true;
        }
    });
    EXPECT_TRUE(threw);
    EXPECT_TRUE(monitor::is_entered(&object));
    monitor::exit(&object);
    EXPECT_THROW(monitor::exit(&object), contend::synchronization_error);
    EXPECT_TRUE(monitor::try_enter(&object));
    monitor::exit(&object);
    EXPECT_EQ(monitor::stats().live_address_entries, 0u);
}

TEST(Monitor, AThreadThatExitsInsideAnAddressPassesItToNoNewThread) {
    watchdog dog(60s);
    // Static: the abandoned address stays entered for good, so no later test may use it.
    static int object[2] = {};
    const std::uint32_t retired_before = contend::internal::retired_compact_thread_ids();
    std::uint32_t gone_id = 0;
    std::thread([&] {
        gone_id = contend::internal::compact_thread_id();
        monitor::enter(&object[0]);
        ASSERT_TRUE(monitor::try_enter(&object[0]));
    }).join();
    EXPECT_EQ(contend::internal::retired_compact_thread_ids(), retired_before + 1);
    std::uint32_t next_id = 0;
    bool entered = true, exit_refused = false, try_enter_took_it = true;
    std::thread([&] {
        next_id = contend::internal::compact_thread_id();
        entered = monitor::is_entered(&object[0]);
        try {
            monitor::exit(&object[0]);
        } catch (const contend::synchronization_error&) {
            exit_refused = true;
        }
        try_enter_took_it = monitor::try_enter(&object[0]);
        if (try_enter_took_it) monitor::exit(&object[0]);
    }).join();
    EXPECT_NE(next_id, gone_id);
    EXPECT_FALSE(entered);
    EXPECT_TRUE(exit_refused);
    EXPECT_FALSE(try_enter_took_it) << "the abandoned address stays entered";
    // A thread that entered and exited gives its id back as before.
    std::uint32_t first = 0, second = 0;
    std::thread([&] {
        first = contend::internal::compact_thread_id();
        monitor::enter(&object[1]);
        monitor::exit(&object[1]);
    }).join();
    std::thread([&] { second = contend::internal::compact_thread_id(); }).join();
    EXPECT_EQ(first, second);
}

TEST(Monitor, TenMillionDistinctAddressesKeepMemoryFlat) {
    watchdog dog(240s);
    const long n = scaled(10'000'000);
    // Addresses that are never dereferenced: distinct values are all the table sees.
    const auto anchor = std::make_unique<char>();  // kept, so no other object takes its address
    const char* const base = anchor.get();
    for (long i = 0; i < 1000; ++i) {  // warm the stripes' vectors
        monitor::enter(base + i);
        monitor::exit(base + i);
    }
    const long before = resident_kib();
    // Entries other tests left for good (an address abandoned by a thread that exited in it).
    const std::size_t entries_before = monitor::stats().live_address_entries;
    for (long i = 0; i < n; ++i) {
        monitor::enter(base + i * 8);
        monitor::exit(base + i * 8);
    }
    const long grew = resident_kib() - before;
    EXPECT_EQ(monitor::stats().live_address_entries, entries_before);
    EXPECT_LT(grew, 4096) << "resident memory grew by " << grew << " KiB over " << n << " addresses";
}
