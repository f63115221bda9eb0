// This program checks every unlock (the debug builds' behaviour, whatever NDEBUG says):
// mutex_unchecked_test.cpp tests the optimized unlock.
#define CONTEND_CHECK_UNLOCK 1
#include "contend/mutex.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <limits>
#include <map>
#include <type_traits>

#include "contend/cpu_relax.hpp"
#include "contend/parking_lot.hpp"
#include "lock_conformance.hpp"

namespace contend_test {

using Mutexes = ::testing::Types<contend::mutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(Mutex, LockConformance, Mutexes);

// Threads counted in the waiter slot of m's address (about to park, napping or parked): a
// test's own mutex is the only one using its slot while it runs.
std::uint32_t registered_waiters(const contend::mutex& m) {
    return contend::internal::waiter_slot_for(&m).load() & contend::internal::waiter_slot_count_mask;
}

TEST(Mutex, IsOneByte) { static_assert(sizeof(contend::mutex) == 1); }

TEST(Mutex, TryLockForGivesUpNoEarlierThanItsDeadline) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    bool got = true;
    steady::duration waited{};
    std::thread([&] {
        const auto start = steady::now();
        got = m.try_lock_for(50ms);
        waited = steady::now() - start;
    }).join();
    EXPECT_FALSE(got);
    EXPECT_GE(waited, 50ms);
    EXPECT_LT(waited, 5s);  // generous: only "not absurdly later"
    m.unlock();
    EXPECT_TRUE(m.try_lock_for(10ms));
    m.unlock();
}

TEST(Mutex, TryLockUntilAcceptsOtherClocks) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    bool got = true;
    steady::duration waited{};
    std::thread([&] {
        const auto start = steady::now();
        got = m.try_lock_until(std::chrono::system_clock::now() + 40ms);
        waited = steady::now() - start;
    }).join();
    EXPECT_FALSE(got);
    EXPECT_GE(waited, 39ms);  // system_clock granularity may round the conversion by a tick
    EXPECT_LT(waited, 5s);
    m.unlock();
}

// A far-past deadline on a non-steady clock (t - now overflowed) and a NaN duration (undefined
// behaviour in the conversion) both mean "already expired": the timed lock fails at once
// instead of blocking forever.
TEST(Mutex, TimedLockWithAFarPastDeadlineOrANanDurationFailsAtOnce) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    bool far_past = true, nan = true;
    steady::duration waited{};
    std::thread([&] {
        const auto start = steady::now();
        far_past = m.try_lock_until(std::chrono::system_clock::time_point::min());
        nan = m.try_lock_for(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()));
        waited = steady::now() - start;
    }).join();
    EXPECT_FALSE(far_past);
    EXPECT_FALSE(nan);
    EXPECT_LT(waited, 5s);
    m.unlock();
}

// A steady deadline or a duration too far off for nanoseconds (hours::max(), 1e30 s, +inf)
// means "no deadline": the timed lock waits, and gets the mutex when it is released. The cast
// of such a steady time point to nanoseconds overflowed, and the lock failed at once.
TEST(Mutex, TimedLockWithADeadlineTooFarForNanosecondsWaitsUntilReleased) {
    watchdog dog(120s);
    contend::mutex m;
    const auto check = [&](auto try_lock, const char* what) {
        m.lock();
        EXPECT_TRUE(wait_outlasts_until_released(
            [&] {
                const bool got = try_lock();
                if (got) m.unlock();
                return got;
            },
            [&] { m.unlock(); }))
            << what;
    };
    for_each_far_future_time_point([&](auto t, const char* what) { check([&] { return m.try_lock_until(t); }, what); });
    for_each_far_future_duration([&](auto d, const char* what) { check([&] { return m.try_lock_for(d); }, what); });
}

