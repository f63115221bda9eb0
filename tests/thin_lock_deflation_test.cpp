// Deflation of contend::thin_lock: an idle fat lock goes back to thin after two sweeps with
// no acquisition between them; a held, recursed or waited-on lock never does; a deflation
// racing with threads entering the lock keeps exclusion and loses no waiter; destruction
// racing with sweeps frees nothing twice. Every wait is bounded by a watchdog.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "contend/thin_lock.hpp"
#include "sync_table.hpp"
#include "test_support.hpp"
#include "thin_lock_support.hpp"

using namespace contend_test;
using contend::thin_lock;

namespace {

// Background sweeps off for the test's length, so that the sweeps a test asks for are the
// only ones; restored after.
class no_background_sweeps {
public:
    no_background_sweeps() : before_(thin_lock::deflation_interval()) { thin_lock::set_deflation_interval(0ms); }
    ~no_background_sweeps() { thin_lock::set_deflation_interval(before_); }

private:
    std::chrono::milliseconds before_;
};

void inflate_by_recursion(contend::thin_lock& l) {
    for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.lock();
    for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.unlock();
}

}  // namespace

TEST(ThinLockDeflation, AnIdleFatLockIsThinAfterTwoSweepsAndCounted) {
    watchdog dog(60s);
    no_background_sweeps quiet;
    contend::thin_lock l;
    inflate_by_recursion(l);
    ASSERT_TRUE(l.is_inflated());
    const auto before = thin_lock::stats();
    thin_lock::deflate_idle_locks();  // marks it
    EXPECT_TRUE(l.is_inflated()) << "one sweep only marks";
    EXPECT_GE(thin_lock::deflate_idle_locks(), 1u);
    EXPECT_FALSE(l.is_inflated());
    const auto after = thin_lock::stats();
    EXPECT_EQ(after.deflations - before.deflations, 1u);
    EXPECT_EQ(after.live_fat_locks, before.live_fat_locks - 1);
    // Thin again, and whole: lock, recursion, try_lock elsewhere, misuse.
    l.lock();
    l.lock();
    EXPECT_FALSE(l.is_inflated());
    EXPECT_TRUE(l.is_held_by_current_thread());
    bool other = true;
    std::thread([&] { other = l.try_lock(); }).join();
    EXPECT_FALSE(other);
    l.unlock();
    l.unlock();
    EXPECT_THROW(l.unlock(), contend::synchronization_error);
    // And it inflates again when it must.
    inflate_by_recursion(l);
    EXPECT_TRUE(l.is_inflated());
}

TEST(ThinLockDeflation, AnAcquisitionBetweenSweepsKeepsTheLockFat) {
    watchdog dog(60s);
    no_background_sweeps quiet;
    contend::thin_lock l;
    inflate_by_recursion(l);
    thin_lock::deflate_idle_locks();
    l.lock();  // touched since the mark
    l.unlock();
    thin_lock::deflate_idle_locks();
    EXPECT_TRUE(l.is_inflated()) << "used between the two sweeps: not idle";
    thin_lock::deflate_idle_locks();
    EXPECT_FALSE(l.is_inflated()) << "idle since the last sweep";
}

TEST(ThinLockDeflation, HeldRecursedOrWaitedOnLocksAreNeverDeflated) {
    watchdog dog(60s);
    no_background_sweeps quiet;
    contend::thin_lock held;
    inflate_by_recursion(held);
    held.lock();
    held.lock();  // recursed, fat
    for (int i = 0; i < 3; ++i) contend::internal::sync_table_sweep(false);  // forced: no mark needed
    EXPECT_TRUE(held.is_inflated());
    held.unlock();
    EXPECT_TRUE(held.is_held_by_current_thread());
    held.unlock();

    // A thread inside wait() owns nothing, yet its lock must stay fat: a notify on a thin
    // lock wakes nobody.
    contend::thin_lock waited;
    std::atomic<bool> waiting{false}, done{false};
    bool ready = false;
    std::thread waiter([&] {
        waited.lock();
        waiting.store(true);
        while (!ready) waited.wait();
        waited.unlock();
        done.store(true);
    });
    ASSERT_TRUE(eventually([&] { return waiting.load(); }));
    // Inside wait() once it can take the lock again.
    waited.lock();
    for (int i = 0; i < 3; ++i) contend::internal::sync_table_sweep(false);
    EXPECT_TRUE(waited.is_inflated());
    waited.unlock();
    for (int i = 0; i < 3; ++i) contend::internal::sync_table_sweep(false);
    EXPECT_TRUE(waited.is_inflated()) << "a thread waits on it";
    waited.lock();
    ready = true;
    waited.notify_all();
    waited.unlock();
    waiter.join();
    EXPECT_TRUE(done.load());
    contend::internal::sync_table_sweep(false);
    EXPECT_FALSE(waited.is_inflated()) << "nobody waits any more";
}

