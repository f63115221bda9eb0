// contend::shared_mutex: an eight-byte reader-writer lock on the parking lot, with upgradable
// reads; writers stop new readers, and the lock changes phase fairly at least once per ms.
//
// Names: the standard's SharedTimedMutex (so std::shared_lock, std::unique_lock and
// std::condition_variable_any work unchanged) and Boost.Thread's UpgradeLockable
// (lock_upgrade, unlock_upgrade_and_lock, ...).
//
// State word (32 bits), with the gate beside it. The writer's bits have the low byte to
// themselves, so that a writer can release by storing that byte alone (below):
//
//   | bit / field            | meaning                                                      |
//   |------------------------|--------------------------------------------------------------|
//   | 0x01 WRITER            | a writer holds the lock (then the reader count is 0)         |
//   | 0x02 WRITER_GATED      | the writer holding came through the gate, and opens it       |
//   | 0x04 EXCLUSIVE_READ    | a reader holds the lock in the writer's byte (below,         |
//   |                        | "Exclusive reads"): writers and upgrades to write wait for   |
//   |                        | it; readers and an upgrader may still join through the count |
//   | 0x100 UPGRADER         | an upgradable reader holds it (also counted as one reader)   |
//   | 0x200 UPGRADING        | that upgrader waits for the other readers to leave           |
//   | 0x400 READERS_PARKED   | readers may be parked (queue: the lock's address)            |
//   | 0x800 WRITERS_PARKED   | writers may be parked                                        |
//   | 0x1000 UPGRADERS_PARKED| would-be upgraders may be parked                             |
//   | 0x2000 WRITER_WAITING  | a writer waits (polling, or parked and owed the next turn):  |
//   |                        | new readers and upgraders queue behind it                    |
//   | 0x4000 READ_BIAS       | readers may hold the lock in their own rows (below), not here|
//   | 0x8000 REVOKING        | a writer or an upgrade is taking the bias back: no new reader|
//   |                        | enters through its row                                       |
//   | bits 16..31            | the number of readers holding the lock through the count     |
//   |                        | (upgrader included); at 32,768 (bit 31) new readers wait     |
//   |                        | until one leaves                                             |
//
// The gate is a contend::mutex that writers which meet another writer take first, so that
// writers contending with writers wait in the mutex's way (one designee polls, the rest
// sleep or yield) and only one of them waits on the word. That one, while a writer holds
// the lock, naps (about 50-90 us a nap, at most 1 ms in all) instead of polling, as the
// mutex's designee does: the holder's release wakes nobody, and the holder keeps the lock's
// line and its data in its cache.
//
// Reader bias (visible readers; docs/references.md, bravo-rw): a read-mostly lock is biased
// towards readers, and a reader then marks its read in its own thread's row of slots
// (contend/internal/reader_slots.hpp) instead of in the count, so readers on different CPUs
// write different lines and the state word stays clean in every cache. A reader whose read
// went through the count sets READ_BIAS (every 16th such read of its thread looks) when no
// writer waits and the bias is not inhibited. A writer (or an upgrade) that finds READ_BIAS
// revokes it before it can take the lock: it sets REVOKING (a writer sets WRITER_WAITING with
// it, which stops new readers through the count), waits until no row holds a read of
// the lock, then clears both bits and inhibits the bias for 9 times as long as that took (so
// revocations take at most about a tenth of a writer-mixed workload's time). While READ_BIAS
// is set no writer holds the lock and none is parked.
//
// Exclusive reads: where read sections are short against the cost of moving the count's line
// between CPUs, and the bias is off (writes come too often), sharing a read buys nothing and
// every read through the count moves that line twice: a plain mutex was up to 2.7x faster than
// this lock at 90-99 % reads with tiny sections (docs/design/shared_mutex.md, "Exclusive
// reads"). There a reader takes a free lock in the writer's byte (EXCLUSIVE_READ: a CAS to
// lock, a store of the byte to unlock, as a writer's), and a reader that meets such a holder
// naps at the gate while it stays held, as a writer behind a writer does, so that one holder
// runs section after section with the line in its cache. Readers never wait for readers
// beyond that: after at most the nap's patience (about 1 ms) a reader joins the holder
// through the count (readers queued at the gate behind it nap in turn, each at most that
// long), so readers that wait for each other while both hold a read do not deadlock. Which way a lock's reads go is
// advice kept beside the word (read_score_), judged from timed reads through the count: one read in look_interval *
// sample_interval of each thread, and one in sample_interval of the reads that meet an exclusive holder (which then
// joins it, as a probe), times its fetch_add (what the count's line costs now, c) and its
// section (s), and votes "exclusive" when s < 2c. A score of 4 votes out of 0 to 7 switches
// reads to exclusive; the score falls one per vote against. The bias comes first: a biased
// lock's reads go through the rows whatever the score. A thread that holds a read taken
// exclusively and reads again goes through the count.
//
// Invariants: WRITER is never set while the reader count is above 0 (but for readers that
// added themselves and are backing out, having found the lock stopped), and UPGRADING only
// while UPGRADER is. EXCLUSIVE_READ is never set with WRITER; readers in the count, and an
// upgrader, may hold beside it (an upgrade to write waits for it as for the count). A writer does not claim the lock
// while readers hold it: it sets WRITER_WAITING, which stops new readers, and takes the lock when the readers present
// have left (polling while awake; parked, the last reader out wakes it).
//
// Fairness: a waiting writer stops new readers, so a writer never waits behind an endless
// stream of readers, only for the readers present (and for its turn among writers). Writers,
// and readers released by a writer, otherwise barge: a release wakes the next waiters and
// lets them race for the lock, because handing a lock to a thread that is still asleep
// leaves it idle for a wake-up (tens of us; a timeslice when threads outnumber CPUs). At
// least about once per millisecond (the parking lot's per-bucket fairness deadline, 0 to
// 1 ms) a release hands the lock over instead: to the next parked writer when the last
// reader leaves, and to every parked reader at once when a writer leaves (their count added
// for them, the phase change of phase-fair locks; docs/references.md, phase-fair-rw). So
// neither class starves: a parked reader waits for at most about 1 ms of writers, and a
// writer for the readers present and about 2 ms per writer ahead of it (at the gate, up to
// 1 ms of naps while a writer holds, then parked, up to the 1 ms deadline).
//   - Upgraders (one at a time) wait like readers behind waiting writers; among themselves
//     they retry in no order.
//
// Recursive reads: lock_shared() from a thread that already reads can deadlock when a
// writer is parked (the writer waits for this thread's first read, and the second read waits
// behind the writer), as in every writer-preferring lock. lock_shared_recursive() is the
// mode that is safe for it: it waits only while a writer holds the lock, so it passes parked
// writers and an upgrade in progress. Use it only from a thread that holds a read already,
// or it lets readers starve writers.
//
// Costs: lock_shared() and unlock_shared() are, biased, a seq_cst store to this thread's own
// slot and a load of the state word, then a release store to the slot; unbiased, one
// fetch_add / fetch_sub each (and a look at this thread's slot); taken exclusively, a CAS and
// a store of the writer's byte, as a write (and a store to this thread's slot each); lock() and
// lock_upgrade() a CAS when they can take the lock. unlock() is, when no thread is parked
// on the lock and none came through the gate, a load of the lock's waiter slot, a load of
// the gate's byte, a release store of the writer's byte and a second load of the slot: no
// locked instruction, as contend::mutex's unlock (internal/waiter_slots.hpp; a thread about
// to park on the lock counts itself in that slot first, and src/waiter_registry.cpp says
// why the store cannot lose its wake-up). Otherwise a CAS. A contended acquisition polls
// for up to spin_budget (pausing, and yielding a CPU another thread needs), then parks; a
// writer that meets another writer first takes the gate. The slow paths take one or two
// parking-lot bucket locks.
//
// A writer's revocation waits for the readers in rows by polling, then sleeping in steps up to
// 100 us (a read through a row wakes nobody when it ends); the bias is off while writers come
// often, so that wait is rare.
//
// Misuse: unlocking a mode that is not held (unlock() with no writer, unlock_shared() with no
// reader, unlock_upgrade() with no upgrader) throws synchronization_error and leaves the lock
// as it was; for unlock() as for contend::mutex: whenever it looks at the word (a thread is
// registered in the lock's waiter slot, the gate is held, or the build sets
// CONTEND_CHECK_UNLOCK, the default where NDEBUG is not defined). An optimized build's
// unlock() of a lock no writer holds otherwise stores the writer's byte free again, which
// changes nothing unless a reader holds the lock in that byte (exclusive reads): that
// reader's hold then ends, as a mutex's does when a thread that does not hold it unlocks it.
// Ownership is not tracked: one thread releasing a mode another thread holds is not
// detected. Not recursive for writers.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/reader_slots.hpp"
#include "contend/internal/waiter_slots.hpp"
#include "contend/mutex.hpp"