// A steady deadline or a duration below what nanoseconds hold, negative, -inf or NaN has
// passed: the timed lock of a held mutex fails without waiting (the watchdog bounds it).
TEST(Mutex, TimedLockWithAPassedDeadlineOfAnyRepresentationFails) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    std::thread([&] {
        for_each_passed_time_point([&](auto t, const char* what) { EXPECT_FALSE(m.try_lock_until(t)) << what; });
        for_each_passed_duration([&](auto d, const char* what) { EXPECT_FALSE(m.try_lock_for(d)) << what; });
    }).join();
    m.unlock();
}

TEST(Mutex, TimedLockSucceedsWhenReleasedBeforeTheDeadline) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    const auto before = registered_waiters(m);
    std::atomic<bool> got{false};
    tid_box tid;
    std::thread waiter([&] {
        tid.publish();
        got = m.try_lock_for(30s);
        if (got) m.unlock();
    });
    // Parked: counted in the mutex's waiter slot and asleep in the kernel.
    EXPECT_TRUE(eventually([&] { return registered_waiters(m) == before + 1 && thread_blocked(tid.get()); }));
    m.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
}

// A parked waiter gets the mutex although its holder never stops taking it back: the holder
// releases with a plain unlock() and re-locks at once, so only the fairness rule (the designee's
// handoff request after about 1 ms) can let the waiter in. Bounded by a count of re-takes
// (at least 10 s of them on any machine), not by a time assertion.
TEST(Mutex, AParkedWaiterGetsTheMutexWhileItsHolderKeepsTakingItBack) {
    watchdog dog(60s);
    contend::mutex m;
    const auto before = registered_waiters(m);
    m.lock();
    std::atomic<bool> got{false};
    tid_box tid;
    std::thread waiter([&] {
        tid.publish();
        m.lock();
        got.store(true);
        m.unlock();
    });
    EXPECT_TRUE(eventually([&] { return registered_waiters(m) == before + 1 && thread_blocked(tid.get()); }));
    long retakes = 0;
    const auto give_up = steady::now() + 10s;
    while (!got.load(std::memory_order_relaxed) && steady::now() < give_up) {
        m.unlock();
        m.lock();
        ++retakes;
    }
    m.unlock();
    waiter.join();
    EXPECT_TRUE(got.load()) << "the waiter starved through " << retakes << " re-takes of its holder";
}

// End to end: eight threads barging on one mutex with short holds all keep getting it.
// Each must reach `turns` acquisitions while all the others still contend (nobody stops
// before every thread is done); the only time bound is the loose overall one.
TEST(Mutex, NoThreadStarvesAmongEightContenders) {
    watchdog dog(120s);
    contend::mutex m;
    constexpr int n = 8;
    const long turns = scaled(10000);
    std::atomic<int> done{0};
    std::vector<long> acquisitions(n, 0);
    const auto start = steady::now();
    run_threads(n, [&](int i) {
        auto& mine = acquisitions[static_cast<std::size_t>(i)];
        bool counted = false;
        while (done.load(std::memory_order_relaxed) < n && steady::now() - start < 60s) {
            m.lock();
            ++mine;
            // Hold it a little, so the others really queue up behind it.
            for (int spin = 0; spin < 200; ++spin) {
                asm volatile("" ::: "memory");
            }
            m.unlock();
            if (!counted && mine >= turns) {
                counted = true;
                done.fetch_add(1);
            }
        }
    });
    for (int i = 0; i < n; ++i)
        EXPECT_GE(acquisitions[static_cast<std::size_t>(i)], turns) << "thread " << i << " starved";
    // A generous bound: on 2 cores with 8 threads a waiter may also wait for a CPU.
    EXPECT_LT(steady::now() - start, 30s);
}

// The waiter slots are read-only outside the registry (src/waiter_registry.cpp): the
// installed header hands out const references only.
static_assert(std::is_same_v<decltype(contend::internal::waiter_slot_for(nullptr)), const std::atomic<std::uint32_t>&>);
static_assert(std::is_same_v<decltype(contend::internal::waiter_slots[0]), const std::atomic<std::uint32_t>&>);

