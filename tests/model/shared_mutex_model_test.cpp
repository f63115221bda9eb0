// Models of contend::shared_mutex: readers against a writer, an upgrade against a reader
// leaving, the downgrades with readers parked behind the writer, timed reads, writes and
// upgrades whose deadlines the strategy may fire at any point while the lock changes hands,
// and a recursive read passing a parked writer; then the mutations the checker must find.
// Exclusion is checked at scheduling points inside each critical section; "nobody hangs" is
// the checker's own deadlock report; "the lock is left usable" is a final round of blocking
// acquisitions by the main thread once every other thread has finished.
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "../shared_mutex_access.hpp"
#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/shared_mutex.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

shared_mutex rw;  // static: the same address, so the same parking-lot buckets, in every execution

// Who is inside, as the lock's holders would see it. Each operation is a scheduling point, so
// the checker can run another thread while one is inside. A reader and a writer each count
// themselves in, then look for the other (as in Dekker's protocol): under the sequential
// consistency the checker models, one of two that overlap sees the other.
internal::atomic<int> readers_inside{0};
internal::atomic<int> writers_inside{0};
internal::atomic<int> upgraders_inside{0};
// The writes so far, bumped by each writer inside: a holder that must have kept the lock
// across an upgrade or a downgrade checks that nobody wrote in between.
internal::atomic<int> version{0};

void read_section() {
    readers_inside.fetch_add(1);
    model::check(writers_inside.load() == 0, "no writer holds the lock beside a reader");
    readers_inside.fetch_sub(1);
}

// An upgrader is a reader too, and the only upgrader.
void upgrade_section() {
    model::check(upgraders_inside.fetch_add(1) == 0, "at most one thread holds the upgradable lock");
    read_section();
    upgraders_inside.fetch_sub(1);
}

// Returns the version it wrote.
int write_section() {
    model::check(writers_inside.fetch_add(1) == 0, "at most one writer holds the lock");
    model::check(readers_inside.load() == 0, "no reader holds the lock beside a writer");
    const int v = version.fetch_add(1) + 1;
    model::check(writers_inside.load() == 1, "at most one writer holds the lock (inside)");
    writers_inside.fetch_sub(1);
    return v;
}

// Once every other thread has finished: nobody holds the lock, and every mode can still be
// taken and released. A parked bit left set with nobody parked would make a blocking
// acquisition here sleep for good, which the checker reports as a deadlock.
void expect_usable() {
    model::check(!rw.is_locked() && rw.reader_count() == 0, "nobody holds the lock at the end");
    rw.lock_shared();
    rw.unlock_shared();
    rw.lock_upgrade();
    rw.unlock_upgrade();
    rw.lock();
    rw.unlock();
    model::check(!rw.is_locked() && rw.reader_count() == 0, "nobody holds the lock after the last round");
}

void read_once() {
    rw.lock_shared();
    read_section();
    rw.unlock_shared();
}

void write_once() {
    rw.lock();
    write_section();
    rw.unlock();
}

// Two threads against a writer in the main thread, then the count of writes.
void two_threads_against_a_writer(void (*first)(), void (*second)(), int writes) {
    model::thread a(first);
    model::thread b(second);
    write_once();
    a.join();
    b.join();
    model::check(version.load() == writes, "every write happened");
    expect_usable();
}

// Two readers against a writer: exclusion both ways, and no lost wake-up (a reader parked
// behind the writer, the writer parked behind the readers: everyone finishes).
void two_readers_and_a_writer() { two_threads_against_a_writer(read_once, read_once, 1); }

// Two writers against a reader: a writer's unlock that wakes the next writer or the readers.
void two_writers_and_a_reader() { two_threads_against_a_writer(write_once, read_once, 2); }

