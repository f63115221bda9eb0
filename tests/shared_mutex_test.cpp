// contend::shared_mutex: the exclusive side passes every lock's conformance tests; these add
// the shared, upgradable and timed sides, the fairness policy and misuse. unlock() checks
// for a writer in this build; tests/shared_mutex_torture_test.cpp tests the optimized unlock.
#define CONTEND_CHECK_UNLOCK 1
#include "contend/shared_mutex.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "contend/internal/reader_slots.hpp"
#include "contend/mutex.hpp"
#include "contend/synchronization_error.hpp"
#include "lock_conformance.hpp"
#include "shared_mutex_access.hpp"

namespace contend_test {

using SharedMutexes = ::testing::Types<contend::shared_mutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(SharedMutex, LockConformance, SharedMutexes);

namespace {

using contend::shared_mutex;

// Runs `fn` on a thread that publishes its kernel id first; joins on destruction.
class blocker {
public:
    template <class Fn>
    explicit blocker(Fn fn)
        : thread_([this, fn] {
              box_.publish();
              fn();
              done_.store(true);
          }) {}
    ~blocker() { thread_.join(); }
    int tid() const { return box_.get(); }
    bool done() const { return done_.load(); }
    // Waits (bounded) until the thread sleeps in the kernel, i.e. has parked.
    bool parked() const { return eventually_blocked({tid()}); }

private:
    tid_box box_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Whether `m` turns a new reader away: a try_lock_shared() that got in is given back at once,
// so a look that comes too early (before an upgrade announced itself) leaks no read.
bool turns_readers_away(shared_mutex& m) {
    if (!m.try_lock_shared()) return true;
    m.unlock_shared();
    return false;
}

}  // namespace

TEST(SharedMutex, IsEightBytesAndStartsFree) {
    static_assert(sizeof(shared_mutex) == 8);
    shared_mutex m;
    EXPECT_FALSE(m.is_locked());
    EXPECT_EQ(m.reader_count(), 0u);
}

TEST(SharedMutex, ReadersHoldTheLockTogetherAndKeepWritersOut) {
    shared_mutex m;
    m.lock_shared();
    EXPECT_TRUE(m.try_lock_shared());
    EXPECT_EQ(m.reader_count(), 2u);
    EXPECT_FALSE(m.try_lock());
    EXPECT_FALSE(m.try_lock_for(1ms));
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, AWriterKeepsReadersOutAndATimedReadGivesUpAtItsDeadline) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock();
    EXPECT_FALSE(m.try_lock_shared());
    EXPECT_FALSE(m.try_lock_shared_recursive());
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(m.try_lock_shared_for(20ms));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
    EXPECT_FALSE(m.try_lock_upgrade_for(1ms));
    m.unlock();
    EXPECT_TRUE(m.try_lock_shared());  // the timed-out reader's parked bit stops nobody
    m.unlock_shared();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, AParkedWriterStopsNewReadersButNotARecursiveRead) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock_shared();
    std::atomic<bool> wrote{false};
    blocker writer([&] {
        m.lock();
        wrote.store(true);
        m.unlock();
    });
    ASSERT_TRUE(writer.parked());
    EXPECT_FALSE(m.try_lock_shared()) << "a new reader passed a parked writer";
    // This thread reads already: a recursive read must not wait behind the writer.
    m.lock_shared_recursive();
    EXPECT_EQ(m.reader_count(), 2u);
    m.unlock_shared();
    EXPECT_FALSE(wrote.load());
    m.unlock_shared();  // the last reader out hands the lock to the writer
    EXPECT_TRUE(eventually([&] { return writer.done(); }));
    EXPECT_TRUE(wrote.load());
}

TEST(SharedMutex, AWritersReleaseLetsEveryParkedReaderInTogether) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock();
    std::atomic<int> readers_in{0};
    std::atomic<bool> release_readers{false};
    std::vector<std::unique_ptr<blocker>> readers;
    std::vector<int> tids;
    for (int i = 0; i < 3; ++i) {
        readers.push_back(std::make_unique<blocker>([&] {
            m.lock_shared();
            readers_in.fetch_add(1);
            eventually([&] { return release_readers.load(); }, 30s);
            m.unlock_shared();
        }));
        tids.push_back(readers.back()->tid());
    }
    ASSERT_TRUE(eventually_blocked(tids));
    m.unlock();
    EXPECT_TRUE(eventually([&] { return readers_in.load() == 3; })) << "the readers did not all hold the lock at once";
    EXPECT_FALSE(m.try_lock());
    release_readers.store(true);
    readers.clear();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