TEST(Mutex, UnlockFairlyHandsTheMutexToTheParkedWaiter) {
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    const auto& slot = contend::internal::waiter_slot_for(&m);
    auto registered = [&] { return slot.load() & contend::internal::waiter_slot_count_mask; };
    const auto before = registered();
    // The first waiter appoints itself designee and naps, awake now and then; the second
    // finds a designee and sleeps in the queue, where only an unlock can reach it.
    std::atomic<int> acquired_by{-1};
    std::atomic<bool> release{false};
    auto waiter = [&](int id) {
        m.lock();
        int expected = -1;
        acquired_by.compare_exchange_strong(expected, id);
        while (!release.load()) std::this_thread::yield();
        m.unlock();
    };
    tid_box designee_tid, queued_tid;
    std::thread designee([&] {
        designee_tid.publish();
        waiter(0);
    });
    // The designee sets WAKING before its first nap, so a thread seen asleep has done so.
    EXPECT_TRUE(eventually([&] { return registered() == before + 1 && thread_blocked(designee_tid.get()); }));
    std::thread queued([&] {
        queued_tid.publish();
        waiter(1);
    });
    // Asleep while a designee exists: in the parking lot's queue.
    EXPECT_TRUE(eventually([&] { return registered() == before + 2 && thread_blocked(queued_tid.get()); }));
    m.unlock_fairly();
    // Handed off: the mutex never became free, so this thread cannot barge back in, and
    // the napping designee cannot take it either.
    EXPECT_FALSE(m.try_lock());
    ASSERT_TRUE(eventually([&] { return acquired_by.load() != -1; }));
    EXPECT_EQ(acquired_by.load(), 1) << "the queued waiter should have been handed the mutex";
    release.store(true);
    designee.join();
    queued.join();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(Mutex, ContentionCountRisesOnlyWhenAcquisitionsWait) {
    watchdog dog(60s);
    contend::mutex m;
    const auto before = contend::lock_contention_count();
    for (int i = 0; i < 1000; ++i) {
        m.lock();
        m.unlock();
    }
    EXPECT_EQ(contend::lock_contention_count(), before) << "uncontended acquisitions were counted";
    m.lock();
    std::thread t([&] {
        m.lock();
        m.unlock();
    });
    // Held until the waiter has been counted (it must be: it cannot get the lock), not for a
    // fixed time that a loaded machine may not schedule the waiter within.
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (contend::lock_contention_count() < before + 1 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(1ms);
    EXPECT_GE(contend::lock_contention_count(), before + 1) << "a waiter on a held mutex was not counted";
    m.unlock();
    t.join();
}

TEST(Mutex, MisuseUnderContentionLeavesWaitersUnharmed) {
    watchdog dog(60s);
    contend::mutex m;
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
    long counter = 0;
    run_threads(4, [&](int) {
        for (int i = 0; i < scaled(20000); ++i) {
            std::lock_guard g(m);
            ++counter;
        }
    });
    EXPECT_EQ(counter, 4 * scaled(20000));
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
}

TEST(Mutex, ManyMutexesSharingWaiterSlotsStayExclusive) {
    // Mutexes packed side by side, some of which share a waiter-registry slot, contended
    // by threads hopping between them: a wake-up meant for one must never be lost to another.
    watchdog dog(120s);
    constexpr int locks = 64;
    contend::mutex ms[locks];
    long counters[locks] = {};
    run_threads(8, [&](int t) {
        unsigned x = static_cast<unsigned>(t) * 2654435761u + 1;
        for (long i = 0; i < scaled(40000); ++i) {
            x = x * 1664525u + 1013904223u;
            const int k = static_cast<int>((x >> 16) % locks);
            std::lock_guard g(ms[k]);
            ++counters[k];
        }
    });
    long sum = 0;
    for (long c : counters) sum += c;
    EXPECT_EQ(sum, 8 * scaled(40000));
}

}  // namespace contend_test

namespace contend_test {

TEST(Mutex, TimedAndUntimedWaitersTogetherStayExclusiveAndNoneHangs) {
    // Untimed waiters queue and take turns as the napping designee; timed waiters queue
    // apart and are only ever handed the mutex. Mixed, with unlock_fairly now and then,
    // every path of the protocol runs; a lost wake-up trips the watchdog.
    watchdog dog(180s);
    contend::mutex m;
    long counter = 0;
    std::atomic<long> timed_ok{0};
    std::atomic<long> timed_failed{0};
    const long rounds = scaled(20000);
    run_threads(12, [&](int t) {
        for (long i = 0; i < rounds; ++i) {
            if (t % 3 == 0) {
                if (!m.try_lock_for(std::chrono::microseconds(200 + 50 * t))) {
                    timed_failed.fetch_add(1, std::memory_order_relaxed);
                    continue;
                }
                timed_ok.fetch_add(1, std::memory_order_relaxed);
            } else {
                m.lock();
            }
            counter = counter + 1;
            if (i % 97 == 0) m.unlock_fairly();
            else m.unlock();
        }
    });
    EXPECT_EQ(counter, 8 * rounds + timed_ok.load());
    EXPECT_EQ(timed_ok.load() + timed_failed.load(), 4 * rounds);
    EXPECT_GT(timed_ok.load(), 0);
}

// Three waiters: a designee and two queued behind it. A fourth on a 2-CPU machine would make
// a crowd (mutex::yield_while_crowded) and yield for up to 20 ms before it parks.
constexpr int parked_waiters = 3;

// Waits (bounded) until every thread in tids waits on m: counted in its waiter slot, and
// asleep at the same moment (queued in the parking lot, or a designee between probes).
void all_parked(const contend::mutex& m, std::uint32_t before, const std::vector<tid_box>& tids) {
    std::vector<int> ids;
    for (const auto& t : tids) ids.push_back(t.get());
    EXPECT_TRUE(eventually([&] { return registered_waiters(m) == before + ids.size(); }));
    EXPECT_TRUE(eventually_blocked(ids)) << "the waiters were never all asleep at once";
}

TEST(Mutex, EveryWaiterGetsAMutexReleasedWhileADesigneeNaps) {
    // The holder stops using the mutex while others sleep: each must still get it (the
    // designee's nap is bounded), not only when a new thread happens by.
    watchdog dog(60s);
    contend::mutex m;
    m.lock();
    const auto before = registered_waiters(m);
    std::atomic<int> got{0};
    std::vector<std::thread> waiters;
    std::vector<tid_box> tids(parked_waiters);
    for (int i = 0; i < parked_waiters; ++i) {
        waiters.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            m.lock();
            got.fetch_add(1);
            m.unlock();
        });
    }
    all_parked(m, before, tids);
    m.unlock();
    for (auto& w : waiters) w.join();
    EXPECT_EQ(got.load(), parked_waiters);
}