// The upgrade waits for a reader that leaves meanwhile; a writer tries to get in between.
// The upgrader reads the version with the upgradable lock and must find it unchanged once it
// writes: an upgrade is atomic.
void upgrade_against_a_reader_leaving() {
    model::thread reader(read_once);
    model::thread writer(write_once);
    rw.lock_upgrade();
    upgrade_section();
    const int seen = version.load();
    rw.unlock_upgrade_and_lock();
    model::check(version.load() == seen, "no writer got in between the upgradable lock and the upgrade");
    write_section();
    rw.unlock();
    reader.join();
    writer.join();
    model::check(version.load() == 2, "both writes happened");
    expect_usable();
}

// The writer downgrades to a read with readers parked behind it (or arriving) and a writer
// waiting: the readers get in, nobody writes in between, nobody hangs.
void downgrade_to_shared() {
    rw.lock();
    model::thread a(read_once);
    model::thread b(write_once);
    const int mine = write_section();
    rw.unlock_and_lock_shared();
    model::check(version.load() == mine, "no writer got in between the write and the downgrade");
    read_section();
    rw.unlock_shared();
    a.join();
    b.join();
    model::check(version.load() == 2, "both writes happened");
    expect_usable();
}

// The writer downgrades to the upgradable lock with a reader parked behind it, and an
// upgrader waiting its turn; then it upgrades again and finally leaves by way of a read.
void downgrade_to_upgrade_and_back() {
    rw.lock();
    model::thread reader(read_once);
    model::thread upgrader([] {
        rw.lock_upgrade();
        upgrade_section();
        rw.unlock_upgrade();
    });
    const int mine = write_section();
    rw.unlock_and_lock_upgrade();
    model::check(version.load() == mine, "no writer got in between the write and the downgrade");
    upgrade_section();
    rw.unlock_upgrade_and_lock();
    const int again = write_section();
    rw.unlock_and_lock_upgrade();
    rw.unlock_upgrade_and_lock_shared();
    model::check(version.load() == again, "no writer got in between the downgrades");
    read_section();
    rw.unlock_shared();
    reader.join();
    upgrader.join();
    expect_usable();
}

// Timed reads and writes against a writer that takes the lock, writes, and hands over to a
// read: the deadlines fire whenever the strategy chooses, parked or not, and a waiter that
// times out must leave the lock as usable as it found it.
void timed_reader_and_writer_against_a_holder() {
    rw.lock();
    model::thread timed_reader([] {
        if (rw.try_lock_shared_for(std::chrono::microseconds(20))) {
            read_section();
            rw.unlock_shared();
        }
    });
    model::thread timed_writer([] {
        if (rw.try_lock_for(std::chrono::microseconds(20))) {
            write_section();
            rw.unlock();
        }
    });
    write_section();
    rw.unlock_and_lock_shared();
    read_section();
    rw.unlock_shared();
    timed_reader.join();
    timed_writer.join();
    expect_usable();
}

// A timed upgrade against a reader that leaves and a timed reader queued behind the upgrade:
// on failure the upgrader still holds the upgradable lock, and either way nobody hangs.
void timed_upgrade_against_a_reader_leaving() {
    model::thread reader(read_once);
    model::thread timed_reader([] {
        if (rw.try_lock_shared_for(std::chrono::microseconds(20))) {
            read_section();
            rw.unlock_shared();
        }
    });
    rw.lock_upgrade();
    if (rw.try_unlock_upgrade_and_lock_for(std::chrono::microseconds(20))) {
        write_section();
        rw.unlock();
    } else {
        model::check(!rw.is_locked() && rw.reader_count() >= 1, "a failed upgrade keeps the upgradable lock");
        upgrade_section();
        rw.unlock_upgrade();
    }
    reader.join();
    timed_reader.join();
    expect_usable();
}

// A reader takes a second read while a writer may be parked waiting for its first one: the
// recursive read must pass the parked writer. The plain lock_shared() there deadlocks, as the
// header says, which the test below uses to show that the model reaches the parked writer.
void read_twice_against_a_writer(bool recursive) {
    model::thread writer(write_once);
    rw.lock_shared();
    read_section();
    if (recursive) rw.lock_shared_recursive();
    else rw.lock_shared();
    read_section();
    rw.unlock_shared();
    rw.unlock_shared();
    writer.join();
    model::check(version.load() == 1, "the write happened");
    expect_usable();
}