// Two readers relay a read so that the lock is never without one: each takes its next read
// while the other still holds, and lets go only once the other has taken one after it (or
// after a grace period of 20 ms, so that a lock which stops new readers does not deadlock the
// relay). Under a lock that lets readers starve a writer (glibc's default rwlock: the writer
// waits for a moment with no reader, which the relay never gives it) no write gets in until
// the relay stops; under one that stops new readers for a waiting writer, each write waits at
// most about the grace period. Returns the writes made within `budget`.
template <class Lock>
int writes_past_a_relay_of_readers(Lock& m, int wanted, std::chrono::milliseconds budget) {
    std::atomic<bool> stop{false};
    std::atomic<long> reads{0};  // reads taken so far, in order
    auto relay = [&] {
        while (!stop.load()) {
            m.lock_shared();
            const long mine = reads.fetch_add(1) + 1;
            const auto grace = std::chrono::steady_clock::now() + 20ms;
            while (reads.load() == mine && !stop.load() && std::chrono::steady_clock::now() < grace)
                std::this_thread::yield();
            m.unlock_shared();
        }
    };
    std::thread a(relay), b(relay);
    while (reads.load() < 2) std::this_thread::yield();  // both relaying
    std::atomic<int> writes{0};
    std::thread writer([&] {
        for (int i = 0; i < wanted && !stop.load(); ++i) {
            m.lock();
            writes.fetch_add(1);
            m.unlock();
        }
    });
    eventually([&] { return writes.load() == wanted; }, budget);
    const int made = writes.load();
    stop.store(true);
    a.join();
    b.join();
    writer.join();
    return made;
}

TEST(SharedMutex, AWriterIsNotStarvedByReadersThatNeverLeaveTheLockFree) {
    watchdog dog(120s);
    shared_mutex m;
    EXPECT_EQ(writes_past_a_relay_of_readers(m, 20, 60s), 20);
}

// The twin: two writers relay the write lock, each holding until the other has asked for it
// (or 20 ms), so that a writer always waits when the lock is let go. Under a lock that lets
// writers starve readers (glibc's writer-preferring rwlock: readers wait while any writer
// waits) no read gets in until the relay stops; under one whose release lets the parked
// readers in at least about once per millisecond, they do. Returns the reads made.
template <class Lock>
int reads_past_a_relay_of_writers(Lock& m, int wanted, std::chrono::milliseconds budget) {
    std::atomic<bool> stop{false};
    std::atomic<long> asks{0};  // lock() calls begun, in order
    auto relay = [&] {
        while (!stop.load()) {
            asks.fetch_add(1);
            m.lock();
            const long seen = asks.load();
            const auto grace = std::chrono::steady_clock::now() + 20ms;
            while (asks.load() == seen && !stop.load() && std::chrono::steady_clock::now() < grace)
                std::this_thread::yield();
            m.unlock();
        }
    };
    std::thread a(relay), b(relay);
    while (asks.load() < 4) std::this_thread::yield();  // both relaying
    std::atomic<int> reads{0};
    std::thread reader([&] {
        for (int i = 0; i < wanted && !stop.load(); ++i) {
            m.lock_shared();
            reads.fetch_add(1);
            m.unlock_shared();
        }
    });
    eventually([&] { return reads.load() == wanted; }, budget);
    const int made = reads.load();
    stop.store(true);
    a.join();
    b.join();
    reader.join();
    return made;
}

TEST(SharedMutex, AReaderIsNotStarvedByWritersThatAlwaysHaveOneWaiting) {
    watchdog dog(120s);
    shared_mutex m;
    EXPECT_EQ(reads_past_a_relay_of_writers(m, 20, 60s), 20);
}