// A mutex held briefly between long stretches of other work (the shape of RocksDB's DB mutex
// under db_bench): its waiters find it free when they wake, mark its slot sparse, and from then
// on unlocks wake a napping designee or a queued waiter to retry (src/mutex.cpp). Those extra
// wake-ups must never cost exclusion or a waiter, and the mark must be reached.
TEST(Mutex, ASparseMutexIsMarkedSoAndItsExtraWakeUpsKeepExclusion) {
    watchdog dog(120s);
    contend::mutex m;
    auto& hint = contend::internal::mutex_sparse_hints[contend::internal::waiter_slot_index(&m)];
    hint.store(0);  // not left marked by an earlier test's mutex at this address
    constexpr int n = 4;
    const long turns = scaled(2000);
    long inside = 0;  // plain: only a holder touches it
    std::atomic<long> total{0};
    std::atomic<bool> marked{false};
    std::atomic<int> done{0};
    const auto busy = [](std::chrono::nanoseconds d) {
        const auto end = steady::now() + d;
        while (steady::now() < end) {
        }
    };
    const auto start = steady::now();
    run_threads(n, [&](int) {
        long mine = 0;
        bool counted = false;
        // Until every thread has had its turns since the mark was first seen (so the marked
        // mutex's extra wake-ups happen under the check), or 60 s.
        while (done.load() < n && steady::now() - start < 60s) {
            m.lock();
            const long seen = ++inside;
            busy(1us);
            EXPECT_EQ(inside, seen) << "another thread was inside";
            m.unlock();
            total.fetch_add(1, std::memory_order_relaxed);
            if (hint.load(std::memory_order_relaxed) == contend::internal::mutex_sparse) marked.store(true);
            if (marked.load() && !counted && ++mine >= turns) {
                counted = true;
                done.fetch_add(1);
            }
            busy(5us);
        }
    });
    EXPECT_EQ(inside, total.load());
    EXPECT_TRUE(marked.load()) << "the waiters never marked a sparse mutex as such";
    EXPECT_EQ(done.load(), n) << "a thread did not get its turns after the mark within 60 s";
}