void recursive_read_passes_a_parked_writer() { read_twice_against_a_writer(true); }

// A reader that holds the lock waits for a second reader to join it, while a timed writer
// queues between them: the second reader is held back by the parked writer (new readers
// queue behind it), the writer cannot get in before the first reader leaves, so the writer
// must time out, and its leaving must let the queued reader in.
manual_reset_event second_reader_in;

void a_timed_writer_giving_up_lets_the_readers_behind_it_in() {
    rw.lock_shared();
    model::thread writer([] {
        if (rw.try_lock_for(std::chrono::microseconds(20))) {
            write_section();
            rw.unlock();
        }
    });
    model::thread reader([] {
        rw.lock_shared();
        read_section();
        second_reader_in.set();
        rw.unlock_shared();
    });
    second_reader_in.wait();
    rw.unlock_shared();
    writer.join();
    reader.join();
    expect_usable();
}

// Reader bias: every read through the count may bias the lock in this build
// (reader_row::look_interval is 1), so a thread's second read goes through its row. Two such
// readers against a writer and a timed writer, both of which must take the bias back (one at a
// time), the timed one maybe giving up while a reader still holds its row.
void read_twice() {
    read_once();
    read_once();
}

void row_readers_against_revoking_writers() {
    model::thread a(read_twice);
    model::thread b([] {
        if (rw.try_lock_for(std::chrono::microseconds(3))) {
            write_section();
            rw.unlock();
        }
    });
    read_twice();
    write_once();
    a.join();
    b.join();
    expect_usable();
}

// Exclusive reads (shared_mutex.hpp): the lock's reads pinned exclusive for the model (the
// judgement never switches by itself in this build), and each thread's first read taken in the
// writer's byte at once. Two such readers against a writer and a timed writer: a reader meets
// another holding the byte (it naps at the gate, then joins through the count), a writer parks
// behind a reader in the byte (whose release must wake it), and the timed writer may give up.
using access = internal::shared_mutex_access;

void read_exclusively_twice() {
    access::hint_exclusive(rw);
    read_twice();
}

void exclusive_readers_against_writers() {
    access::pin_exclusive_reads(rw);
    model::thread a(read_exclusively_twice);
    model::thread b([] {
        if (rw.try_lock_for(std::chrono::microseconds(3))) {
            write_section();
            rw.unlock();
        }
    });
    read_exclusively_twice();
    write_once();
    a.join();
    b.join();
    expect_usable();
    access::unpin(rw);
}

// A reader that holds the lock in the writer's byte waits for a second reader to get in: the
// second must not wait for the first to leave (it naps at most the nap's patience, then joins
// it through the count), or the two wait for each other for ever.
manual_reset_event exclusive_second_reader_in;

void exclusive_readers_do_not_wait_for_each_other() {
    access::pin_exclusive_reads(rw);
    exclusive_second_reader_in.reset();
    access::hint_exclusive(rw);
    rw.lock_shared();
    model::thread second([] {
        access::hint_exclusive(rw);
        rw.lock_shared();
        read_section();
        exclusive_second_reader_in.set();
        rw.unlock_shared();
    });
    read_section();
    exclusive_second_reader_in.wait();
    rw.unlock_shared();
    second.join();
    expect_usable();
    access::unpin(rw);
}

// Each model runs the sampling strategies that find its bugs (the mutations below),
// sampled_schedules executions each, then every schedule with one preemption: a few hundred
// schedules of each, as the other families' models, since the model stage of the test command
// has a time budget (docs/design/model-checking.md, "Costs and budgets").
void expect_holds_under(std::initializer_list<model::strategy_kind> sampling, const std::function<void()>& body) {
    for (const auto strategy : sampling)
        expect_holds({.strategy = strategy, .executions = model_test::sampled_schedules}, body);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 1}, body);
}

constexpr auto by_pct = model::strategy_kind::pct;
constexpr auto by_random = model::strategy_kind::random;
constexpr auto by_bounded = model::strategy_kind::bounded;