TEST(ThinLockDeflation, ALockInflatedUnderContentionThenLeftAloneIsThinAgain) {
    watchdog dog(60s);
    // Sweeps off until the lock is seen fat (two background sweeps 10 ms apart could deflate
    // it before the check); the guard restores the interval however the test ends.
    no_background_sweeps sweeps_off_for_now;
    contend::thin_lock l;
    ASSERT_TRUE(inflate_by_contention(l)) << "a thread that parked inflates the lock it then gets";
    const auto deflations = thin_lock::stats().deflations;
    // Left alone: the background sweeps (every 10 ms from now) make it thin.
    thin_lock::set_deflation_interval(10ms);
    EXPECT_TRUE(eventually([&] { return !l.is_inflated(); }, 10s));
    EXPECT_GE(thin_lock::stats().deflations, deflations + 1);
    l.lock();
    EXPECT_FALSE(l.is_inflated());
    l.unlock();
}

// The race the design is about: threads read the fat word, then a sweep deflates the lock,
// then they take the old entry's mutex (which may serve another lock by then). Forced sweeps
// (no mark needed) run back to back while 64 threads hammer 4 locks: contention keeps
// inflating them, the sweeps keep deflating them whenever they are free for an instant.
// Exclusion is checked by a plain counter and an `inside` flag per lock; two threads ping-pong
// through wait()/notify_one() on one of the locks without a deadline, so a wake-up lost to a
// deflation hangs them and the watchdog fails the test.
TEST(ThinLockDeflation, DeflationRacingWithEnteringThreadsKeepsExclusionAndLosesNoWaiter) {
    watchdog dog(240s);
    no_background_sweeps quiet;
    constexpr int locks = 4;
    struct guarded {
        contend::thin_lock l;
        long counter = 0;
        bool inside = false;
    };
    guarded g[locks];
    std::atomic<bool> stop{false};
    std::atomic<long> broken{0};
    const auto before = thin_lock::stats();
    std::thread sweeper([&] {
        while (!stop.load(std::memory_order_relaxed)) contend::internal::sync_table_sweep(false);
    });

    // Ping-pong on g[0] with wait()/notify_one().
    const long rounds = scaled(20000);
    long turn = 0;  // under g[0].l
    auto player = [&](long parity) {
        for (long r = 0; r < rounds; ++r) {
            g[0].l.lock();
            while (turn % 2 != parity) g[0].l.wait();
            ++turn;
            g[0].l.notify_one();
            g[0].l.unlock();
        }
    };
    std::thread ping(player, 0), pong(player, 1);

    const int threads = 64;
    const long per = scaled(20000);
    run_threads(threads, [&](int t) {
        for (long i = 0; i < per; ++i) {
            guarded& x = g[(t + i) % locks];
            x.l.lock();
            if (x.inside) broken.fetch_add(1);
            x.inside = true;
            x.counter = x.counter + 1;
            if ((i & 63) == 0) std::this_thread::yield();  // holders preempted: waiters park, locks inflate
            x.inside = false;
            x.l.unlock();
        }
    });
    ping.join();
    pong.join();
    stop.store(true);
    sweeper.join();

    long total = 0;
    for (auto& x : g) total += x.counter;
    EXPECT_EQ(broken.load(), 0);
    EXPECT_EQ(total, threads * per);
    EXPECT_EQ(turn, 2 * rounds);
    const auto after = thin_lock::stats();
    EXPECT_GT(after.deflations, before.deflations) << "the race was never run: no deflation happened";
    EXPECT_GT(after.inflations, before.inflations + 1) << "no lock inflated again after a deflation";
}

