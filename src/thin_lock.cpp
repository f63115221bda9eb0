// contend::thin_lock slow paths: re-entry, waiting, inflation, the fat lock. The word and
// who may write it are described in thin_lock.hpp.
//
// Deflation. A lock that had to inflate was contended, recursed past 63 or waited on; the
// same is often likely again, but not always (an object contended during start-up, then
// used by one thread for the rest of its life). The sync table's sweeps (src/sync_table.hpp)
// deflate a fat lock that nobody has acquired for a whole sweep interval, without stopping
// any thread: a thread that read the fat word before the deflation and then takes the
// entry's mutex checks, under that mutex, that the word still names the entry
// (fat_enter), and starts over if not. The check is one load of a line the thread has just
// read. CoreCLR deflates only while every thread is stopped for a GC; HotSpot deflates
// idle monitors from a thread of its own, as here (docs/references.md).
#include "contend/thin_lock.hpp"

#include <sched.h>

#include <new>
#include <optional>

#include "contend/internal/atomic.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "model/mutation.hpp"
#include "parking_keys.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"
#include "sync_table.hpp"
#include "waiter_registry.hpp"

namespace contend {
namespace {

using internal::fat_lock;

// Read-only probes before a contended lock() parks: the mutex's short spin (2 rounds of
// 2 and 4 pauses) is tuned for a lock whose waiters have a designee; a thin lock's waiters
// park on the word, so it spins a little longer: 8 probes, as the sleeping lock of the
// sleeping-spinlock study (docs/references.md) makes before it sleeps, with doubling pauses
// (1 to 128 pause lengths of 23 ns, the length the mutex's rounds were tuned with: about
// 6 us in all): long enough to cover a critical section of a few hundred instructions, short against
// a futex round trip. In time, derived from the pause measured here (platform/spin_wait.hpp),
// and the last three probes yield instead of pausing, so that a holder preempted on this
// CPU runs instead of the prober (docs/design/polling.md).
constexpr int spin_probes = 8;
constexpr int pausing_probes = 5;
constexpr std::chrono::nanoseconds probe_unit{23};

bool is_fat(std::uint32_t w) noexcept { return (w & thin_lock::inflated_bit) != 0; }
std::uint32_t index_of(std::uint32_t w) noexcept { return w & ~thin_lock::inflated_bit; }
std::uint32_t owner_of(std::uint32_t w) noexcept { return w & thin_lock::owner_mask; }
// Whether thread `me` holds the thin word `w`: never for a wide id (placeholder owner).
bool holds_thin(std::uint32_t w, std::uint32_t me) noexcept {
    return w != 0 && me < thin_lock::wide_owner && owner_of(w) == me;
}
std::uint32_t depth_of(std::uint32_t w) noexcept { return (w & thin_lock::recursion_mask) / thin_lock::recursion_unit; }

enum class entry { acquired, failed, stale };

// Takes the fat lock that `w`, a fat word read from `word`, names: at once (`one_shot`), or
// waiting until the deadline. `stale`: a sweep deflated the lock after `w` was read (the
// entry may even serve another lock now); the caller reads the word again.
entry fat_enter(const internal::atomic<std::uint32_t>& word, std::uint32_t w, std::uint32_t me,
                internal::deadline until, bool one_shot) {
    fat_lock& f = internal::sync_table_at(index_of(w));
    // Our own id in the owner field means we hold this entry, so it is still this lock's:
    // a held entry is never deflated, and we cannot have taken another lock since reading w.
    if (f.owner.load(std::memory_order_relaxed) == me) {
        ++f.recursion;
        return entry::acquired;
    }
    // try_lock_until, not lock(), even without a deadline: lock()'s prefetch for write would
    // take the line from the holder a second time, after try_lock_fat's (the counter
    // suite at 64 workers).
    if (one_shot ? !f.m.try_lock() : !f.m.try_lock_until(until)) return entry::failed;
    // A sweep stores the thin word under this mutex, before releasing it: holding the mutex,
    // we see that store if it happened.
    if (word.load(std::memory_order_relaxed) != w && !CONTEND_MUTATION(thin_lock_enter_misses_deflation)) [[unlikely]] {
        f.m.unlock();
        return entry::stale;
    }
    f.owner.store(me, std::memory_order_relaxed);  // recursion is 0 whenever the lock is free
    return entry::acquired;
}

[[noreturn]] void not_held(const char* what) {
    throw synchronization_error(std::string("contend::thin_lock::") + what +
                                ": the calling thread does not hold the lock");
}

}  // namespace

bool internal::set_thin_lock_reentries_for_testing(thin_lock& l, std::uint64_t extra) {
    const std::uint32_t w = l.word_.load(std::memory_order_relaxed);
    if (!is_fat(w)) return false;
    fat_lock& f = internal::sync_table_at(index_of(w));
    if (f.owner.load(std::memory_order_relaxed) != internal::compact_thread_id()) return false;
    f.recursion = extra;
    return true;
}

thin_lock::~thin_lock() {
    // A lock destroyed while this thread still remembers taking it free (destroyed held, a
    // misuse) must not let a lock built later at this address be released without a check.
    forget_taken_free();
    // Acquire: a sweep that deflated this lock wrote the word last; its write must come
    // before the memory is freed (a thin word here means no sweep will touch it again).
    if (is_fat(word_.load(std::memory_order_acquire))) internal::sync_table_release(word_);
}

// The inline paths' way in for a thread without an id yet, or with one too wide for the
// word. The id first, then the word, in that order: ids are reused, and a word read before
// the thread got its id may show the id of a holder that has since exited and handed the
// id on to this thread, which would then take itself for the owner (and "re-enter" a lock
// it never took). Read after, the word cannot show this thread's id unless it holds the lock:
// the holder's last store to it came before it gave the id back, under the id pool's lock.
bool thin_lock::lock_with_new_or_wide_id(internal::deadline until) {
    if (CONTEND_MUTATION(thin_lock_word_read_before_id)) {  // the order the comment above forbids
        const std::uint32_t seen = word_.load(std::memory_order_relaxed);
        return lock_slow(new_or_wide_id(), seen, until);
    }
    const std::uint32_t me = new_or_wide_id();
    return lock_slow(me, word_.load(std::memory_order_relaxed), until);
}

bool thin_lock::try_lock_with_new_or_wide_id() {
    const std::uint32_t me = new_or_wide_id();
    return try_lock_slow(me, word_.load(std::memory_order_relaxed));
}

std::uint32_t thin_lock::new_or_wide_id() noexcept {
    const std::uint32_t me = internal::compact_thread_id();
    if (me < wide_owner) word_owner_id = me;
    return me;
}

// One attempt at a free word (`seen` is 0); on failure `seen` is the word now. A thread whose
// id does not fit the owner field takes the word under the placeholder owner and inflates it
// at once (thin_lock.hpp); if that fails it lets the word go, waking a waiter, and throws.
bool thin_lock::take_free(std::uint32_t& seen, std::uint32_t me) {
    if (me < wide_owner) [[likely]]
        return word_.compare_exchange_strong(seen, me, std::memory_order_acquire, std::memory_order_relaxed);
    if (!word_.compare_exchange_strong(seen, wide_owner, std::memory_order_acquire, std::memory_order_relaxed))
        return false;
    try {
        inflate_held(me);
    } catch (...) {
        release_thin_word();
        throw;
    }
    return true;
}

// Releases a thin word held at depth 0 when waiters may be registered: the fenced half of the
// handshake with a waiter about to park (the inline unlock's fast path is the other half).
void thin_lock::release_thin_word() noexcept {
    const std::size_t slot_index = internal::waiter_slot_index(this);
    word_.exchange(0, std::memory_order_seq_cst);
    if (internal::slot_has_waiters(slot_index)) wake_after_release();
    else internal::note_idle_unlock(slot_index);
}

// The caller holds the thin lock. Moves its state (owner, depth) into a new fat lock whose
// mutex it holds, publishes the index, and sends threads parked on the word to the fat lock.
std::uint32_t thin_lock::inflate_held(std::uint32_t me) {
    forget_taken_free();  // this call may write the word (thin_lock.hpp, taken_free)
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    const std::uint32_t index = internal::sync_table_allocate(&word_, me);  // its mutex held, owner me
    internal::sync_table_at(index).recursion = depth_of(w);
    // Only the owner writes a held thin word, so a store cannot lose anyone's update.
    word_.store(inflated_bit | index, std::memory_order_release);
    // A parked thread re-reads the word when woken; one about to park validates the word
    // under the bucket lock, which this takes, so it either sees the index or is woken.
    parking_lot::unpark_all(internal::thin_lock_key(&word_));
    return index;
}

bool thin_lock::lock_slow(std::uint32_t me, std::uint32_t seen, internal::deadline until) {
    forget_taken_free();  // this call may write the word (thin_lock.hpp, taken_free)
    for (int probe = 0;; ++probe) {
        if (seen == 0) {
            if (take_free(seen, me)) return true;
            continue;
        }
        if (is_fat(seen)) {
            const entry e = fat_enter(word_, seen, me, until, false);
            if (e != entry::stale) return e == entry::acquired;
            seen = word_.load(std::memory_order_relaxed);
            continue;
        }
        if (holds_thin(seen, me)) {
            if (depth_of(seen) < max_thin_recursion) {
                word_.store(seen + recursion_unit, std::memory_order_relaxed);
            } else {
                ++internal::sync_table_at(inflate_held(me)).recursion;  // the 64th extra entry
            }
            return true;
        }
        if (probe >= spin_probes) break;
        if (probe < pausing_probes) internal::relax_for(probe_unit * (1 << probe));
        else internal::yield_cpu();
        seen = word_.load(std::memory_order_relaxed);
    }

    // Held by another thread past the spin: park on the word until it is released (the
    // owner's exit finds us in the waiter registry), then take it and inflate it, so that
    // further contention is the fat mutex's business.
    std::optional<internal::waiter_registration> registration;
    bool parked = false;
    for (;;) {
        if (!registration) registration.emplace(internal::waiter_slot_index(this));
        seen = word_.load(std::memory_order_relaxed);
        if (seen == 0) {
            if (take_free(seen, me)) {
                registration.reset();
                // Best effort: the lock is ours either way, and a lock left thin only parks
                // its next waiters on the word again. Throwing here would leave the caller
                // holding a lock that its lock() call reported as not taken.
                if (parked && !is_fat(word_.load(std::memory_order_relaxed))) {
                    try {
                        inflate_held(me);
                    } catch (const std::bad_alloc&) {
                    }
                }
                return true;
            }
            continue;
        }
        if (is_fat(seen)) {
            registration.reset();  // not a sleeper of the word any more
            const entry e = fat_enter(word_, seen, me, until, false);
            if (e != entry::stale) return e == entry::acquired;
            continue;  // deflated meanwhile: thin again
        }
        if (until != internal::no_deadline && internal::clock::now() >= until) return false;
        parking_lot::park(
            internal::thin_lock_key(&word_),
            [this] {
                const std::uint32_t w = word_.load(std::memory_order_seq_cst);
                return w != 0 && !is_fat(w);
            },
            until);
        parked = true;
    }
}

bool thin_lock::try_lock_slow(std::uint32_t me, std::uint32_t seen) {
    forget_taken_free();  // this call may write the word (thin_lock.hpp, taken_free)
    while (is_fat(seen)) {
        const entry e = fat_enter(word_, seen, me, internal::no_deadline, true);
        if (e != entry::stale) return e == entry::acquired;
        // Deflated meanwhile: one shot at the thin word instead.
        seen = word_.load(std::memory_order_relaxed);
        if (seen == 0) return take_free(seen, me);
    }
    if (seen == 0) return take_free(seen, me);  // a wide id or a first call: not tried inline
    if (holds_thin(seen, me)) {
        // Re-entry is not contention: past the thin count it inflates, as lock() does.
        if (depth_of(seen) < max_thin_recursion) word_.store(seen + recursion_unit, std::memory_order_relaxed);
        else ++internal::sync_table_at(inflate_held(me)).recursion;
        return true;
    }
    return false;  // held by another thread: one shot, no spin, no inflation
}

void thin_lock::unlock_slow(std::uint32_t me) {
    forget_taken_free();  // this call may write the word (thin_lock.hpp, taken_free)
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    if (is_fat(w)) {
        fat_lock& f = internal::sync_table_at(index_of(w));
        if (f.owner.load(std::memory_order_relaxed) != me) not_held("unlock");
        if (f.recursion > 0) {
            --f.recursion;
            return;
        }
        f.owner.store(0, std::memory_order_relaxed);
        f.m.unlock();
        return;
    }
    if (!holds_thin(w, me)) not_held("unlock");
    if (depth_of(w) > 0) {
        word_.store(w - recursion_unit, std::memory_order_relaxed);
        return;
    }
    release_thin_word();  // depth 0 and the registry slot is not quiet
}

void thin_lock::wake_after_release() noexcept { parking_lot::unpark_one(internal::thin_lock_key(&word_)); }

bool thin_lock::is_held_by_current_thread() const {
    const std::uint32_t me = internal::compact_thread_id();
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    if (is_fat(w)) return internal::sync_table_at(index_of(w)).owner.load(std::memory_order_relaxed) == me;
    return holds_thin(w, me);
}

void thin_lock::wait() { (void)wait_until_internal(internal::no_deadline); }

bool thin_lock::wait_until_internal(internal::deadline until) {
    const std::uint32_t me = internal::compact_thread_id();
    if (!is_held_by_current_thread()) not_held("wait");
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    fat_lock& f = internal::sync_table_at(is_fat(w) ? index_of(w) : inflate_held(me));
    const std::uint64_t depth = f.recursion;
    f.recursion = 0;
    f.owner.store(0, std::memory_order_relaxed);
    ++f.waiters;  // under f.m: no sweep deflates a lock with a thread in wait()
    bool notified = true;
    if (until == internal::no_deadline) f.cv.wait(f.m);
    else notified = f.cv.wait_until(f.m, until) == std::cv_status::no_timeout;
    --f.waiters;
    f.owner.store(me, std::memory_order_relaxed);
    f.recursion = depth;
    return notified;
}

void thin_lock::notify_one() {
    if (!is_held_by_current_thread()) not_held("notify_one");
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    if (is_fat(w)) internal::sync_table_at(index_of(w)).cv.notify_one();  // thin: nobody waits
}

void thin_lock::notify_all() {
    if (!is_held_by_current_thread()) not_held("notify_all");
    const std::uint32_t w = word_.load(std::memory_order_relaxed);
    if (is_fat(w)) internal::sync_table_at(index_of(w)).cv.notify_all();
}

void thin_lock::set_deflation_interval(std::chrono::milliseconds interval) {
    internal::sync_table_set_sweep_interval(interval);
}
std::chrono::milliseconds thin_lock::deflation_interval() { return internal::sync_table_sweep_interval(); }
std::size_t thin_lock::deflate_idle_locks() { return internal::sync_table_sweep(); }

thin_lock_stats thin_lock::stats() {
    const auto table = internal::sync_table_stats();
    thin_lock_stats st;
    st.inflations = table.inflations;
    st.deflations = table.deflations;
    st.live_fat_locks = table.live;
    return st;
}

}  // namespace contend