TEST(SharedMutexModel, TwoReadersAndAWriterExcludeEachOtherAndAllFinish) {
    expect_holds_under({by_pct, by_random}, two_readers_and_a_writer);
}

TEST(SharedMutexModel, TwoWritersAndAReaderExcludeEachOtherAndAllFinish) {
    expect_holds_under({by_pct}, two_writers_and_a_reader);
}

TEST(SharedMutexModel, AnUpgradeWaitsForAReaderLeavingAndNoWriterGetsInBetween) {
    expect_holds_under({by_pct, by_random}, upgrade_against_a_reader_leaving);
}

TEST(SharedMutexModel, ADowngradeToAReadLetsTheParkedReadersInAndNoWriterBetween) {
    expect_holds_under({by_pct}, downgrade_to_shared);
}

TEST(SharedMutexModel, ADowngradeToTheUpgradableLockAndBackKeepsEveryoneGoing) {
    expect_holds_under({by_random}, downgrade_to_upgrade_and_back);
}

TEST(SharedMutexModel, TimedReadsAndWritesTimingOutLeaveTheLockUsable) {
    expect_holds_under({by_random}, timed_reader_and_writer_against_a_holder);
}

TEST(SharedMutexModel, ATimedWriterGivingUpLetsTheReadersQueuedBehindItIn) {
    expect_holds_under({by_pct}, a_timed_writer_giving_up_lets_the_readers_behind_it_in);
}

TEST(SharedMutexModel, ATimedUpgradeTimingOutKeepsTheUpgradableLockAndNobodyHangs) {
    expect_holds_under({by_random}, timed_upgrade_against_a_reader_leaving);
}

TEST(SharedMutexModel, ARecursiveReadPassesAParkedWriter) {
    expect_holds_under({by_pct}, recursive_read_passes_a_parked_writer);
}

TEST(SharedMutexModel, ReadersInTheirRowsAndWritersTakingTheBiasBackExcludeEachOther) {
    expect_holds_under({by_pct, by_random}, row_readers_against_revoking_writers);
}

TEST(SharedMutexModel, ExclusiveReadersAndWritersExcludeEachOtherAndAllFinish) {
    expect_holds_under({by_pct, by_random}, exclusive_readers_against_writers);
}

TEST(SharedMutexModel, ExclusiveReadersWaitingForEachOtherDoNotDeadlock) {
    expect_holds_under({by_pct}, exclusive_readers_do_not_wait_for_each_other);
}

// Not a mutation of the lock but of the caller: the same model with a plain second read,
// which the contract says can deadlock behind the parked writer. Found, so the model above
// does reach a writer parked between the two reads.
TEST(SharedMutexModel, APlainSecondReadBehindAParkedWriterIsFoundAsTheDocumentedDeadlock) {
    const auto r = model::explore({.strategy = model::strategy_kind::bounded, .executions = 2000, .preemptions = 1},
                                  [] { read_twice_against_a_writer(false); });
    EXPECT_TRUE(r.failed) << "the plain second read never met a parked writer:\n" << r.report;
    model_test::print_report(r);
}

// ---- mutations ----
// Each row names a mutation point of src/shared_mutex.cpp, the model that must find it, and
// the strategies that find it within its budget (2,000 executions unless it says). The
// figures (executions until found, PCT / random / bounded with one preemption; "missed": not
// within 2,000) are from the 2-vCPU VM; docs/design/model-checking.md has them in its table.
struct mutation_case {
    const char* name;
    void (*model)();
    std::vector<model::strategy_kind> strategies;
    std::uint64_t budget = 2000;
};

