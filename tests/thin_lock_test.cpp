// contend::thin_lock: exclusion, recursion across inflation, one-shot try_lock, wait/notify,
// misuse, and the sync table staying bounded. Every wait is bounded by a watchdog.
#include "contend/thin_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <thread>
#include <vector>

#include "contend/internal/thread_id.hpp"
#include "contend/synchronization_error.hpp"
#include "lock_conformance.hpp"
#include "sync_table.hpp"
#include "test_support.hpp"
#include "thin_lock_support.hpp"

using namespace contend_test;
namespace ci = contend::internal;

using ThinLocks = ::testing::Types<contend::thin_lock>;
INSTANTIATE_TYPED_TEST_SUITE_P(Thin, LockConformance, ThinLocks);

namespace {

// Runs fn on another thread and waits for it (bounded by the caller's watchdog).
template <class Fn>
void on_other_thread(Fn fn) {
    std::thread t(fn);
    t.join();
}

// Runs fn on a thread whose compact id is `id`: ids past 0xFFFE, which a process gets with
// more than 65,534 live threads, are assigned rather than reached.
template <class Fn>
void on_thread_with_id(std::uint32_t id, Fn fn) {
    bool assigned = false;
    std::thread t([&] {
        assigned = ci::assign_compact_thread_id_for_testing(id);
        if (assigned) fn();
    });
    t.join();
    ASSERT_TRUE(assigned) << "id " << id;
}

// `rounds` turns of a wait/notify ping-pong on `l`, which the caller holds: this side moves
// when `turn` has the parity `mine` (0 or 1), then hands the turn over.
void take_turns(contend::thin_lock& l, long& turn, long rounds, long mine) {
    for (long r = 0; r < rounds; ++r) {
        while (turn % 2 != mine) l.wait();
        ++turn;
        l.notify_one();
    }
}

// Every sync-table allocation fails while one exists (as with no memory left).
struct failing_allocations {
    failing_allocations() { ci::sync_table_fail_allocations_for_testing(1'000'000); }
    ~failing_allocations() { ci::sync_table_fail_allocations_for_testing(0); }
    bool any_failed() const { return ci::sync_table_fail_allocations_for_testing(1'000'000) != 1'000'000; }
};

}  // namespace

TEST(ThinLock, IsOneThirtyTwoBitWord) { static_assert(sizeof(contend::thin_lock) == 4); }

TEST(ThinLock, UncontendedUseStaysThin) {
    contend::thin_lock l;
    for (int i = 0; i < 1000; ++i) {
        l.lock();
        EXPECT_TRUE(l.is_held_by_current_thread());
        l.unlock();
    }
    EXPECT_FALSE(l.is_inflated());
    EXPECT_FALSE(l.is_held_by_current_thread());
}

TEST(ThinLock, RecursionToDepthThousandInflatesAndUnwindsExactly) {
    watchdog dog(60s);
    contend::thin_lock l;
    for (int i = 0; i < 1000; ++i) {
        l.lock();
        EXPECT_EQ(l.is_inflated(), i > static_cast<int>(contend::thin_lock::max_thin_recursion)) << "depth " << i;
    }
    for (int i = 0; i < 999; ++i) l.unlock();
    bool other_got_it = true;
    on_other_thread([&] { other_got_it = l.try_lock(); });
    EXPECT_FALSE(other_got_it) << "one level is still held";
    l.unlock();
    EXPECT_FALSE(l.is_held_by_current_thread());
    on_other_thread([&] {
        other_got_it = l.try_lock();
        if (other_got_it) l.unlock();
    });
    EXPECT_TRUE(other_got_it);
    EXPECT_THROW(l.unlock(), contend::synchronization_error);
}

