// contend::thin_lock: a recursive lock in one 32-bit word, embeddable in any object header,
// that inflates to a fat lock (a contend::mutex with an owner, a recursion count and a
// condition variable, kept in a process-wide sync table) when it needs more than the word.
//
// The word:
//   +-----------+---------------------------+--------------------------------------------+
//   | bit 31    | bits 16..21               | bits 0..15                                 |
//   +-----------+---------------------------+--------------------------------------------+
//   | 0 (thin)  | recursion: extra entries  | owner's compact thread id; 0 = free        |
//   |           | by the owner, 0..63       | (the whole word is 0 when free); 0xFFFF:   |
//   |           |                           | a thread whose id does not fit, inflating  |
//   | 1 (fat)   | bits 0..30: index of the fat lock in the sync table                    |
//   +-----------+------------------------------------------------------------------------+
//
// Who writes the word: a free word (0) is taken by one CAS. A held thin word is written only
// by its owner (re-entry, exit, inflation); other threads never change it. That is what
// lets the owner exit with a plain store, as contend::mutex does: waiters do not mark the
// word, they register in a waiter slot (internal/waiter_slots.hpp) and park in the
// parking lot on the word's address, and the exit checks the registry after its store.
//
// Inflation, always by the thread that holds the lock:
//   - recursion past 63 extra entries;
//   - wait() / wait_for() / notify_*() (they need the fat lock's condition variable);
//   - contention: a thread that had to park for a thin lock inflates it once it gets it,
//     so later contention is handled by contend::mutex (a designee, FIFO sleepers) rather
//     than by parking on the word.
// Deflation: a fat lock that no thread acquires for a whole sweep interval (100 ms by
// default, thin_lock::set_deflation_interval), and that nobody holds or waits on, is turned
// back into a thin one by a background sweep, without stopping any thread (src/thin_lock.cpp
// says how a thread entering at that moment stays safe); thin_lock::stats().deflations counts
// them. Destroying the thin_lock returns its fat lock, if it has one, to the sync table.
// So, as for any lock, its destructor must run before its memory is reused or unmapped (an
// arena dropped without destructors): while it is inflated, the sweeps hold its address.
//
// Costs: thin, lock() is a load and a CAS and unlock() a release store and two loads of a
// read-mostly waiter slot, each plus a plain add to a per-thread count of locks held
// (internal/thread_id.hpp: a thread that exits holding the lock abandons it, and its id is
// never reused, so no later thread passes for the owner). Inflated, both go through the fat lock's contend::mutex after
// finding it by the index in the word, and set or check the owner: about 1.1x a bare
// contend::mutex uncontended (docs/design/thin_lock.md has the measurements and the layouts
// tried for the inflated path).
//
// Thread ids past 16 bits. Compact ids 1 to 0xFFFE fit the owner field; a process with more
// live threads gives the rest larger ids (internal/thread_id.hpp), and such a thread never
// holds the lock thin: it takes a free word under the placeholder owner 0xFFFF (wide_owner)
// and inflates at once, before lock() returns, so the fat lock records its whole id. Other
// threads see an owner that is not theirs and wait as for any holder. CoreCLR's header lock
// sends a thread id wider than its field to the sync block the same way (docs/references.md,
// coreclr-syncblk-thread-id). The thin paths pay nothing for it: they read the id from a
// per-thread copy that is 0 until the thread's first call and stays 0 for a wide id, and the
// test for 0 that always sent a first call to the slow paths sends a wide id there too.
// Such a thread's lock(), try_lock() and try_lock_for() may throw std::bad_alloc (no fat lock),
// and then do not hold the lock. A thread whose id fits sees bad_alloc only past 63 thin
// re-entries or in wait(), still holding the lock as before the call; a contended lock()
// that cannot inflate keeps the lock thin instead of throwing.
//
// try_lock() is one shot: one CAS (or a re-entry, or one attempt on the fat lock); it never
// spins or parks, so it costs about the same whether the lock is free or held. The only
// inflation it can cause is a re-entry past 63 by the owner, exactly as lock() would.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/fat_lock.hpp"
#include "contend/internal/prefetch.hpp"
#include "contend/internal/thread_id.hpp"
#include "contend/internal/waiter_slots.hpp"

namespace contend {

class thin_lock;

namespace internal {
// Tests only: sets the calling thread's extra entries (re-entries) of `l` to `extra`, so that
// a test reaches a depth of billions without as many calls. The thread must hold `l`
// inflated (past 63 re-entries it is); false, changing nothing, otherwise. The count of locks
// held (thread_id.hpp) is not changed: the test unwinds to its own depth before it unlocks.
bool set_thin_lock_reentries_for_testing(thin_lock& l, std::uint64_t extra);
}  // namespace internal

struct thin_lock_stats {
    std::uint64_t inflations = 0;  // thin_locks inflated to fat locks, ever
    std::uint64_t deflations = 0;  // idle fat locks turned back into thin ones, ever (not destructions)
    std::size_t live_fat_locks = 0;  // sync-table entries in use
};

class thin_lock {
public:
    constexpr thin_lock() noexcept = default;
    ~thin_lock();
    thin_lock(const thin_lock&) = delete;
    thin_lock& operator=(const thin_lock&) = delete;

