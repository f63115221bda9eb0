// The torture of contend::shared_mutex: more threads than cores run every way in and out of
// the lock at random over a table of several cache lines. Readers check the table is never
// torn; writers check they are alone and bump the version; holders that keep the lock across
// an upgrade or a downgrade check nobody wrote in between; at the end the writes counted equal
// the version. The table is plain memory, so under ThreadSanitizer a broken exclusion is also
// a reported race. No timing is asserted; the watchdog bounds the whole.
//
// Built with unlock()'s check off, as an optimized build runs it: the writers' releases are
// stores of the writer's byte wherever nobody is registered as parked (shared_mutex.hpp).
#define CONTEND_CHECK_UNLOCK 0
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

#include "contend/shared_mutex.hpp"
#include "contend/synchronization_error.hpp"
#include "shared_mutex_access.hpp"
#include "test_support.hpp"

namespace contend_test {
namespace {

constexpr int table_lines = 8;
constexpr int words_per_line = 8;

// Written only under the exclusive lock: every word holds the version after a write, so a
// reader that sees two different values saw a write half done.
struct table {
    struct alignas(64) line {
        std::array<std::uint64_t, words_per_line> words{};
    };
    std::array<line, table_lines> lines{};
    std::uint64_t version = 0;
};

class torture {
public:
    explicit torture(std::uint32_t seed) : seed_(seed) {}

    // Threads 0 .. readers-1 read (and upgrade), the rest write (and downgrade), in one
    // operation of every `write_one_in` (reading in the others).
    void run(int readers, int writers, long operations, long write_one_in = 1, bool exclusive_reads = false) {
        if (exclusive_reads) contend::internal::shared_mutex_access::pin_exclusive_reads(rw_);
        run_threads(readers + writers, [&](int t) {
            std::mt19937 rng(seed_ + static_cast<std::uint32_t>(t));
            if (exclusive_reads) contend::internal::shared_mutex_access::hint_exclusive(rw_);
            long writes = 0;
            for (long i = 0; i < operations; ++i) writes += one_op(t >= readers && i % write_one_in == 0, rng);
            writes_.fetch_add(writes, std::memory_order_relaxed);
        });
    }

    std::uint64_t version() const { return table_.version; }
    long writes() const { return writes_.load(); }
    long violations() const { return violations_.load(); }
    // Whether a reader ever found the lock biased towards readers (its read then, or a later
    // one, went through the thread's row).
    bool saw_bias() const { return saw_bias_.load(); }
    const std::string& first_violation() const { return first_violation_; }
    const contend::shared_mutex& lock() const { return rw_; }

private:
    // A short random wait for a timed acquisition: often shorter than a holder keeps the lock.
    static std::chrono::microseconds some_time(std::mt19937& rng) {
        return std::chrono::microseconds(std::uniform_int_distribution<int>(0, 40)(rng));
    }

    // Now and then a holder gives up its CPU halfway through the table, so that the others
    // find the lock held, spin out their budget and park (with more threads than cores, a
    // section this short is otherwise seldom interrupted), and a half-written table waits
    // for a reader that should not be there.
    static void maybe_yield() {
        thread_local unsigned n = 0;
        if (++n % 8 == 0) std::this_thread::yield();
    }

    void violation(const char* what) {
        if (violations_.fetch_add(1) == 0) first_violation_ = what;
    }

    // Under a read (or the upgradable lock): no writer inside, every word the same; returns the
    // version read.
    std::uint64_t check_read() {
        readers_inside_.fetch_add(1, std::memory_order_seq_cst);
        if (writers_inside_.load(std::memory_order_seq_cst) != 0) violation("a writer held the lock beside a reader");
        if (!saw_bias_.load(std::memory_order_relaxed) && rw_.is_read_biased())
            saw_bias_.store(true, std::memory_order_relaxed);
        const std::uint64_t v = table_.version;
        for (int i = 0; i < table_lines; ++i) {
            if (i == table_lines / 2) maybe_yield();
            for (const std::uint64_t w : table_.lines[i].words)
                if (w != v) violation("a reader saw a torn table");
        }
        readers_inside_.fetch_sub(1, std::memory_order_seq_cst);
        return v;
    }