// A timed lock on a mutex marked sparse polls before it sleeps (src/mutex.cpp, poll_sparse):
// the poll is bounded by the deadline, and a held mutex is still refused, with a deadline in
// the past at once and with one ahead no earlier than it.
TEST(Mutex, TimedLocksOfAMutexMarkedSparseKeepTheirDeadlines) {
    watchdog dog(60s);
    contend::mutex m;
    auto& hint = contend::internal::mutex_sparse_hints[contend::internal::waiter_slot_index(&m)];
    std::atomic<bool> held{false}, done{false};
    std::thread holder([&] {
        m.lock();
        held.store(true);
        while (!done.load()) std::this_thread::sleep_for(1ms);
        m.unlock();
    });
    while (!held.load()) std::this_thread::yield();
    hint.store(contend::internal::mutex_sparse);
    EXPECT_FALSE(m.try_lock_until(steady::now() - 1s));
    hint.store(contend::internal::mutex_sparse);
    // As far back as the clock goes: the poll's look at the time left must not subtract the
    // clock from the minimum time point (UBSan).
    EXPECT_FALSE(m.try_lock_until(steady::time_point::min()));
    hint.store(contend::internal::mutex_sparse);
    const auto start = steady::now();
    EXPECT_FALSE(m.try_lock_for(20ms));
    EXPECT_GE(steady::now() - start, 20ms);
    done.store(true);
    holder.join();
    hint.store(contend::internal::mutex_sparse);
    EXPECT_TRUE(m.try_lock_for(1s));  // free: taken at once
    m.unlock();
    hint.store(0);
}