    // A load before the CAS: an inflated or held word then costs no failing locked
    // instruction (a failed CAS still takes the line exclusive). No prefetch for write here,
    // unlike contend::mutex: an inflated word is read-only and shared by every thread that
    // enters, and asking for it exclusive on every entry made it bounce between cores
    // (docs/design/thin_lock.md).
    void lock() {
        const std::uint32_t me = word_owner_id;
        if (me == 0) [[unlikely]] {
            (void)lock_with_new_or_wide_id(internal::no_deadline);
            ++internal::locks_held;
            return;
        }
        std::uint32_t expected = word_.load(std::memory_order_relaxed);
        if (expected == 0) {
            if (word_.compare_exchange_strong(expected, me, std::memory_order_acquire, std::memory_order_relaxed))
                [[likely]] {
                remember_taken_free();
                return;
            }
        } else if ((expected & inflated_bit) && try_lock_fat(expected, me)) {
            ++internal::locks_held;
            return;
        }
        lock_slow(me, expected, internal::no_deadline);
        ++internal::locks_held;
    }

    // One shot: never spins or parks; a lock held by another thread costs a load and is never
    // inflated by it (the owner re-entering past 63 inflates, as in lock()).
    bool try_lock() {
        const std::uint32_t me = word_owner_id;
        if (me == 0) [[unlikely]]
            return counted(try_lock_with_new_or_wide_id());
        std::uint32_t expected = word_.load(std::memory_order_relaxed);
        if (expected == 0 && word_.compare_exchange_strong(expected, me, std::memory_order_acquire,
                                                           std::memory_order_relaxed)) [[likely]] {
            remember_taken_free();
            return true;
        }
        return counted(try_lock_slow(me, expected));
    }

    // Spins briefly, then parks until the deadline. Returns whether it acquired the lock.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return try_lock() || counted(lock_with_new_or_wide_id(internal::deadline_after(d)));
    }

    // Throws synchronization_error if the calling thread does not hold the lock.
    void unlock() {
        const std::uint32_t me = word_owner_id;
        if (me == 0) [[unlikely]] {  // no id yet, or a wide one (which may look like a thin word)
            unlock_slow(internal::compact_thread_id());
            --internal::locks_held;
            return;
        }
        // This thread took the word free with its own CAS and has not written it since, so
        // the word is exactly `me`: no need to read back the word that CAS just wrote
        // (docs/design/unlock.md).
        if (internal::thin_taken_free == this) [[likely]] {
            internal::thin_taken_free = nullptr;
            if (release_thin_fast()) [[likely]]
                return;  // it was held uncounted
            ++internal::locks_held;  // counted from here, as the paths below expect
        }
        const std::uint32_t w = word_.load(std::memory_order_relaxed);
        if (w == me) [[likely]] {
            if (release_thin_fast()) [[likely]] {
                --internal::locks_held;
                return;
            }
        } else if (w & inflated_bit) {
            // Inflated, held by us at depth 0: clear the owner and release the fat mutex.
            internal::fat_lock& f = internal::fat_lock_at(w & ~inflated_bit);
            if (f.owner.load(std::memory_order_relaxed) == me && f.recursion == 0) [[likely]] {
                f.owner.store(0, std::memory_order_relaxed);
                f.m.unlock_with(*f.slot);
                --internal::locks_held;
                return;
            }
        }
        unlock_slow(me);  // throws, changing nothing, unless this thread holds the lock
        --internal::locks_held;
    }

    bool is_held_by_current_thread() const;

    // Monitor.Wait / Pulse: the caller must hold the lock (else synchronization_error).
    // wait() releases every recursion level and restores them before it returns.
    void wait();
    // Returns false on timeout; the lock is held again, at the same depth, either way.
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period>& d) {
        return wait_until_internal(internal::deadline_after(d));
    }
    void notify_one();
    void notify_all();

    // Diagnostics: whether the word holds a sync-table index.
    bool is_inflated() const noexcept { return (word_.load(std::memory_order_relaxed) & inflated_bit) != 0; }

    // Deflation, for every thin_lock of the process. A background thread, started by the
    // first inflation, sweeps the fat locks every interval: a sweep marks each unowned one
    // idle and deflates those the previous sweep marked that no thread has acquired since,
    // that nobody holds and nobody waits on. So a lock is thin again after one to two
    // intervals of disuse. Zero stops the background sweeps (a lock then stays fat until a
    // sweep is asked for or the thin_lock is destroyed). Default 100 ms; longer than 24 hours
    // counts as 24 hours.
    static void set_deflation_interval(std::chrono::milliseconds interval);
    static std::chrono::milliseconds deflation_interval();
    // One sweep now, on the calling thread; returns how many locks it deflated. Two calls
    // with no acquisition of a lock between them deflate it.
    static std::size_t deflate_idle_locks();
    static thin_lock_stats stats();

    static constexpr std::uint32_t inflated_bit = 0x8000'0000u;
    static constexpr std::uint32_t owner_mask = 0x0000'FFFFu;
    static constexpr std::uint32_t recursion_unit = 0x0001'0000u;
    static constexpr std::uint32_t recursion_mask = 0x003F'0000u;
    static constexpr std::uint32_t max_thin_recursion = recursion_mask / recursion_unit;  // 63
    // The owner field of a word taken by a thread whose id does not fit (ids 1..0xFFFE do).
    static constexpr std::uint32_t wide_owner = owner_mask;
    static_assert(wide_owner == internal::max_compact_thread_id + 1, "ids below wide_owner fit the owner field");