// The depth counts past 2^32 entries: at 2^32 + 1 entries one unlock leaves the lock held,
// and another thread cannot take it. A 32-bit count wrapped to 0 there, and that unlock
// released the lock its owner still held 2^32 times. The test hook sets the depth of 2^32
// entries instead of making them.
TEST(ThinLock, PastTwoToTheThirtyTwoEntriesOneUnlockLeavesTheLockHeld) {
    watchdog dog(60s);
    contend::thin_lock l;
    for (int i = 0; i < 65; ++i) l.lock();  // past 63 re-entries the lock inflates
    ASSERT_TRUE(l.is_inflated());
    ASSERT_TRUE(contend::internal::set_thin_lock_reentries_for_testing(l, 0xFFFF'FFFFull));  // 2^32 entries
    l.lock();  // 2^32 + 1
    l.unlock();
    bool taken = true;
    std::thread([&] {
        taken = l.try_lock();
        if (taken) l.unlock();
    }).join();
    EXPECT_FALSE(taken) << "another thread took a lock held 2^32 times";
    EXPECT_TRUE(l.is_held_by_current_thread());
    // Back to the 65 entries this thread made, and out of them.
    ASSERT_TRUE(contend::internal::set_thin_lock_reentries_for_testing(l, 64));
    for (int i = 0; i < 65; ++i) l.unlock();
    EXPECT_FALSE(l.is_held_by_current_thread());
}

// A thread's count of locks held counts past 2^32: a thread that holds 2^32 entries and
// exits has abandoned a lock, and its id is retired. A 32-bit count wrapped to 0 there, and
// the id went back to the pool, to a later thread that would then pass for the lock's
// owner. The count is set to 2^32 - 1 rather than made.
TEST(ThinLock, AThreadThatExitsHoldingTwoToTheThirtyTwoEntriesHasItsIdRetired) {
    watchdog dog(60s);
    static contend::thin_lock l;  // abandoned held: never destroyed
    contend::thin_lock other;
    const auto retired = contend::internal::retired_compact_thread_ids();
    std::thread([&] {
        contend::internal::locks_held = 0xFFFF'FFFFu;
        l.lock();  // the 2^32nd entry, held as the thread exits
        // A lock taken free is held uncounted until another free take replaces it (or a
        // slow path forgets it): this one counts l, and its own release leaves l counted.
        other.lock();
        other.unlock();
    }).join();
    EXPECT_EQ(contend::internal::retired_compact_thread_ids(), retired + 1);
}

// The entry a thread took free last is held uncounted (internal::thin_taken_free); every
// other is in locks_held. Whichever order two free-taken locks are released in, a thread that
// releases both keeps its id for reuse, and one that still holds either has it retired.
TEST(ThinLock, ALockTakenFreeIsCountedWhenAnotherReplacesItAndNoneIsLostOrLeftOver) {
    watchdog dog(60s);
    static contend::thin_lock abandoned[2];
    for (const int how : {0, 1, 2, 3}) {
        SCOPED_TRACE(how == 0   ? "released in order"
                     : how == 1 ? "released out of order"
                     : how == 2 ? "exits holding the first"
                                : "exits holding the second");
        contend::thin_lock a, b;
        const auto retired = contend::internal::retired_compact_thread_ids();
        std::uint64_t held_after = 99;
        const void* uncounted_after = &a;
        std::thread([&] {
            contend::thin_lock& first = how == 2 ? abandoned[0] : a;
            contend::thin_lock& second = how == 3 ? abandoned[1] : b;
            first.lock();
            second.lock();
            if (how == 0) {
                second.unlock();
                first.unlock();
            } else if (how == 1) {
                first.unlock();
                second.unlock();
            } else if (how == 2) {
                second.unlock();
            } else {
                first.unlock();
            }
            held_after = contend::internal::locks_held;
            uncounted_after = contend::internal::thin_taken_free;
        }).join();
        const bool holds = how >= 2;
        EXPECT_EQ(held_after + (uncounted_after != nullptr ? 1 : 0), holds ? 1u : 0u);
        EXPECT_EQ(contend::internal::retired_compact_thread_ids(), retired + (holds ? 1 : 0));
    }
}

TEST(ThinLock, OneShotTryLockOnALockHeldElsewhereFailsWithoutInflating) {
    watchdog dog(60s);
    contend::thin_lock l;
    l.lock();
    const auto before = contend::internal::sync_table_stats().inflations;
    int successes = 0;
    on_other_thread([&] {
        for (int i = 0; i < 100000; ++i) successes += l.try_lock() ? 1 : 0;
    });
    EXPECT_EQ(successes, 0);
    EXPECT_FALSE(l.is_inflated());
    EXPECT_EQ(contend::internal::sync_table_stats().inflations, before);
    l.unlock();
}

TEST(ThinLock, ContentionInflatesAndExclusionHolds) {
    watchdog dog(120s);
    contend::thin_lock l;
    long counter = 0;
    const long per = scaled(100000);
    run_threads(8, [&](int) {
        for (long i = 0; i < per; ++i) {
            l.lock();
            counter = counter + 1;
            l.unlock();
        }
    });
    EXPECT_EQ(counter, per * 8);
    // Whether 8 threads on this machine ever parked is the scheduler's call; the count is
    // what must hold. A lock that must be contended: hold it while another thread waits.
    contend::thin_lock m;
    EXPECT_TRUE(inflate_by_contention(m)) << "a thread that parked inflates the lock it then gets";
}

TEST(ThinLock, WaitNotifyPingPongHundredThousandRounds) {
    watchdog dog(240s);
    contend::thin_lock l;
    long turn = 0;  // even: ping's turn, odd: pong's
    const long rounds = scaled(100000);
    std::thread pong([&] {
        l.lock();
        take_turns(l, turn, rounds, 1);
        l.unlock();
    });
    l.lock();
    take_turns(l, turn, rounds, 0);
    while (turn < 2 * rounds) l.wait();
    l.unlock();
    pong.join();
    EXPECT_EQ(turn, 2 * rounds);
}

TEST(ThinLock, NotifyAllWakesEveryOneOfThirtyTwoWaiters) {
    watchdog dog(120s);
    contend::thin_lock l;
    int waiting = 0;
    bool go = false;
    int woke = 0;
    std::vector<std::thread> threads;
    for (int i = 0; i < 32; ++i) {
        threads.emplace_back([&] {
            l.lock();
            ++waiting;
            while (!go) l.wait();
            ++woke;
            l.unlock();
        });
    }
    ASSERT_TRUE(eventually([&] {
        l.lock();
        const bool all = waiting == 32;
        l.unlock();
        return all;
    }));
    l.lock();
    go = true;
    l.notify_all();
    l.unlock();
    for (auto& t : threads) t.join();
    EXPECT_EQ(woke, 32);
}

TEST(ThinLock, WaitForTimingOutReturnsFalseAndHoldsAtTheSameDepth) {
    watchdog dog(60s);
    contend::thin_lock l;
    for (int i = 0; i < 3; ++i) l.lock();
    const auto start = steady::now();
    EXPECT_FALSE(l.wait_for(20ms));
    EXPECT_GE(steady::now() - start, 20ms);
    EXPECT_TRUE(l.is_held_by_current_thread());
    bool other_got_it = true;
    for (int i = 0; i < 3; ++i) {
        on_other_thread([&] { other_got_it = l.try_lock(); });
        EXPECT_FALSE(other_got_it) << "depth " << 3 - i << " must still be held";
        l.unlock();
    }
    EXPECT_THROW(l.unlock(), contend::synchronization_error);
}

TEST(ThinLock, MisuseThrowsAndLeavesTheLockUsable) {
    watchdog dog(60s);
    contend::thin_lock l;
    EXPECT_THROW(l.unlock(), contend::synchronization_error);  // exit without enter
    EXPECT_THROW(l.wait_for(1ms), contend::synchronization_error);  // wait without holding
    EXPECT_THROW(l.notify_one(), contend::synchronization_error);
    EXPECT_THROW(l.notify_all(), contend::synchronization_error);
    l.lock();
    bool threw = false;
    on_other_thread([&] {
        try {
            l.unlock();  // exit by another thread
        } catch (const contend::synchronization_error&) {
            threw = true;
        }
    });
    EXPECT_TRUE(threw);
    EXPECT_TRUE(l.is_held_by_current_thread());
    l.unlock();
    EXPECT_THROW(l.unlock(), contend::synchronization_error);  // more exits than enters
    // The same on an inflated lock.
    l.lock();
    EXPECT_FALSE(l.wait_for(1ms));
    ASSERT_TRUE(l.is_inflated());
    threw = false;
    on_other_thread([&] {
        try {
            l.unlock();
        } catch (const contend::synchronization_error&) {
            threw = true;
        }
    });
    EXPECT_TRUE(threw);
    l.unlock();
    EXPECT_THROW(l.unlock(), contend::synchronization_error);
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(ThinLock, AMillionCreateInflateDestroyCyclesKeepTheSyncTableBounded) {
    watchdog dog(240s);
    const auto before = contend::internal::sync_table_stats();
    const long cycles = scaled(1'000'000);
    for (long i = 0; i < cycles; ++i) {
        contend::thin_lock l;
        l.lock();
        for (unsigned d = 0; d <= contend::thin_lock::max_thin_recursion; ++d) l.lock();  // overflow: inflates
        ASSERT_TRUE(l.is_inflated());
        for (unsigned d = 0; d <= contend::thin_lock::max_thin_recursion; ++d) l.unlock();
        l.unlock();
    }
    const auto after = contend::internal::sync_table_stats();
    EXPECT_EQ(after.inflations - before.inflations, static_cast<std::uint64_t>(cycles));
    // Background sweeps may deflate other tests' fat locks meanwhile; each one they did
    // left the table one entry lighter.
    EXPECT_EQ(after.live, before.live - (after.deflations - before.deflations));
    EXPECT_LE(after.capacity, before.capacity + 1024) << "released entries must be reused";
}

// With more than 65,534 live threads the rest get ids that the word's 16-bit owner field
// cannot hold. The id (1 << 16) | mine reads, in a thin word, as "owner mine, one re-entry",
// and 0xFFFF is the placeholder the word shows while such a thread inflates the lock.
TEST(ThinLock, AThreadWhoseIdDoesNotFitTheWordNeverPassesForAnotherOwner) {
    watchdog dog(60s);
    const std::uint32_t mine = ci::compact_thread_id();
    ASSERT_LE(mine, ci::max_compact_thread_id);
    for (const std::uint32_t wide : {mine | contend::thin_lock::recursion_unit, contend::thin_lock::wide_owner}) {
        contend::thin_lock l;
        // The wide thread holds the lock (twice); this thread must not pass for its owner.
        std::atomic<int> stage{0};
        std::thread holder([&] {
            ASSERT_TRUE(ci::assign_compact_thread_id_for_testing(wide));
            l.lock();
            l.lock();
            EXPECT_TRUE(l.is_held_by_current_thread());
            EXPECT_TRUE(l.is_inflated()) << "a wide id holds the lock only through its fat lock";
            stage.store(1);
            while (stage.load() != 2) std::this_thread::yield();
            l.unlock();
            l.unlock();
            EXPECT_THROW(l.unlock(), contend::synchronization_error);
        });
        ASSERT_TRUE(eventually([&] { return stage.load() == 1; }));
        EXPECT_FALSE(l.try_lock()) << "id " << wide;
        EXPECT_FALSE(l.is_held_by_current_thread());
        EXPECT_THROW(l.unlock(), contend::synchronization_error);
        stage.store(2);
        holder.join();
        EXPECT_TRUE(l.try_lock());
        l.unlock();

        // This thread holds the lock thin at depth 1 (the word is then mine | one re-entry):
        // the wide thread must neither enter nor release it.
        contend::thin_lock m;
        m.lock();
        m.lock();
        ASSERT_FALSE(m.is_inflated());
        on_thread_with_id(wide + 2, [&] {
            EXPECT_FALSE(m.try_lock());
            EXPECT_FALSE(m.is_held_by_current_thread());
            EXPECT_THROW(m.unlock(), contend::synchronization_error);
            EXPECT_FALSE(m.try_lock_for(1ms));
        });
        EXPECT_TRUE(m.is_held_by_current_thread());
        m.unlock();
        m.unlock();
        EXPECT_THROW(m.unlock(), contend::synchronization_error);
    }
}

// Threads with ids that fit and ids that do not, on one lock that a sweeper keeps turning
// thin again, so the wide threads keep taking free thin words: a plain counter checks the
// exclusion (and TSan the ordering).
TEST(ThinLock, ExclusionHoldsBetweenThreadsWithIdsThatFitTheWordAndIdsThatDoNot) {
    watchdog dog(120s);
    contend::thin_lock l;
    long counter = 0;
    const long per = scaled(200000);
    constexpr int wide_threads = 3, thin_threads = 3;
    const std::uint32_t wide_ids[wide_threads] = {contend::thin_lock::wide_owner, (1u << 16) | 1, (1u << 16) | 2};
    std::atomic<int> running{wide_threads + thin_threads};
    const auto before = ci::sync_table_stats();
    std::thread sweeper([&] {
        while (running.load() > 0) {
            ci::sync_table_sweep(false);
            std::this_thread::yield();
        }
    });
    run_threads(wide_threads + thin_threads, [&](int t) {
        if (t < wide_threads) {
            ASSERT_TRUE(ci::assign_compact_thread_id_for_testing(wide_ids[t]));
        }
        for (long i = 0; i < per; ++i) {
            l.lock();
            if (i % 8 == 0) l.lock();  // re-entry, thin or fat
            counter = counter + 1;
            if (i % 8 == 0) l.unlock();
            l.unlock();
        }
        running.fetch_sub(1);
    });
    sweeper.join();
    EXPECT_EQ(counter, per * (wide_threads + thin_threads));
    const auto after = ci::sync_table_stats();
    std::printf("inflations %llu, deflations %llu\n",
                static_cast<unsigned long long>(after.inflations - before.inflations),
                static_cast<unsigned long long>(after.deflations - before.deflations));
    EXPECT_GE(after.inflations - before.inflations, 1u);
}

// A thread that parked for the lock inflates it once it has it; if no fat lock can be had,
// lock() must still return holding the lock (it used to throw bad_alloc out of lock() with
// the lock held, so the caller never released it).
TEST(ThinLock, AContendedLockThatCannotInflateIsStillAcquiredAndStaysThin) {
    watchdog dog(60s);
    contend::thin_lock l;
    bool inflated = true, failed = false;
    {
        failing_allocations no_memory;
        inflated = inflate_by_contention(l);
        failed = no_memory.any_failed();
    }
    EXPECT_TRUE(failed) << "the waiter never parked, so it never tried to inflate";
    EXPECT_FALSE(inflated);
    EXPECT_FALSE(l.is_inflated());
    on_other_thread([&] {
        EXPECT_TRUE(l.try_lock()) << "the waiter released what it got";
        l.unlock();
    });
}

// A thread whose id does not fit holds a lock only inflated: with no fat lock to be had,
// lock() and try_lock() throw bad_alloc and leave the lock free, its word thin.
TEST(ThinLock, AWideThreadThatCannotInflateThrowsBadAllocAndHoldsNothing) {
    watchdog dog(60s);
    contend::thin_lock l;
    on_thread_with_id((1u << 16) | 7, [&] {
        {
            failing_allocations no_memory;
            EXPECT_THROW(l.lock(), std::bad_alloc);
            EXPECT_THROW(l.try_lock(), std::bad_alloc);
        }
        EXPECT_FALSE(l.is_held_by_current_thread());
        EXPECT_FALSE(l.is_inflated());
        EXPECT_THROW(l.unlock(), contend::synchronization_error);
        l.lock();  // memory again: it works
        EXPECT_TRUE(l.is_inflated());
        l.unlock();
    });
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

// Compact ids are reused: a thread that exits returns its id, and the next thread to start
// may get it. A thread's first lock() takes its id on the slow path, and the word must be
// read after that: else a new thread could read the word while the owner still held it,
// have that owner exit and hand the id on, and then find "its own" id in the word and take
// itself for the owner (a re-entry of a lock it never took, which later leaves the word
// held by nobody alive). Here threads come and go, more of them than CPUs, each taking the
// lock a few times: a plain counter checks the exclusion, the watchdog a lock left held.
TEST(ThinLock, ThreadsThatComeAndGoNeverInheritALockHeldByOneThatLeft) {
    watchdog dog(120s);
    contend::thin_lock l;
    long counter = 0, expected = 0;
    // Starting threads is what costs under a sanitizer (25 generations took 11 s under TSan),
    // and the race this looks for needs the optimized build's speed to show: 200 generations
    // hung 3 runs in 3 there with the bug.
    const int generations = under_sanitizer ? 8 : 200, threads_per_generation = 64;
    for (int g = 0; g < generations; ++g) {
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        threads.reserve(threads_per_generation);
        for (int t = 0; t < threads_per_generation; ++t) {
            const long ops = 1 + (g * 7 + t * 37) % 64 * 16;  // they finish at different times
            expected += ops;
            threads.emplace_back([&, ops] {
                while (!go.load()) std::this_thread::yield();
                for (long i = 0; i < ops; ++i) {
                    l.lock();
                    counter = counter + 1;
                    l.unlock();
                }
            });
        }
        go.store(true);
        for (auto& t : threads) t.join();
    }
    EXPECT_EQ(counter, expected);
    EXPECT_TRUE(l.try_lock()) << "a thread that is gone left the lock held";
    l.unlock();
}

// A thread that exits holding the lock (thin, re-entered, or inflated) abandons it: its id is
// retired, so the next new thread, which the lowest-free-first rule would have given that
// same id, is not taken for the owner.
TEST(ThinLock, AThreadThatExitsHoldingTheLockPassesItToNoNewThread) {
    watchdog dog(60s);
    for (const int how : {0, 1, 2}) {
        SCOPED_TRACE(how == 0 ? "thin" : how == 1 ? "re-entered" : "inflated");
        // Static: an abandoned lock must not be destroyed while held (its fat lock would go
        // back to the sync table locked), nor its address reused by a later test.
        static contend::thin_lock abandoned[3];
        contend::thin_lock& l = abandoned[how];
        const std::uint32_t retired_before = contend::internal::retired_compact_thread_ids();
        std::uint32_t gone_id = 0;
        std::thread([&] {
            gone_id = contend::internal::compact_thread_id();
            l.lock();
            if (how >= 1) l.lock();
            if (how == 2) {
                l.wait_for(1ms);  // wait() inflates
                ASSERT_TRUE(l.is_inflated());
            }
        }).join();
        EXPECT_EQ(contend::internal::retired_compact_thread_ids(), retired_before + 1);
        std::uint32_t next_id = 0;
        bool held = true, unlock_refused = false, try_lock_took_it = true;
        std::thread([&] {
            next_id = contend::internal::compact_thread_id();
            held = l.is_held_by_current_thread();
            try {
                l.unlock();
            } catch (const contend::synchronization_error&) {
                unlock_refused = true;
            }
            try_lock_took_it = l.try_lock();
            if (try_lock_took_it) l.unlock();
        }).join();
        EXPECT_NE(next_id, gone_id);
        EXPECT_FALSE(held);
        EXPECT_TRUE(unlock_refused);
        EXPECT_FALSE(try_lock_took_it) << "the abandoned lock stays held";
    }
    // A thread that let go of everything gives its id back as before.
    std::uint32_t first = 0, second = 0;
    contend::thin_lock l;
    std::thread([&] {
        first = contend::internal::compact_thread_id();
        l.lock();
        l.unlock();
    }).join();
    std::thread([&] { second = contend::internal::compact_thread_id(); }).join();
    EXPECT_EQ(first, second);
}

// wait() and notify_*() from a thread whose id does not fit: it holds the lock only fat, so
// wait() must give the fat lock up and take it back with the whole id, at the same depth.
TEST(ThinLock, AWideThreadWaitsAndNotifiesLikeAnyOther) {
    watchdog dog(60s);
    contend::thin_lock l;
    long turn = 0;  // even: the wide thread's turn, odd: this thread's
    const long rounds = scaled(2000);
    std::thread wide([&] {
        ASSERT_TRUE(ci::assign_compact_thread_id_for_testing((1u << 16) | 9));
        l.lock();
        l.lock();  // depth 1 across every wait
        take_turns(l, turn, rounds, 0);
        while (turn < 2 * rounds) l.wait();  // this thread's last notify
        EXPECT_FALSE(l.wait_for(1ms));  // nobody notifies now: times out, still held twice
        l.unlock();
        EXPECT_TRUE(l.is_held_by_current_thread());
        l.unlock();
        EXPECT_FALSE(l.is_held_by_current_thread());
    });
    l.lock();
    take_turns(l, turn, rounds, 1);
    l.unlock();
    wide.join();
    EXPECT_EQ(turn, 2 * rounds);
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

// unlock() trusts, without reading the word, a lock this thread took free with the inline
// CAS (thin_lock.hpp, taken_free). Every way the owner can change the word after such a take
// must make the next unlock read it again: re-entry, out-of-order release of nested locks,
// inflation by a wait, and a release attempted by a thread that never took the lock.
TEST(ThinLock, UnlockAfterAFreeTakeSeesEveryChangeTheOwnerMadeSince) {
    watchdog dog(60s);
    contend::thin_lock a;
    contend::thin_lock b;

    a.lock();
    a.lock();  // re-entry: depth 1
    a.unlock();
    EXPECT_TRUE(a.is_held_by_current_thread()) << "the first exit of a re-entered lock released it";
    a.unlock();
    EXPECT_FALSE(a.is_held_by_current_thread());
    EXPECT_THROW(a.unlock(), contend::synchronization_error);

    a.lock();
    b.lock();
    a.unlock();  // not the lock taken last
    EXPECT_FALSE(a.is_held_by_current_thread());
    EXPECT_TRUE(b.is_held_by_current_thread());
    b.unlock();
    EXPECT_FALSE(b.is_held_by_current_thread());
    EXPECT_THROW(b.unlock(), contend::synchronization_error);

    ASSERT_TRUE(a.try_lock());
    EXPECT_FALSE(a.wait_for(1ms));  // a wait inflates the lock the thread took free
    EXPECT_TRUE(a.is_inflated());
    a.unlock();
    EXPECT_FALSE(a.is_held_by_current_thread());
    EXPECT_THROW(a.unlock(), contend::synchronization_error);

    b.lock();
    std::thread other([&] { EXPECT_THROW(b.unlock(), contend::synchronization_error); });
    other.join();
    EXPECT_TRUE(b.is_held_by_current_thread()) << "a thread that never took the lock released it";
    b.unlock();
    std::thread taker([&] {
        EXPECT_TRUE(b.try_lock()) << "the lock was left held";
        b.unlock();
    });
    taker.join();
}

// A lock destroyed while its thread still held it (a misuse) leaves nothing behind: a lock
// built later at the same address and taken by another thread is not released by the first
// thread's unlock, which is refused as for any lock it does not hold.
TEST(ThinLock, ALockBuiltWhereAHeldOneWasDestroyedIsNotReleasedByItsOldOwner) {
    watchdog dog(60s);
    {
        contend::thin_lock warm;  // the thread's id first, so that the next lock() is the inline CAS
        warm.lock();
        warm.unlock();
    }
    alignas(contend::thin_lock) unsigned char storage[sizeof(contend::thin_lock)];
    auto* first = new (storage) contend::thin_lock;
    first->lock();
    first->~thin_lock();
    auto* second = new (storage) contend::thin_lock;
    std::atomic<bool> taken{false};
    std::atomic<bool> release{false};
    std::thread other([&] {
        second->lock();
        taken = true;
        const auto give_up = steady::now() + 10s;
        while (!release.load() && steady::now() < give_up) std::this_thread::sleep_for(1ms);
        second->unlock();
    });
    const auto give_up = steady::now() + 10s;
    while (!taken.load() && steady::now() < give_up) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(taken.load());
    EXPECT_THROW(second->unlock(), contend::synchronization_error);
    EXPECT_FALSE(second->try_lock()) << "the other thread's hold was released";
    release = true;
    other.join();
    second->~thin_lock();
}