TEST(SharedMutex, OneUpgraderReadsBesideReadersAndKeepsWritersAndOtherUpgradersOut) {
    shared_mutex m;
    m.lock_shared();
    ASSERT_TRUE(m.try_lock_upgrade());
    EXPECT_TRUE(m.try_lock_shared());
    EXPECT_FALSE(m.try_lock_upgrade());
    EXPECT_FALSE(m.try_lock());
    EXPECT_EQ(m.reader_count(), 3u);
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_FALSE(m.try_lock()) << "the upgrader alone still keeps writers out";
    m.unlock_upgrade();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, AnUpgradeWaitsForTheOtherReadersAndStopsNewOnes) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock_shared();
    std::atomic<bool> upgraded{false};
    blocker upgrader([&] {
        m.lock_upgrade();
        m.unlock_upgrade_and_lock();
        upgraded.store(true);
        m.unlock_and_lock_upgrade();  // downgrade, then leave
        m.unlock_upgrade();
    });
    ASSERT_TRUE(eventually([&] { return m.reader_count() == 2 && turns_readers_away(m); }))
        << "the waiting upgrade did not stop new readers";
    EXPECT_FALSE(upgraded.load());
    m.unlock_shared();
    EXPECT_TRUE(eventually([&] { return upgrader.done(); }));
    EXPECT_TRUE(upgraded.load());
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, ATimedUpgradeThatGivesUpKeepsTheUpgradableReadAndLetsStoppedReadersIn) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock_shared();  // held throughout: no upgrade can succeed
    std::atomic<bool> reader_stopped{false};
    std::atomic<bool> checked{false};
    std::atomic<int> upgrades{0};
    std::atomic<int> gave_up{0};
    std::atomic<bool> read_lost{false};
    // The upgrader tries timed upgrades of 50 ms, one after the other, until the test has seen a
    // reader stopped by one: on a loaded machine the test may look only after the first has
    // given up. Each give-up must keep the upgradable read (no other can be taken), and it is
    // held until the test is done, so the stopped reader gets in beside it.
    blocker upgrader([&] {
        m.lock_upgrade();
        while (!reader_stopped.load()) {
            if (m.try_unlock_upgrade_and_lock_for(50ms)) {
                upgrades.fetch_add(1);
                m.unlock_and_lock_upgrade();
            } else {
                gave_up.fetch_add(1);
            }
            if (m.try_lock_upgrade()) read_lost.store(true);
        }
        eventually([&] { return checked.load(); }, 30s);
        m.unlock_upgrade();
    });
    // Whatever fails below, the upgrader is let go, so that its join cannot hang the test.
    struct release_upgrader {
        std::atomic<bool>& stop;
        std::atomic<bool>& done;
        ~release_upgrader() {
            stop.store(true);
            done.store(true);
        }
    } release{reader_stopped, checked};

    ASSERT_TRUE(eventually([&] { return m.reader_count() == 2 && turns_readers_away(m); }))
        << "no timed upgrade stopped new readers";
    // A reader started while an upgrade is pending sleeps until the upgrade gives up. One that
    // starts in the microseconds between two attempts gets in at once and shows nothing, so
    // readers are started (at most 20) until one is seen asleep.
    bool stopped = false;
    for (int tries = 0; tries < 20 && !stopped; ++tries) {
        std::atomic<bool> in{false};
        blocker reader([&] {
            m.lock_shared();
            in.store(true);
            m.unlock_shared();
        });
        ASSERT_TRUE(eventually([&] { return in.load() || thread_blocked(reader.tid()); }));
        if (in.load()) continue;
        stopped = true;
        reader_stopped.store(true);  // the upgrader's attempt now under way is its last
        EXPECT_TRUE(eventually([&] { return in.load(); })) << "a give-up left the stopped reader out";
    }
    EXPECT_TRUE(stopped) << "no reader was seen stopped by a pending upgrade in 20 tries";
    checked.store(true);
    EXPECT_TRUE(eventually([&] { return upgrader.done(); }));
    EXPECT_EQ(upgrades.load(), 0) << "an upgrade succeeded while another reader held the lock";
    EXPECT_GE(gave_up.load(), 1);
    EXPECT_FALSE(read_lost.load()) << "the upgradable read was lost";
    m.unlock_shared();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, TryUpgradeSucceedsOnlyForTheOnlyReader) {
    shared_mutex m;
    m.lock_upgrade();
    m.lock_shared();
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock());
    m.unlock_shared();
    ASSERT_TRUE(m.try_unlock_upgrade_and_lock());
    EXPECT_TRUE(m.is_locked());
    EXPECT_EQ(m.reader_count(), 0u);
    m.unlock_and_lock_shared();
    EXPECT_EQ(m.reader_count(), 1u);
    EXPECT_TRUE(m.try_lock_upgrade());
    m.unlock_upgrade_and_lock_shared();
    EXPECT_EQ(m.reader_count(), 2u);
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, ADowngradeLetsTheParkedReadersInAtOnce) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock();
    std::atomic<int> in{0};
    blocker a([&] {
        m.lock_shared();
        in.fetch_add(1);
        m.unlock_shared();
    });
    blocker b([&] {
        m.lock_shared();
        in.fetch_add(1);
        m.unlock_shared();
    });
    ASSERT_TRUE(eventually_blocked({a.tid(), b.tid()}));
    m.unlock_and_lock_shared();
    EXPECT_TRUE(eventually([&] { return in.load() == 2; })) << "readers stayed parked behind a downgraded writer";
    EXPECT_FALSE(m.try_lock());
    m.unlock_shared();
    EXPECT_TRUE(eventually([&] { return a.done() && b.done(); }));
}