private:
    friend bool internal::set_thin_lock_reentries_for_testing(thin_lock& l, std::uint64_t extra);
    // The calling thread's compact id if it fits the owner field, else 0: not asked for yet,
    // or too wide. The inline paths test it for 0 and send both cases to the slow paths,
    // which take the id with compact_thread_id(); a wide id is never stored here, so such a
    // thread always goes that way.
    static inline thread_local std::uint32_t word_owner_id = 0;
    // taken_free (internal::thin_taken_free): the thin lock this thread last took free by an
    // inline CAS (word 0 -> its id), while the word still is exactly that id. Every other
    // write of a held word is made by its owner in src/thin_lock.cpp (re-entry, exit from a
    // re-entry, inflation), and each of those forgets the lock first (forget_taken_free), so
    // unlock() may trust it without a load. It is also the one entry not in
    // internal::locks_held: forgetting it while it is held counts it there, and so does a
    // later free take that puts another lock in its place.
    void remember_taken_free() const noexcept {
        if (internal::thin_taken_free != nullptr) ++internal::locks_held;  // the one it replaces
        internal::thin_taken_free = this;
    }
    void forget_taken_free() const noexcept {
        if (internal::thin_taken_free == this) {
            internal::thin_taken_free = nullptr;
            ++internal::locks_held;  // still held (the caller holds it, or destroys it held)
        }
    }
    // Every entry that succeeds is counted in internal::locks_held, every exit uncounts one:
    // a thread that exits holding the lock keeps its id from the next thread (thread_id.hpp).
    static bool counted(bool acquired) noexcept {
        if (acquired) ++internal::locks_held;
        return acquired;
    }

    // The word is exactly this thread's id: release it with a plain store when no waiter is
    // registered (false, word untouched, otherwise).
    bool release_thin_fast() noexcept {
        const internal::atomic<std::uint32_t>& slot = internal::waiter_slot_for(this);
        if (slot.load(std::memory_order_relaxed) != internal::waiter_slot_light) return false;
        word_.store(0, std::memory_order_release);
        // As in contend::mutex: the registering waiter's heavy barrier orders the hardware;
        // only the compiler must keep the load below the store.
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (slot.load(std::memory_order_relaxed) != internal::waiter_slot_light) [[unlikely]]
            wake_after_release();
        return true;
    }

    // An inflated lock, free: its fat mutex at once, then a check that the word still names
    // it (a sweep may have deflated it since the word was read; src/thin_lock.cpp). The
    // fat lock's recursion is 0 whenever it is free, so only the owner is stored.
    bool try_lock_fat(std::uint32_t w, std::uint32_t me) {
        internal::fat_lock& f = internal::fat_lock_at(w & ~inflated_bit);
        internal::prefetch_for_write(&f.m);  // the fat mutex's line is written, as contend::mutex's
        if (!f.m.try_lock()) return false;
        if (word_.load(std::memory_order_relaxed) != w) [[unlikely]] {
            f.m.unlock();
            return false;
        }
        f.owner.store(me, std::memory_order_relaxed);
        return true;
    }

    bool lock_with_new_or_wide_id(internal::deadline until);
    bool try_lock_with_new_or_wide_id();
    static std::uint32_t new_or_wide_id() noexcept;
    bool take_free(std::uint32_t& seen, std::uint32_t me);
    void release_thin_word() noexcept;
    bool lock_slow(std::uint32_t me, std::uint32_t seen, internal::deadline until);
    bool try_lock_slow(std::uint32_t me, std::uint32_t seen);
    void unlock_slow(std::uint32_t me);
    void wake_after_release() noexcept;
    bool wait_until_internal(internal::deadline until);
    std::uint32_t inflate_held(std::uint32_t me);

    internal::atomic<std::uint32_t> word_{0};
};

static_assert(sizeof(thin_lock) == 4, "a thin lock is one 32-bit header word");

}  // namespace contend