namespace contend {

namespace internal {
struct shared_mutex_access;  // tests and models only: see read_score_
}  // namespace internal

class shared_mutex {
public:
    using word = std::uint32_t;  // the state word
    constexpr shared_mutex() noexcept = default;
    shared_mutex(const shared_mutex&) = delete;
    shared_mutex& operator=(const shared_mutex&) = delete;

    // ---- exclusive (writer) ----
    void lock() {
        word s = 0;
        if (!state_.compare_exchange_strong(s, writer_bit, std::memory_order_acquire, std::memory_order_relaxed))
            [[unlikely]]
            lock_slow(internal::no_deadline);
    }
    bool try_lock() noexcept {
        word s = state_.load(std::memory_order_relaxed);
        for (;;) {
            if (s & read_bias_bit) [[unlikely]] {
                if (!try_revoke_bias()) return false;
                s = state_.load(std::memory_order_relaxed);
                continue;
            }
            if (!writer_can_take(s)) return false;
            if (state_.compare_exchange_weak(s, taken_by_writer(s), std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock() || lock_slow(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock() || lock_slow(internal::to_deadline(t));
    }
    void unlock() {
        const auto& slot = internal::waiter_slot_for(this);
#if CONTEND_CHECK_UNLOCK
        if (!(state_.load(std::memory_order_relaxed) & writer_bit)) [[unlikely]]
            return unlock_fenced(false);  // throws: no writer holds the lock
#endif
        // A slot that is exactly `light` says that no thread is parked, or about to park, on
        // a lock hashing there; a free gate, or a word held by a writer without WRITER_GATED,
        // that this writer did not come through the gate (the gate's byte first: the word is
        // the one this thread's lock() wrote with a locked CAS, and reading it back soon after
        // is slow on some CPUs; docs/design/unlock.md). The rest of the word is then the
        // readers' and waiters' business, and the writer's byte is the writer's alone: store
        // it, then look again for a waiter that registered meanwhile.
        if (slot.load(std::memory_order_relaxed) == internal::waiter_slot_light &&
            (!gate_.is_locked() ||
             (state_.load(std::memory_order_relaxed) & (writer_bit | writer_gated_bit)) == writer_bit)) [[likely]]
            return store_writer_byte_and_look(slot);
        unlock_fenced(false);
    }

    // ---- shared (reader) ----
    void lock_shared() {
        internal::reader_row* r = internal::reader_row_for_read();
        if (r != nullptr) [[likely]] {
            auto& slot = r->slot_for(this);
            const void* v = slot.load(std::memory_order_relaxed);
            if (v == internal::reader_row::hint()) {
                if (enter_biased(slot)) return;
            } else if (v == internal::reader_row::exclusive_hint()) {
                // Reads of this lock are taken exclusively (see above): a CAS of a free lock,
                // as a writer's. The hint is this thread's, per slot index: the lock's own
                // judgement (a byte on the line the CAS takes anyway) must still agree.
                if (reads_exclusively()) [[likely]] {
                    word s = 0;
                    if (state_.compare_exchange_strong(s, exclusive_read_bit, std::memory_order_acquire,
                                                       std::memory_order_relaxed)) [[likely]] {
                        slot.store(internal::reader_row::tagged(this, exclusive_tag), std::memory_order_relaxed);
                        return;
                    }
                    return read_exclusively(*r, slot);
                }
                slot.store(nullptr, std::memory_order_relaxed);
            } else if (marks_this(v)) [[unlikely]] {
                return read_through_the_count();  // a second read of a thread that holds one
            }
            if (--r->countdown == 0) [[unlikely]]
                return lock_shared_looked(*r);
        }
        // fetch_add, not load and CAS: on a line that readers of other CPUs keep taking, a
        // load fetches it shared and the CAS must fetch it again, and a CAS can fail and
        // retry where an add cannot. A reader that finds the lock stopped backs out.
        const word s = state_.fetch_add(one_reader, std::memory_order_acquire);
        if (s & reader_blockers) [[unlikely]]
            back_out_and_wait(s + one_reader);
        else if (r != nullptr && (s & read_bias_bit)) [[unlikely]] after_counted_read(*r, s);
    }
    bool try_lock_shared() noexcept {
        internal::reader_row* r = internal::reader_row_for_read();
        if (r != nullptr) {
            auto& slot = r->slot_for(this);
            const void* v = slot.load(std::memory_order_relaxed);
            if (v == internal::reader_row::hint() && enter_biased(slot)) return true;
            if (v == internal::reader_row::exclusive_hint() && reads_exclusively() && try_read_exclusively(slot))
                return true;
        }
        return try_add_reader(reader_blockers);
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock_shared() || lock_shared_slow(internal::deadline_after(d), reader_blockers);
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock_shared() || lock_shared_slow(internal::to_deadline(t), reader_blockers);
    }
    // A read by a thread that already holds one (see "Recursive reads" above): waits only
    // while a writer holds the lock.
    void lock_shared_recursive() {
        if (!try_lock_shared_recursive()) [[unlikely]]
            lock_shared_slow(internal::no_deadline, recursive_reader_blockers);
    }
    // (A recursive read always goes through the count: the thread's slot for this lock may
    // hold its first read already, through the slot or exclusively; readers through the count
    // may join a reader that holds the lock exclusively.)
    bool try_lock_shared_recursive() noexcept { return try_add_reader(recursive_reader_blockers); }
    template <class Clock, class Duration>
    bool try_lock_shared_recursive_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock_shared_recursive() || lock_shared_slow(internal::to_deadline(t), recursive_reader_blockers);
    }
    void unlock_shared() {
        if (internal::reader_row* r = internal::this_thread_reader_row) {
            auto& slot = r->slot_for(this);
            // Only this thread writes its slot, so a relaxed load sees its own read's mark.
            // Reads are interchangeable: a thread holding this lock through its slot and
            // through the count may give back either first.
            const void* v = slot.load(std::memory_order_relaxed);
            if (v == this) {
                slot.store(internal::reader_row::hint(), std::memory_order_release);
                return;
            }
            if (v == internal::reader_row::tagged(this, exclusive_tag)) {
                slot.store(internal::reader_row::exclusive_hint(), std::memory_order_relaxed);
                return release_exclusive_read();
            }
            if (marks_this(v)) [[unlikely]]
                return unlock_shared_marked(*r, v);  // sampled
        }
        const word s = state_.fetch_sub(one_reader, std::memory_order_release);
        if (!holds_plain_reader(s)) [[unlikely]]
            undo_unlock_shared();  // throws
        if (s & reader_unlock_wakes) [[unlikely]]
            after_reader_left(s - one_reader);
    }

    // ---- upgradable (at most one upgrader, alongside readers) ----
    void lock_upgrade() {
        if (!try_lock_upgrade()) [[unlikely]]
            lock_upgrade_slow(internal::no_deadline);
    }
    bool try_lock_upgrade() noexcept {
        word s = state_.load(std::memory_order_relaxed);
        while (!(s & upgrader_blockers)) {
            if (state_.compare_exchange_weak(s, s + one_reader + upgrader_bit, std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
        return false;
    }
    template <class Rep, class Period>
    bool try_lock_upgrade_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock_upgrade() || lock_upgrade_slow(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool try_lock_upgrade_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock_upgrade() || lock_upgrade_slow(internal::to_deadline(t));
    }
    void unlock_upgrade();
    // Upgrade to exclusive: waits for the other readers to leave; new readers queue
    // meanwhile (the upgrade has the next turn), and no writer can get in between.
    void unlock_upgrade_and_lock() { upgrade_slow(internal::no_deadline); }
    // One attempt: succeeds only if the upgrader is the only reader. noexcept, as Boost's: a
    // call with no upgradable lock held returns false (and changes nothing) instead of throwing.
    bool try_unlock_upgrade_and_lock() noexcept;
    template <class Rep, class Period>
    bool try_unlock_upgrade_and_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_unlock_upgrade_and_lock() || upgrade_slow(internal::deadline_after(d));
    }
    // On failure (deadline passed) the caller still holds the upgradable lock.
    template <class Clock, class Duration>
    bool try_unlock_upgrade_and_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_unlock_upgrade_and_lock() || upgrade_slow(internal::to_deadline(t));
    }
    // Downgrades. Each is atomic (no other writer can get in between) and lets the readers
    // parked behind the writer in at once.
    void unlock_and_lock_upgrade();
    void unlock_and_lock_shared();
    void unlock_upgrade_and_lock_shared();

    // Snapshots, for assertions and diagnostics.
    bool is_locked() const noexcept { return state_.load(std::memory_order_relaxed) & writer_bit; }
    // Whether reads are taken exclusively now (a snapshot of the lock's judgement).
    bool reads_exclusively() const noexcept {
        return read_score_.load(std::memory_order_relaxed) >= exclusive_read_threshold;
    }
    // Readers through the count, in the writer's byte and through rows (the rows scanned: for
    // diagnostics).
    std::uint32_t reader_count() const noexcept {
        const word s = state_.load(std::memory_order_relaxed);
        return (s >> reader_shift) + ((s & exclusive_read_bit) ? 1 : 0) + internal::reader_slots_holding(this);
    }
    // Whether reads may go through the threads' rows now (a snapshot).
    bool is_read_biased() const noexcept { return state_.load(std::memory_order_relaxed) & read_bias_bit; }

    // How long a contended acquisition polls before it parks (see the .cpp for why).
    static constexpr std::chrono::nanoseconds spin_budget{4000};

    static constexpr word writer_bit = 0x01;
    static constexpr word writer_gated_bit = 0x02;
    static constexpr word exclusive_read_bit = 0x04;
    static constexpr word upgrader_bit = 0x100;
    static constexpr word upgrading_bit = 0x200;
    static constexpr word readers_parked_bit = 0x400;
    static constexpr word writers_parked_bit = 0x800;
    static constexpr word upgraders_parked_bit = 0x1000;
    static constexpr word writer_waiting_bit = 0x2000;
    static constexpr word read_bias_bit = 0x4000;
    static constexpr word revoking_bit = 0x8000;
    static constexpr unsigned reader_shift = 16;
    // The count's top bit: 32,768 readers through the count, and new ones wait.
    static constexpr word readers_full_bit = 0x8000'0000u;
    // After a revocation that took d, the bias stays off for bias_inhibit_factor * d (BRAVO's
    // N: revocations then take at most about 1/(N+1) of the time).
    static constexpr unsigned bias_inhibit_factor = 9;
    static constexpr word one_reader = word{1} << reader_shift;
    // The judgement of exclusive reads: a score of votes, 0 to exclusive_read_score_max, at
    // or above exclusive_read_threshold the lock's reads are taken exclusively.
    static constexpr std::uint8_t exclusive_read_threshold = 4;
    static constexpr std::uint8_t exclusive_read_score_max = 7;
    // A score no vote changes (set by tests and models only).
    static constexpr std::uint8_t exclusive_read_pinned = 0xff;

private:
    friend struct internal::shared_mutex_access;
    // What stops a new (non-recursive) reader: a writer holding, waiting, or an upgrade.
    static constexpr word reader_blockers = writer_bit | writer_waiting_bit | upgrading_bit | readers_full_bit;
    static constexpr word upgrader_blockers = writer_bit | upgrader_bit | writer_waiting_bit | readers_full_bit;
    // What keeps a reader from taking the writer's byte (exclusive reads).
    static constexpr word exclusive_read_blockers =
        reader_blockers | writer_bit | exclusive_read_bit | read_bias_bit | revoking_bit;
    // What a recursive reader waits for.
    static constexpr word recursive_reader_blockers = writer_bit | readers_full_bit;
    // The bits in the writer's byte: only a writer holding the lock (or a reader holding it
    // exclusively) sets them, and its release clears them all.
    static constexpr word writer_byte = 0xff;
    static_assert((writer_bit | writer_gated_bit | exclusive_read_bit) <= writer_byte &&
                  ((upgrader_bit | upgrading_bit | readers_parked_bit | writers_parked_bit | upgraders_parked_bit |
                    writer_waiting_bit | read_bias_bit | revoking_bit) &
                   writer_byte) == 0 &&
                  revoking_bit < (word{1} << reader_shift));
    // A reader's unlock must look further when a writer is parked, an upgrade waits, or
    // readers or upgraders are parked (they may be free to go once the count changes). A
    // writer that polls sees the count reach 0 by itself.
    static constexpr word reader_unlock_wakes =
        writers_parked_bit | upgrading_bit | readers_parked_bit | upgraders_parked_bit;

    static constexpr bool writer_can_take(word s) noexcept {
        return !(s & (writer_bit | exclusive_read_bit | read_bias_bit)) && s < one_reader;
    }
    // The state once a writer takes the lock from `s`: a waiting writer's announcement is
    // used up (other waiting writers renew theirs).
    static constexpr word taken_by_writer(word s) noexcept { return (s | writer_bit) & ~writer_waiting_bit; }
    static constexpr word taken_by_gated_writer(word s) noexcept { return taken_by_writer(s) | writer_gated_bit; }
    // A reader other than the upgrader holds the lock.
    // The upgrader is the only reader: the count holds it alone and no reader holds the
    // writer's byte.
    static constexpr bool upgrader_alone(word s) noexcept {
        return (s >> reader_shift) == 1 && !(s & exclusive_read_bit);
    }
    static constexpr bool holds_plain_reader(word s) noexcept {
        return (s >> reader_shift) > ((s & upgrader_bit) ? 1u : 0u);
    }

    static constexpr std::uintptr_t exclusive_tag = 1;  // reader_row::tagged: a read held exclusively
    static constexpr std::uintptr_t sampled_tag = 2;  // a read through the count, being timed
    // Whether a slot's value is this lock's address with a tag (not the address alone: that
    // is a read through the slot).
    bool marks_this(const void* v) const noexcept {
        const auto d = reinterpret_cast<std::uintptr_t>(v) ^ reinterpret_cast<std::uintptr_t>(this);
        return d != 0 && d <= 3;
    }

    // A read through this thread's slot: mark it, then look at the state (seq_cst both, the
    // two halves of Dekker's protocol with a revoking writer, which sets REVOKING and then
    // scans the slots: one of the two sees the other). Takes the mark back if the lock is not
    // biased (or is being revoked).
    bool enter_biased(internal::atomic<const void*>& slot) noexcept {
        slot.store(this, std::memory_order_seq_cst);
        if ((state_.load(std::memory_order_seq_cst) & (read_bias_bit | revoking_bit)) == read_bias_bit) [[likely]]
            return true;
        slot.store(nullptr, std::memory_order_release);
        return false;
    }

    bool try_add_reader(word blockers) noexcept {
        word s = state_.load(std::memory_order_relaxed);
        while (!(s & blockers)) {
            if (state_.compare_exchange_weak(s, s + one_reader, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    enum class wait_result { taken, timed_out, writer_seen, bias_seen };
    void after_counted_read(internal::reader_row& r, word s) noexcept;
    void lock_shared_looked(internal::reader_row& r);
    void lock_shared_sampled(internal::reader_row& r);
    bool try_read_exclusively(internal::atomic<const void*>& slot) noexcept;
    void read_exclusively(internal::reader_row& r, internal::atomic<const void*>& slot);
    void unlock_shared_marked(internal::reader_row& r, const void* v);
    // A reader's release of the writer's byte, as a writer's unlock(): a store of the byte
    // when no thread is registered as waiting in the lock's waiter slot (a reader holding it
    // never came through the gate), else a CAS.
    void release_exclusive_read() {
        const auto& slot = internal::waiter_slot_for(this);
        if (slot.load(std::memory_order_relaxed) == internal::waiter_slot_light) [[likely]]
            return store_writer_byte_and_look(slot);
        unlock_fenced(true);
    }
    // The release by a store of the writer's byte, once the slot was `light`: then a second
    // look at the slot, for a waiter that registered meanwhile.
    void store_writer_byte_and_look(const internal::atomic<std::uint32_t>& slot) {
        release_writer_byte();
        // Only the compiler must not move the load above the store; the hardware ordering is
        // supplied by the registering waiter's heavy barrier.
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (slot.load(std::memory_order_relaxed) != internal::waiter_slot_light) [[unlikely]]
            after_store_release();
    }
    void release_exclusive_read_slow();
    void read_through_the_count();
    void judge_read_section(bool short_section) noexcept;
    bool try_revoke_bias() noexcept;
    std::uint16_t inhibition(std::uint64_t took) const noexcept;
    bool revoke_bias(internal::deadline until, word stop);
    bool lock_slow(internal::deadline until);
    wait_result wait_for_state(internal::deadline until, bool gated);
    void nap_behind_a_writer(internal::deadline until, word holder);
    wait_result announce_and_poll(bool gated);
    void open_gate();
    bool lock_shared_slow(internal::deadline until, word blockers);
    void back_out_and_wait(word s);
    [[noreturn]] void undo_unlock_shared();
    bool lock_upgrade_slow(internal::deadline until);
    bool upgrade_slow(internal::deadline until);
    void unlock_fenced(bool exclusive_read);
    void unlock_slow(bool exclusive_read);
    void after_store_release();
    // The writer's byte, stored free: the other bytes (readers adding themselves to back out
    // again, waiters' bits) are left as they are. A byte store into the word's low byte on
    // x86-64, where it is atomic and ordered with the locked instructions on the word (the
    // mixed-size access Linux's qrwlock uses; docs/references.md, linux-qrwlock). Under the
    // model checker, which has no view of a byte inside a word, and elsewhere, the same
    // change as one RMW: under sequential consistency the two are the same step.
    void release_writer_byte() noexcept {
#if CONTEND_MODEL_CHECK || !defined(__x86_64__)
        state_.fetch_and(~writer_byte, std::memory_order_release);
#else
        static_assert(std::endian::native == std::endian::little && sizeof(state_) == sizeof(word));
        __atomic_store_n(reinterpret_cast<unsigned char*>(&state_), 0, __ATOMIC_RELEASE);
#endif
    }
    void release_writer(word keep);
    bool release_writer_to_readers(word keep);
    void wake_a_writer(bool from_writer);
    void after_reader_left(word s);
    void after_release(word s);
    void release_to_readers();
    void wake_upgraders();
    void after_writer_timeout();
    [[noreturn]] static void misuse(const char* what);

    internal::atomic<word> state_{0};
    // Writers that find another writer holding the lock queue here first, so that only one
    // of them (the gate's holder) waits on the state word; the gate's own parking (a
    // designee, a FIFO queue, a crowd that yields) is contend::mutex's. (Writers that find
    // only readers wait on the word directly: their wait is the readers' drain.) Beside the word, not at its address:
    // the mutex parks under its own address, and the readers park under the word's.
    mutex gate_;
    // Exclusive reads' score (see above): advice, read and written with relaxed accesses and
    // no read-modify-write (a lost vote changes nothing but the next verdict); a plain atomic,
    // not the model checker's, because no step of the protocol depends on it. Tests and
    // models set it through internal::shared_mutex_access, which they define.
    std::atomic<std::uint8_t> read_score_{0};
    // Until when the bias stays off after a revocation (0: it is not): the bias's clock in
    // ticks of 2^10 time-stamp-counter cycles on x86-64 (0.3 to 0.5 us; elsewhere 2^10 ns),
    // modulo 2^16, compared as a signed difference; an inhibition lasts at most 4,095 ticks,
    // 1 to 2 ms (shared_mutex.cpp).
    internal::atomic<std::uint16_t> bias_until_{0};
};

static_assert(sizeof(shared_mutex) == 8);

}  // namespace contend