// A sleep is a wait in the OS backend, as the parking lot counts them. The thread's count of
// voluntary context switches, used before, also counts waits that are not the mutex's: under
// ThreadSanitizer 21 or 22 of 25 trials "slept" by it where the backend counted no sleep at
// all (Intel Xeon VM).
// A thread that finds the mutex held and appoints itself designee watches it before it naps
// (src/mutex.cpp, wait_as_designee): behind a hold of a few microseconds (RocksDB's per-writer
// mutex, CPython's GIL) it takes the mutex when the holder lets go, instead of sleeping a nap
// (about 90 us) while the mutex sits free. Before, 395 of 397 such lock()s slept. Each trial's
// waiter is a new thread: a thread whose last poll gave its CPU away (a loaded machine) skips
// most of its watches, and each new thread starts with a clean record. The slot's sparse mark
// is cleared before each trial: once set, the holder's unlock would wake the napping designee,
// and that (src/mutex.cpp, "Sparse locks") is not what this test is about. On a loaded
// machine a holder preempted mid-hold outlasts the watch, so not every trial must avoid the
// sleep; a quarter must.
TEST(Mutex, ADesigneeBehindAShortHoldTakesTheMutexWithoutSleeping) {
    watchdog dog(120s);
    const auto old_limit = contend::mutex::spin_limit();
    contend::mutex::set_spin_limit(0);  // no spin: each contended lock() goes to the designee's path
    contend::mutex m;
    auto& hint = contend::internal::mutex_sparse_hints[contend::internal::waiter_slot_index(&m)];
    // Trials until this many found the mutex held (on a loaded machine many waiters come
    // too late), or 40 s.
    const int wanted = static_cast<int>(scaled(200));
    const auto give_up = steady::now() + 40s;
    // The holder and the waiter on two CPUs, where there are two: in some processes new
    // threads were placed on the holder's CPU, where the waiter spun until the holder's
    // join let it in, and 3,000 trials of 4 ms each found 200 contended (12 s).
    cpu_set_t allowed, holder_cpu, waiter_cpu;
    CPU_ZERO(&holder_cpu);
    CPU_ZERO(&waiter_cpu);
    bool pinned = false;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) >= 2) {
        int found = 0;
        for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
            if (!CPU_ISSET(cpu, &allowed)) continue;
            CPU_SET(cpu, found++ == 0 ? &holder_cpu : &waiter_cpu);
        }
        pinned = pthread_setaffinity_np(pthread_self(), sizeof holder_cpu, &holder_cpu) == 0;
    }
    int contended = 0, slept = 0;
    while (contended < wanted && steady::now() < give_up) {
        std::atomic<bool> started{false}, held{false};
        bool was_contended = false, did_sleep = false;
        std::thread waiter([&] {
            if (pinned) pthread_setaffinity_np(pthread_self(), sizeof waiter_cpu, &waiter_cpu);
            // Read before the hold starts: under a sanitizer these take longer than the hold.
            const auto counted = contend::lock_contention_count();
            const auto sleeps = contend::parking_lot::detail::this_thread_poll_counts().sleeps;
            hint.store(0);
            started.store(true);
            while (!held.load()) contend::cpu_relax();
            m.lock();
            did_sleep = contend::parking_lot::detail::this_thread_poll_counts().sleeps != sleeps;
            m.unlock();
            was_contended = contend::lock_contention_count() != counted;
        });
        while (!started.load()) std::this_thread::yield();
        m.lock();
        held.store(true);
        const auto end = steady::now() + 6us;
        while (steady::now() < end) {
        }
        m.unlock();
        waiter.join();
        if (!was_contended) continue;  // the hold was over before the waiter came: not a trial
        ++contended;
        if (did_sleep) ++slept;
    }
    contend::mutex::set_spin_limit(old_limit);
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
    ASSERT_GE(contended, std::min(wanted, 20)) << "the waiter rarely found the mutex held";
    EXPECT_LE(slept * 4, contended * 3) << slept << " of " << contended << " contended lock()s slept";
}

// The release a condition variable's wait uses: the same release as unlock() (the waiters,
// a designee among them, all get the mutex), and misuse is refused as unlock() refuses it.
TEST(Mutex, UnlockBeforeBlockingReleasesToEveryWaiterAndRefusesAnUnheldMutex) {
    watchdog dog(60s);
    contend::mutex m;
    EXPECT_THROW(m.unlock_before_blocking(), contend::synchronization_error);
    EXPECT_FALSE(m.is_locked());
    m.lock();
    std::atomic<int> got{0};
    long inside = 0;  // a plain counter: exclusion is what keeps it exact
    const auto before = registered_waiters(m);
    std::vector<std::thread> waiters;
    std::vector<tid_box> tids(parked_waiters);
    for (int i = 0; i < parked_waiters; ++i) {
        waiters.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            for (int r = 0; r < 1000; ++r) {
                m.lock();
                ++inside;
                m.unlock_before_blocking();
            }
            got.fetch_add(1);
        });
    }
    all_parked(m, before, tids);
    m.unlock_before_blocking();
    for (auto& w : waiters) w.join();
    EXPECT_EQ(got.load(), parked_waiters);
    EXPECT_EQ(inside, parked_waiters * 1000);
    EXPECT_FALSE(m.is_locked());
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

}  // namespace contend_test