const std::vector<mutation_case> mutations = {
    // The last reader out sees WRITERS_PARKED and wakes nobody: the parked writer sleeps for
    // good (43 / missed / missed).
    {"shared_mutex_last_reader_forgets_the_writer", two_readers_and_a_writer, {by_pct}},
    // A writer's release hands the parked readers the lock without adding them to the count:
    // their unlocks find no reader (a misuse error thrown), or a writer gets in beside them
    // (23 / 1,067, too near the budget / 33).
    {"shared_mutex_readers_handed_uncounted", two_readers_and_a_writer, {by_pct, by_bounded}},
    // A writer that times out as the last parked one leaves WRITERS_PARKED set: new readers
    // queue behind a writer that is not there, and nobody wakes them. Only a reader that
    // waits for another reader shows it: any release that comes later clears the bit
    // (1 / about 1,700 / 1).
    {"shared_mutex_timed_out_writer_leaves_its_bit",
     a_timed_writer_giving_up_lets_the_readers_behind_it_in,
     {by_pct, by_bounded}},
    // The upgrade takes WRITER without waiting for the other readers to leave: a writer
    // beside a reader (23 / 484 / missed).
    {"shared_mutex_upgrade_does_not_wait", upgrade_against_a_reader_leaving, {by_pct, by_random}},
    // The upgrade waits without setting UPGRADING: it never parks (its validate sees no
    // upgrade) and spins on the parking lot for as long as the reader is kept off the CPU,
    // which PCT does: more than max_steps scheduling points (101 / missed / missed).
    {"shared_mutex_upgrade_does_not_announce", upgrade_against_a_reader_leaving, {by_pct}},
    // The last reader but the upgrader leaves and does not wake it: the upgrade sleeps for
    // good (87 / missed / missed).
    {"shared_mutex_reader_leaves_the_upgrader_parked", upgrade_against_a_reader_leaving, {by_pct}},
    // A writer takes the bias back without waiting for the readers in rows: a writer beside a
    // reader.
    {"shared_mutex_revocation_skips_the_scan", row_readers_against_revoking_writers, {by_pct}},
    // A writer parks on a biased lock with no reader in the count: nobody wakes it. PCT finds
    // it after 2,729 executions since every park also counts itself in the lock's waiter slot
    // (the writer's release by a byte store), which added steps to every schedule; random and
    // bounded miss it within 20,000.
    {"shared_mutex_writer_parks_on_a_biased_lock", row_readers_against_revoking_writers, {by_pct}, 4000},
    // A timed writer that gives up the revocation leaves REVOKING set: the other writer waits
    // for it for ever (more than max_steps scheduling points).
    {"shared_mutex_timed_out_revoker_keeps_revoking", row_readers_against_revoking_writers, {by_pct, by_random}},
    // A waiter parks without counting itself in the lock's waiter slot: a writer releasing
    // by storing its byte finds the slot `light` and wakes nobody.
    {"shared_mutex_parks_unregistered", two_readers_and_a_writer, {by_pct, by_bounded}},
    // The gate's writer naps behind the writer holding without a deadline: nobody wakes a
    // nap, so once the holder leaves it sleeps for good (10 / 25 / 73).
    {"shared_mutex_gated_writer_naps_without_a_deadline", two_writers_and_a_reader, {by_pct, by_random, by_bounded}},
    // A reader holding the writer's byte leaves, with a thread registered as waiting, and
    // wakes nobody: the writer parked behind it sleeps for good (PCT 16,715 / random 262 /
    // bounded missed).
    {"shared_mutex_exclusive_release_wakes_nobody", exclusive_readers_against_writers, {by_random}},
    // A reader that meets another holding the writer's byte waits for it to leave instead of
    // joining it after the nap: two readers waiting for each other never finish (PCT: the
    // first execution).
    {"shared_mutex_exclusive_reader_waits_for_the_holder", exclusive_readers_do_not_wait_for_each_other, {by_pct}},
};

void PrintTo(const mutation_case& c, std::ostream* os) { *os << c.name; }

class SharedMutexMutation : public testing::TestWithParam<mutation_case> {};

TEST_P(SharedMutexMutation, IsFound) {
    for (const auto strategy : GetParam().strategies)
        expect_found(GetParam().name, GetParam().model, GetParam().budget, {strategy});
}

// ctest names each test by its mutation (PrintTo above): model/SharedMutexModel/
// SharedMutexMutation.IsFound/shared_mutex_...
INSTANTIATE_TEST_SUITE_P(SharedMutexModel, SharedMutexMutation, testing::ValuesIn(mutations));

}  // namespace