// Destroying a lock while sweeps run: the sweep must never touch a destroyed word, and each
// entry returns to the table once (ASan sees a use after free, the counts a double release).
TEST(ThinLockDeflation, DestructionRacingWithSweepsReleasesEachEntryOnce) {
    watchdog dog(120s);
    no_background_sweeps quiet;
    std::atomic<bool> stop{false};
    std::thread sweeper([&] {
        // A yield between sweeps: the table's lock is a plain std::mutex, and a loop that
        // re-takes it at once starved the main thread's inflations on a busy machine (four
        // copies of this test at once on 2 CPUs, five repetitions each, all ran past the
        // watchdog's 120 s; with the yield they take 11 to 15 s).
        while (!stop.load(std::memory_order_relaxed)) {
            contend::internal::sync_table_sweep(false);
            std::this_thread::yield();
        }
    });
    const auto before = contend::internal::sync_table_stats();
    const long cycles = scaled(200000);
    for (long i = 0; i < cycles; ++i) {
        auto* l = new contend::thin_lock;
        inflate_by_recursion(*l);
        if (i % 2 == 0) std::this_thread::yield();  // let a sweep find some of them idle
        delete l;
    }
    stop.store(true);
    sweeper.join();
    const auto after = contend::internal::sync_table_stats();
    EXPECT_EQ(after.inflations - before.inflations, static_cast<std::uint64_t>(cycles));
    EXPECT_EQ(after.live, before.live - 0) << "every entry deflated or released, none twice";
    EXPECT_LE(after.capacity, before.capacity + 1024);
}

// A hostile interval: milliseconds::max() must not overflow the sweeper's clock into a sweep
// every instant (it counts as 24 hours), and a negative one stops the sweeps.
TEST(ThinLockDeflation, ExtremeIntervalsNeitherOverflowNorSweepAtOnce) {
    watchdog dog(60s);
    const auto before = thin_lock::deflation_interval();
    for (const auto interval : {std::chrono::milliseconds::max(), std::chrono::milliseconds(-5)}) {
        thin_lock::set_deflation_interval(interval);
        EXPECT_EQ(thin_lock::deflation_interval(),
                  interval.count() > 0 ? std::chrono::milliseconds(std::chrono::hours(24)) : 0ms);
        contend::thin_lock l;
        inflate_by_recursion(l);
        std::this_thread::sleep_for(50ms);  // a sweeper that overflowed would sweep all the time
        EXPECT_TRUE(l.is_inflated());
    }
    thin_lock::set_deflation_interval(before);
}

// A sweep looks at the fat locks in use, not at every entry the table ever made: after a
// thousand inflated locks are destroyed, a sweep with two live fat locks visits two.
TEST(ThinLockDeflation, ASweepVisitsOnlyTheFatLocksInUse) {
    watchdog dog(60s);
    no_background_sweeps quiet;
    contend::internal::sync_table_sweep(false);  // other tests' idle fat locks out of the way
    {
        std::vector<std::unique_ptr<contend::thin_lock>> many;
        for (int i = 0; i < 1000; ++i) {
            many.push_back(std::make_unique<contend::thin_lock>());
            inflate_by_recursion(*many.back());
        }
    }
    contend::thin_lock a, b;
    inflate_by_recursion(a);
    inflate_by_recursion(b);
    a.lock();
    b.lock();  // held: visited, not deflated
    const auto live = contend::internal::sync_table_stats().live;
    contend::internal::sync_table_sweep(false);
    EXPECT_EQ(contend::internal::sync_table_stats().last_sweep_visits, live);
    EXPECT_EQ(live, 2u) << "only a and b are fat now";
    EXPECT_GE(contend::internal::sync_table_stats().capacity, 1000u) << "the table kept the entries it made";
    a.unlock();
    b.unlock();
}