TEST(SharedMutex, AWriterThatTimesOutWhileReadersHoldDoesNotKeepNewReadersOut) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock_shared();
    std::atomic<int> got{-1};
    blocker writer([&] { got.store(m.try_lock_for(100ms) ? 1 : 0); });
    EXPECT_TRUE(eventually([&] { return writer.done(); }));
    EXPECT_EQ(got.load(), 0);
    EXPECT_TRUE(m.try_lock_shared()) << "a writer gone by its deadline still stops readers";
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

// The count has room for 32,768 readers; one more waits (or fails to try) instead of
// overflowing into the bits beside it. One thread's recursive reads fill it; then a
// lock_shared(), which adds itself with fetch_add before it looks, must back out and wait.
TEST(SharedMutex, ReadersBeyondTheCountsRoomWaitInsteadOfOverflowing) {
    watchdog dog(60s, "a reader waiting for room in the count");
    shared_mutex m;
    std::uint32_t held = 0;
    while (held <= 40'000 && m.try_lock_shared_recursive()) ++held;
    EXPECT_EQ(held, 32'768u);
    EXPECT_EQ(m.reader_count(), held);
    EXPECT_FALSE(m.try_lock_shared());
    EXPECT_FALSE(m.try_lock_shared_for(2ms));
    EXPECT_FALSE(m.try_lock_upgrade());
    EXPECT_EQ(m.reader_count(), held) << "nothing counted by the refused readers";
    std::atomic<bool> late_got_in{false};
    std::thread late([&] {
        m.lock_shared();  // fetch_add, finds the count full, backs out and waits
        late_got_in = true;
        m.unlock_shared();
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(late_got_in.load()) << "a reader got in past a full count";
    EXPECT_TRUE(eventually([&] { return m.reader_count() == held; })) << "the late reader backed out";
    m.unlock_shared();
    EXPECT_TRUE(eventually([&] { return late_got_in.load(); })) << "one reader left, and the late one got in";
    late.join();
    for (--held; held > 0; --held) m.unlock_shared();
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(SharedMutex, UnlockingAModeThatIsNotHeldThrowsAndChangesNothing) {
    shared_mutex m;
    EXPECT_THROW(m.unlock_shared(), contend::synchronization_error);
    EXPECT_THROW(m.unlock_upgrade(), contend::synchronization_error);
    EXPECT_THROW(m.unlock_and_lock_shared(), contend::synchronization_error);
    EXPECT_THROW(m.unlock_upgrade_and_lock(), contend::synchronization_error);
    EXPECT_THROW(m.try_unlock_upgrade_and_lock_for(1ms), contend::synchronization_error);
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock());  // noexcept, as Boost's: false, nothing changed
    EXPECT_FALSE(m.is_locked());
    m.lock_upgrade();
    EXPECT_THROW(m.unlock_shared(), contend::synchronization_error) << "only the upgrader reads";
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
    m.unlock_upgrade();
    m.lock_shared();
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
    EXPECT_THROW(m.unlock_upgrade(), contend::synchronization_error);
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock()) << "a plain reader is no upgrader";
    m.unlock_shared();
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_TRUE(m.try_lock());
    EXPECT_THROW(m.unlock_shared(), contend::synchronization_error);
    m.unlock();
    EXPECT_FALSE(m.is_locked());
}

TEST(SharedMutex, WorksWithTheStandardLocksAndConditionVariableAny) {
    watchdog dog(60s);
    shared_mutex m;
    std::condition_variable_any cv;
    bool ready = false;
    std::thread t([&] {
        std::unique_lock lock(m);
        ready = true;
        cv.notify_all();
    });
    {
        std::shared_lock lock(m);
        EXPECT_TRUE(cv.wait_for(lock, 30s, [&] { return ready; }));
    }
    t.join();
    std::shared_lock timed(m, 10ms);
    EXPECT_TRUE(timed.owns_lock());
}

TEST(SharedMutex, AWaitingWriterIsCountedAsAContention) {
    watchdog dog(60s);
    shared_mutex m;
    m.lock_shared();
    const auto before = contend::lock_contention_count();
    blocker writer([&] {
        m.lock();
        m.unlock();
    });
    ASSERT_TRUE(writer.parked());
    m.unlock_shared();
    EXPECT_TRUE(eventually([&] { return writer.done(); }));
    EXPECT_GT(contend::lock_contention_count(), before);
}

// Writers contending with writers queue at the internal gate, writers facing readers wait on
// the word, and the two hand the lock to each other: the writer that opens the gate must be
// the one that holds it (a hand-off once passed the gate's mark on to a writer that had not
// passed it, and both opened it: synchronization_error from the gate).
TEST(SharedMutex, WritersThroughTheGateAndAroundItHandTheLockToEachOther) {
    watchdog dog(240s);
    shared_mutex m;
    long value = 0;
    std::atomic<long> writes{0};
    const long per_thread = scaled(100000);
    run_threads(16, [&](int id) {
        std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(id + 1);
        for (long i = 0; i < per_thread; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            if (x % 2) {
                std::shared_lock lock(m);
                // Long enough that writers meet readers and park around the gate.
                for (int w = 0; w < 64; ++w) contend::cpu_relax();
            } else {
                std::unique_lock lock(m);
                value = value + 1;
                writes.fetch_add(1, std::memory_order_relaxed);
            }
        }
    });
    EXPECT_EQ(value, writes.load());
    EXPECT_FALSE(m.is_locked());
    EXPECT_EQ(m.reader_count(), 0u);
}

// Readers, writers, upgraders and timed acquisitions at once, more threads than cores: every
// read sees a consistent table, writes exclude everyone, and every write is counted.
TEST(SharedMutex, MixedModesKeepTheTableWholeAndLoseNoWrite) {
    watchdog dog(240s);
    shared_mutex m;
    constexpr int lines = 8;
    long table[lines] = {};
    std::atomic<long> torn{0};
    std::atomic<long> writes{0};
    const long per_thread = scaled(20000);
    run_threads(8, [&](int id) {
        for (long i = 0; i < per_thread; ++i) {
            const int op = static_cast<int>((i * 7 + id) % 10);
            if (op < 6) {
                const bool got = (op == 5) ? m.try_lock_shared_for(1ms) : (m.lock_shared(), true);
                if (!got) continue;
                for (int l = 1; l < lines; ++l)
                    if (table[l] != table[0]) torn.fetch_add(1);
                m.unlock_shared();
            } else if (op < 8) {
                const bool got = (op == 7) ? m.try_lock_for(1ms) : (m.lock(), true);
                if (!got) continue;
                for (long& v : table) ++v;
                writes.fetch_add(1);
                if (i % 2) {
                    m.unlock_and_lock_shared();
                    if (table[lines - 1] != table[0]) torn.fetch_add(1);
                    m.unlock_shared();
                } else {
                    m.unlock();
                }
            } else {
                m.lock_upgrade();
                const long seen = table[0];
                if (op == 9 && m.try_unlock_upgrade_and_lock_for(1ms)) {
                    for (long& v : table) ++v;
                    writes.fetch_add(1);
                    m.unlock();
                } else {
                    if (table[lines - 1] != seen) torn.fetch_add(1);
                    m.unlock_upgrade();
                }
            }
        }
    });
    EXPECT_EQ(torn.load(), 0);
    EXPECT_EQ(table[0], writes.load());
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_FALSE(m.is_locked());
}

// ---- reader bias (visible readers) ----

namespace {

// Reads on this thread until the lock is biased towards readers (a thread's reads through the
// count look every reader_row::look_interval reads; a revocation inhibits the bias for a while).
bool bias(shared_mutex& m) {
    return eventually([&] {
        for (std::uint32_t i = 0; i < contend::internal::reader_row::look_interval; ++i) {
            m.lock_shared();
            m.unlock_shared();
        }
        return m.is_read_biased();
    });
}

std::uint32_t reads_in_rows(const shared_mutex& m) { return contend::internal::reader_slots_holding(&m); }

// A thread that takes a read through its row (its first read goes through the count and
// learns the lock is biased; the second uses the row) and holds it until told.
class row_reader {
public:
    explicit row_reader(shared_mutex& m)
        : thread_([this, &m] {
              m.lock_shared();
              m.unlock_shared();
              m.lock_shared();
              holding_.store(true);
              while (!release_.load()) std::this_thread::sleep_for(100us);
              if (recursive_.load()) {
                  recursive_ok_.store(m.try_lock_shared_recursive());
                  if (recursive_ok_.load()) m.unlock_shared();
              }
              m.unlock_shared();
          }) {}
    ~row_reader() {
        release_.store(true);
        if (thread_.joinable()) thread_.join();
    }
    bool holding() const {
        return eventually([this] { return holding_.load(); });
    }
    // A recursive read, taken just before the release.
    void release(bool recursive_read = false) {
        recursive_.store(recursive_read);
        release_.store(true);
    }
    void join() { thread_.join(); }
    bool recursive_read_passed() const { return recursive_ok_.load(); }

private:
    std::atomic<bool> holding_{false}, release_{false}, recursive_{false}, recursive_ok_{false};
    std::thread thread_;
};

}  // namespace

TEST(SharedMutex, AReadMostlyLockBecomesBiasedAndItsReadsGoToTheThreadsRow) {
    shared_mutex m;
    ASSERT_TRUE(bias(m));
    m.lock_shared();
    EXPECT_EQ(reads_in_rows(m), 1u);
    EXPECT_EQ(m.reader_count(), 1u);
    EXPECT_FALSE(m.try_lock());  // a reader in a row keeps a writer out
    m.lock_shared();  // this thread's slot is taken: the second read goes through the count
    EXPECT_EQ(reads_in_rows(m), 1u);
    EXPECT_EQ(m.reader_count(), 2u);
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_TRUE(m.try_lock());  // takes the bias back: nobody reads
    EXPECT_FALSE(m.is_read_biased());
    m.unlock();
}

TEST(SharedMutex, AWriterTakesTheBiasBackAndWaitsForAReaderInItsRowWhichCanStillReadRecursively) {
    watchdog dog(60s);
    shared_mutex m;
    ASSERT_TRUE(bias(m));
    row_reader reader(m);
    ASSERT_TRUE(reader.holding());
    ASSERT_EQ(reads_in_rows(m), 1u);
    std::atomic<bool> wrote{false};
    std::thread writer([&] {
        m.lock();
        wrote.store(true);
        m.unlock();
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(wrote.load());  // the reader in its row still holds the lock
    // The revoking writer does not hold the lock, so a recursive read (the reader's own) passes.
    reader.release(true);
    reader.join();
    EXPECT_TRUE(reader.recursive_read_passed());
    writer.join();
    EXPECT_TRUE(wrote.load());
    EXPECT_FALSE(m.is_read_biased());
    EXPECT_EQ(m.reader_count(), 0u);
}

TEST(SharedMutex, AWriterThatTimesOutTakingTheBiasBackLeavesTheLockBiasedAndUsable) {
    shared_mutex m;
    ASSERT_TRUE(bias(m));
    {
        row_reader reader(m);
        ASSERT_TRUE(reader.holding());
        EXPECT_FALSE(m.try_lock_for(10ms));
        EXPECT_TRUE(m.is_read_biased());
        // Readers still enter (through the count or their rows) and leave.
        EXPECT_TRUE(m.try_lock_shared());
        m.unlock_shared();
    }
    EXPECT_TRUE(m.try_lock_for(10s));
    EXPECT_FALSE(m.is_read_biased());
    m.unlock();
}

TEST(SharedMutex, AnUpgradeWaitsForAReaderInItsRow) {
    watchdog dog(60s);
    shared_mutex m;
    ASSERT_TRUE(bias(m));
    row_reader reader(m);
    ASSERT_TRUE(reader.holding());
    m.lock_upgrade();
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock());
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock_for(10ms));  // keeps the upgradable read
    reader.release();
    EXPECT_TRUE(m.try_unlock_upgrade_and_lock_for(10s));
    EXPECT_TRUE(m.is_locked());
    m.unlock();
}

TEST(SharedMutex, AThreadGivesItsRowBackWhenItExits) {
    shared_mutex m;
    const std::size_t before = contend::internal::claimed_reader_rows();
    for (int i = 0; i < 100; ++i) {
        std::thread t([&] {
            m.lock_shared();
            m.unlock_shared();
        });
        t.join();
    }
    EXPECT_LE(contend::internal::claimed_reader_rows(), before + 1);  // +1: this thread's, if new
}

TEST(SharedMutex, UnlockingAReadNotHeldOnABiasedLockThrowsAndChangesNothing) {
    shared_mutex m;
    ASSERT_TRUE(bias(m));
    EXPECT_THROW(m.unlock_shared(), contend::synchronization_error);
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_TRUE(m.is_read_biased());
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

// ---- exclusive reads (shared_mutex.hpp, "Exclusive reads") ----

namespace {
using access = contend::internal::shared_mutex_access;

// A lock whose reads are pinned exclusive, read by this thread at once in the writer's byte.
void read_exclusively(shared_mutex& m) {
    access::pin_exclusive_reads(m);
    access::hint_exclusive(m);
    m.lock_shared();
    ASSERT_TRUE(access::held_by_an_exclusive_reader(m));
}
}  // namespace

TEST(SharedMutex, AReadTakenExclusivelyKeepsWritersAndUpgradersOutAndLetsReadersJoin) {
    watchdog dog(60s);
    shared_mutex m;
    read_exclusively(m);
    EXPECT_FALSE(m.is_locked()) << "a reader is not a writer";
    EXPECT_EQ(m.reader_count(), 1u);
    EXPECT_FALSE(m.try_lock());
    ASSERT_TRUE(m.try_lock_upgrade()) << "an upgrader is a reader too";
    EXPECT_FALSE(m.try_unlock_upgrade_and_lock()) << "an upgrade to write passed a reader";
    m.unlock_upgrade();
    // The wrong mode's release (this build checks unlock()): an error, and the read stays held.
    EXPECT_THROW(m.unlock(), contend::synchronization_error);
    EXPECT_TRUE(access::held_by_an_exclusive_reader(m));
    std::thread([&] {
        EXPECT_TRUE(m.try_lock_shared()) << "another reader joins through the count";
        EXPECT_EQ(m.reader_count(), 2u);
        m.unlock_shared();
    }).join();
    // A recursive read, and a plain second read, of the thread that holds the writer's byte:
    // through the count beside it; the releases may come in any order.
    m.lock_shared_recursive();
    m.lock_shared();
    EXPECT_EQ(m.reader_count(), 3u);
    m.unlock_shared();
    EXPECT_FALSE(access::held_by_an_exclusive_reader(m)) << "the first release gives back the writer's byte";
    m.unlock_shared();
    m.unlock_shared();
    EXPECT_EQ(m.reader_count(), 0u);
    EXPECT_THROW(m.unlock_shared(), contend::synchronization_error);
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

// Readers that wait for each other while both hold a read (a handshake under a read lock)
// must not deadlock: the second reader naps behind the first for at most the nap's patience
// (about 1 ms), then joins it through the count.
TEST(SharedMutex, AReaderThatMeetsAnExclusiveReaderJoinsItInsteadOfWaitingForIt) {
    watchdog dog(60s);
    shared_mutex m;
    read_exclusively(m);
    std::atomic<bool> joined{false};
    std::thread second([&] {
        access::hint_exclusive(m);
        m.lock_shared();
        joined.store(true);
        m.unlock_shared();
    });
    EXPECT_TRUE(eventually([&] { return joined.load(); })) << "the second reader waited for the first";
    m.unlock_shared();
    second.join();
    EXPECT_EQ(m.reader_count(), 0u);
}

TEST(SharedMutex, AWriterParkedBehindAnExclusiveReaderGetsInWhenItLeaves) {
    watchdog dog(60s);
    shared_mutex m;
    read_exclusively(m);
    std::atomic<bool> wrote{false};
    blocker writer([&] {
        m.lock();
        wrote.store(true);
        m.unlock();
    });
    ASSERT_TRUE(writer.parked());
    EXPECT_FALSE(wrote.load());
    EXPECT_FALSE(m.try_lock_shared()) << "a new reader passed a parked writer";
    m.unlock_shared();  // registered waiter: the release is the slow one, which wakes the writer
    EXPECT_TRUE(eventually([&] { return writer.done(); }));
    EXPECT_TRUE(wrote.load());
}

TEST(SharedMutex, AnUpgradeToWriteWaitsForAnExclusiveReaderAndGetsInWhenItLeaves) {
    watchdog dog(60s);
    shared_mutex m;
    read_exclusively(m);
    blocker upgrader([&] {
        m.lock_upgrade();
        m.unlock_upgrade_and_lock();
        m.unlock();
    });
    ASSERT_TRUE(upgrader.parked());
    m.unlock_shared();
    EXPECT_TRUE(eventually([&] { return upgrader.done(); }));
    EXPECT_FALSE(m.is_locked());
}

// The judgement: a lock read in tiny sections back to back goes to exclusive reads (a sampled
// read's section is shorter than twice its add); one whose readers meet each other in long
// sections goes back to shared reads (the readers that meet a holder probe: they join it
// through the count and time their sections). Writes now and then keep the bias off, as on a
// read-mostly lock with writers (a biased lock's reads are not timed). Bounded in reads, not in
// time.
TEST(SharedMutex, TinyReadsGoExclusiveAndLongReadsThatMeetGoBackToShared) {
    watchdog dog(60s);
    shared_mutex m;
    bool exclusive = false;
    // On a thread of its own: a fresh row, whose slots hold no verdict of an earlier lock that
    // hashed to the same index (a slot saying "exclusive" would take the reads exclusively at
    // once, and uncontended exclusive reads are not timed).
    std::thread([&] {
        for (int i = 0; i < 1'000'000 && !exclusive; ++i) {
            m.lock_shared();
            m.unlock_shared();
            exclusive = m.reads_exclusively();
            if (i % 64 == 0) {
                m.lock();
                m.unlock();
            }
        }
    }).join();
    ASSERT_TRUE(exclusive) << "a million tiny reads never voted for exclusive reads";
    std::atomic<bool> shared{false};
    run_threads(2, [&](int t) {
        for (int i = 0; i < 100'000 && !shared.load(); ++i) {
            m.lock_shared();
            std::this_thread::sleep_for(20us);
            m.unlock_shared();
            if (t == 0 && i % 64 == 0) {
                m.lock();
                m.unlock();
            }
            if (!m.reads_exclusively()) shared.store(true);
        }
    });
    EXPECT_TRUE(shared.load()) << "readers that met in long sections stayed exclusive";
}

}  // namespace contend_test