    // Under the exclusive lock: alone; writes the next version into every word.
    void write() {
        if (writers_inside_.fetch_add(1, std::memory_order_seq_cst) != 0) violation("two writers held the lock");
        if (readers_inside_.load(std::memory_order_seq_cst) != 0) violation("a reader held the lock beside a writer");
        const std::uint64_t v = table_.version + 1;
        for (int i = 0; i < table_lines; ++i) {
            if (i == table_lines / 2) maybe_yield();
            for (std::uint64_t& w : table_.lines[i].words) w = v;
        }
        table_.version = v;
        writers_inside_.fetch_sub(1, std::memory_order_seq_cst);
    }

    void check_unchanged(std::uint64_t before, const char* what) {
        if (check_read() != before) violation(what);
    }

    void upgrader_in() {
        if (upgraders_inside_.fetch_add(1, std::memory_order_seq_cst) != 0) violation("two upgraders held the lock");
    }
    void upgrader_out() { upgraders_inside_.fetch_sub(1, std::memory_order_seq_cst); }

    // A plain read or write, taken one of three ways: blocking, timed, or one try. Returns
    // the writes made.
    long plain(bool writer, int how, std::mt19937& rng) {
        if (writer) {
            if (!(how == 0 ? (rw_.lock(), true) : how == 1 ? rw_.try_lock_for(some_time(rng)) : rw_.try_lock()))
                return 0;
            write();
            rw_.unlock();
            return 1;
        }
        if (how == 0   ? (rw_.lock_shared(), true)
            : how == 1 ? rw_.try_lock_shared_for(some_time(rng))
                       : rw_.try_lock_shared()) {
            check_read();
            rw_.unlock_shared();
        }
        return 0;
    }

    // One thread's operation; returns the writes it made. A reader reads plainly, recursively,
    // with the upgradable lock, or upgrades to write; a writer writes plainly or downgrades.
    long one_op(bool writer, std::mt19937& rng) {
        const int op = std::uniform_int_distribution<int>(0, 5)(rng);
        if (op < 3) return plain(writer, op, rng);
        if (writer) return op == 3 ? downgrade_to_read() : downgrade_to_upgrade(rng);
        if (op == 3) return recursive_read();
        return op == 4 ? upgradable_read(rng) : upgrade_to_write(rng);
    }

    // A recursive read, with writers parked or not.
    long recursive_read() {
        rw_.lock_shared();
        const std::uint64_t v = check_read();
        rw_.lock_shared_recursive();
        check_unchanged(v, "a write got in while a reader held its first read");
        rw_.unlock_shared();
        check_unchanged(v, "a write got in while a reader held its first read");
        rw_.unlock_shared();
        return 0;
    }

    // The upgradable lock, left as it was taken or by way of a read.
    long upgradable_read(std::mt19937& rng) {
        rw_.lock_upgrade();
        upgrader_in();
        const std::uint64_t v = check_read();
        upgrader_out();
        if (rng() % 2 == 0) {
            rw_.unlock_upgrade();
            return 0;
        }
        rw_.unlock_upgrade_and_lock_shared();
        check_unchanged(v, "a write got in between the upgradable lock and the read");
        rw_.unlock_shared();
        return 0;
    }

    // An upgrade to write, timed or not.
    long upgrade_to_write(std::mt19937& rng) {
        if (!rw_.try_lock_upgrade_for(some_time(rng))) return 0;
        upgrader_in();
        const std::uint64_t v = check_read();
        upgrader_out();
        const bool timed = rng() % 2 == 0;
        if (timed && !rw_.try_unlock_upgrade_and_lock_for(some_time(rng))) {
            upgrader_in();  // still the upgrader
            check_unchanged(v, "a write got in while a failed upgrade held the upgradable lock");
            upgrader_out();
            rw_.unlock_upgrade();
            return 0;
        }
        if (!timed) rw_.unlock_upgrade_and_lock();
        check_unchanged(v, "a write got in between the upgradable lock and the upgrade");
        write();
        rw_.unlock();
        return 1;
    }

    // A write, then a downgrade to a read.
    long downgrade_to_read() {
        rw_.lock();
        write();
        const std::uint64_t v = table_.version;
        rw_.unlock_and_lock_shared();
        check_unchanged(v, "a write got in between a write and its downgrade to a read");
        rw_.unlock_shared();
        return 1;
    }