namespace contend_test {

// Sets the process-wide spin policy for a test's length; restores the default after.
class spin_policy {
public:
    explicit spin_policy(std::uint32_t rounds) { contend::mutex::set_spin_limit(rounds); }
    ~spin_policy() { contend::mutex::set_spin_limit(contend::mutex::default_spin_limit); }
};

TEST(MutexSpin, TheDefaultIsFixedAndSetSpinLimitSaysWhatIsInForce) {
    EXPECT_EQ(contend::mutex::spin_limit(), contend::mutex::default_spin_limit);
    {
        spin_policy adaptive(contend::mutex::adaptive_spin);
        EXPECT_EQ(contend::mutex::spin_limit(), contend::mutex::adaptive_spin);
    }
    EXPECT_EQ(contend::mutex::spin_limit(), contend::mutex::default_spin_limit);
}

// Adaptive spinning changes only how long a waiter spins, never the state byte's meaning: a
// plain counter under 8 threads on a few mutexes (with holds long enough for spins to both
// win and fail, so levels move both ways) must come out exact, and misuse still detected.
TEST(MutexSpin, AdaptiveSpinningKeepsExclusionWhileLevelsMove) {
    watchdog dog(120s);
    spin_policy adaptive(contend::mutex::adaptive_spin);
    constexpr int locks = 3;
    contend::mutex m[locks];
    long counter[locks] = {};
    bool inside[locks] = {};
    std::atomic<long> broken{0};
    const long per = scaled(200000);
    run_threads(8, [&](int t) {
        for (long i = 0; i < per; ++i) {
            const int k = static_cast<int>((t + i) % locks);
            m[k].lock();
            if (inside[k]) broken.fetch_add(1);
            inside[k] = true;
            counter[k] = counter[k] + 1;
            for (long w = 0, n = (i % 7) * 40; w < n; ++w) contend::cpu_relax();  // 0 to ~6 us held
            inside[k] = false;
            m[k].unlock();
        }
    });
    EXPECT_EQ(broken.load(), 0);
    EXPECT_EQ(counter[0] + counter[1] + counter[2], 8 * per);
    for (auto& x : m) {
        EXPECT_FALSE(x.is_locked());
        EXPECT_THROW(x.unlock(), contend::synchronization_error);
        EXPECT_TRUE(x.try_lock());
        x.unlock();
    }
}

// Switching between fixed and adaptive while threads contend: each lock() reads the policy
// once, so a switch mid-run only changes later spins.
TEST(MutexSpin, SwitchingThePolicyUnderContentionKeepsExclusion) {
    watchdog dog(120s);
    contend::mutex m;
    long counter = 0;
    std::atomic<bool> stop{false};
    std::thread switcher([&] {
        const std::uint32_t policies[] = {contend::mutex::adaptive_spin, 0, 2, 10};
        for (int i = 0; !stop.load(); ++i) {
            contend::mutex::set_spin_limit(policies[i % 4]);
            std::this_thread::sleep_for(1ms);
        }
        contend::mutex::set_spin_limit(contend::mutex::default_spin_limit);
    });
    const long per = scaled(300000);
    run_threads(4, [&](int) {
        for (long i = 0; i < per; ++i) {
            m.lock();
            counter = counter + 1;
            m.unlock();
        }
    });
    stop.store(true);
    switcher.join();
    EXPECT_EQ(counter, 4 * per);
}

}  // namespace contend_test