    // A write, then a downgrade to the upgradable lock, then up again or out.
    long downgrade_to_upgrade(std::mt19937& rng) {
        rw_.lock();
        write();
        const std::uint64_t v = table_.version;
        rw_.unlock_and_lock_upgrade();
        upgrader_in();
        check_unchanged(v, "a write got in between a write and its downgrade to the upgradable lock");
        upgrader_out();
        if (rng() % 2 == 0) {
            rw_.unlock_upgrade();
            return 1;
        }
        rw_.unlock_upgrade_and_lock();
        check_unchanged(v, "a write got in between a downgrade and the upgrade back");
        write();
        rw_.unlock();
        return 2;
    }

    const std::uint32_t seed_;
    contend::shared_mutex rw_;
    table table_;
    std::atomic<int> readers_inside_{0};
    std::atomic<int> writers_inside_{0};
    std::atomic<int> upgraders_inside_{0};
    std::atomic<long> writes_{0};
    std::atomic<long> violations_{0};
    std::atomic<bool> saw_bias_{false};
    std::string first_violation_;  // written once, by the thread that counted the first
};

void torture_with(int readers, int writers, long operations, long write_one_in = 1, bool expect_bias = false,
                  bool exclusive_reads = false) {
    watchdog dog(240s, "shared_mutex torture");
    const std::uint32_t seed = test_seed();
    torture t(seed);
    t.run(readers, writers, operations, write_one_in, exclusive_reads);
    if (expect_bias) {
        EXPECT_TRUE(t.saw_bias()) << "no reader found the lock biased; " << seed_trace(seed);
    }
    EXPECT_EQ(t.violations(), 0) << t.first_violation() << "; " << seed_trace(seed);
    EXPECT_EQ(t.version(), static_cast<std::uint64_t>(t.writes())) << seed_trace(seed);
    EXPECT_FALSE(t.lock().is_locked()) << seed_trace(seed);
    EXPECT_EQ(t.lock().reader_count(), 0u) << seed_trace(seed);
}

// Twelve threads, half reading and half writing: more than the cores of most test machines.
TEST(SharedMutexTorture, ReadersNeverSeeATornTableAndWritersAreAlone) { torture_with(6, 6, scaled(10000)); }

// Mostly readers with two writers: the writers park behind reader phases and the readers
// behind them, the case phase-fairness is for.
TEST(SharedMutexTorture, TwoWritersAmongManyReadersStayExclusiveAndFinish) { torture_with(10, 2, scaled(10000)); }

// Read-mostly (the writers write once in 200 operations): the lock is biased towards readers,
// who read through their threads' rows, and every write takes the bias back first, while
// readers in rows may be halfway through the table.
TEST(SharedMutexTorture, ReadersInTheirRowsAndRareWritersTakingTheBiasBackStayExclusive) {
    torture_with(10, 2, scaled(20000), 200, true);
}

// Reads pinned exclusive (shared_mutex.hpp, "Exclusive reads"): readers take the writer's
// byte, nap behind each other at the gate and join each other through the count, among
// recursive reads, upgrades, downgrades and timed acquisitions of every mode.
TEST(SharedMutexTorture, ReadsTakenExclusivelyAmongEveryOtherModeStayExclusive) {
    torture_with(10, 2, scaled(10000), 1, false, true);
}

// The optimized unlock() does not look at the word when nobody is registered in its waiter
// slot: an unlock with no writer stores the writer's byte free again. Where it does look (a
// slot still armed by an earlier test's waiters, whose lock may have hashed there), it
// throws. Either way the lock must be as it was, whatever mode is held.
void unlock_with_no_writer(contend::shared_mutex& m) {
    try {
        m.unlock();
    } catch (const contend::synchronization_error&) {
    }
}

TEST(SharedMutexUncheckedUnlock, AnUnlockWithNoWriterChangesNothing) {
    contend::shared_mutex m;
    unlock_with_no_writer(m);
    EXPECT_FALSE(m.is_locked());
    EXPECT_EQ(m.reader_count(), 0u);
    m.lock_upgrade();
    m.lock_shared();
    unlock_with_no_writer(m);
    EXPECT_FALSE(m.is_locked());
    EXPECT_EQ(m.reader_count(), 2u) << "the upgrader and the reader still hold";
    EXPECT_FALSE(m.try_lock_upgrade()) << "the upgrader is still there";
    m.unlock_shared();
    m.unlock_upgrade_and_lock();
    EXPECT_TRUE(m.is_locked());
    m.unlock();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
    EXPECT_EQ(m.reader_count(), 0u);
}

}  // namespace
}  // namespace contend_test
