// contend::mutex slow paths. The fast paths and the state table are in mutex.hpp.
//
// Waiters queue in the parking lot under three keys derived from the mutex's address
// (src/parking_keys.hpp):
//   untimed   lock() callers, FIFO; the head is promoted to designee when the mutex is
//             released with no designee about
//   timed     try_lock_for/until callers; they are only ever handed the mutex directly
//   designee  the one thread (occasionally two, after a race) that stays awake in turns:
//             it probes, naps about 100 us on this key, probes again, and after 1 ms asks
//             for the mutex to be handed to it
//
// WAKING (state bit) says "a designee exists". While it is set, an unlock is a plain store:
// the designee retries by itself, so nobody needs waking and the holder keeps running at
// uncontended speed while every other waiter sleeps (what makes the sleeping lock of the
// sleeping-spinlock study fast, without its 64-way polling; see docs/references.md,
// sleeping-spinlock-study).
//
// The invariant that makes that plain store safe: WAKING is cleared only by a thread that
// takes the mutex from free (in the acquiring CAS) or that holds it. So while the mutex is
// held, no other thread clears WAKING, and a blind store of "WAKING" cannot bring back a
// bit that someone else had cleared. Others may set bits while it is held; a set that a
// blind store overwrites is either redundant (WAKING) or retried by its owner at its next
// nap (HANDOFF_REQUEST). Designees have no deadline, so a designee never leaves without
// taking the mutex: WAKING is never left set with nobody behind it.
//
// Fairness: every designee gets the mutex within about 1 ms of becoming one (its handoff
// request), and designees are drawn FIFO from the untimed queue, so each waiter waits at
// most about 1 ms per waiter ahead of it. When no designee exists, an unlock that wakes a
// thread hands the mutex over directly whenever the parking lot's per-bucket deadline
// (0 to 1 ms) says it is time to be fair; timed waiters are handed the mutex whenever no
// untimed waiter is queued, and before the designee when it asks.
//
// Sparse locks: the designee's nap and the queue behind it suit a hammered mutex, where the
// holder takes it back at once. On a mutex held briefly between long stretches of other work
// (RocksDB's DB mutex in db_bench: held ~0.3 us, 2 to 3 % of acquisitions contended) they
// left the mutex free while its waiters slept out their naps and queues, and CPUs idle. So
// the waiters judge which kind of mutex it is, per waiter slot (mutex_sparse_hints): a
// designee waking from a nap (or woken) that finds it free, and still free sparse_step later,
// counts one, and two such findings in a row mark the slot sparse; one that finds it held
// clears the mark, and so does a queued waiter woken to retry, or a poll (poll_sparse), that
// finds it held. While the mark is set, an unlock that leaves WAKING for the designee
// also wakes the napping designee, or else one queued waiter to retry (glibc's wake per
// unlock). A wrong mark costs a wasted wake-up and is corrected by the woken thread itself;
// the wakes change no state bit, so they cannot break exclusion or lose a waiter.
//
// Crowds: with at least two waiters per CPU, new waiters stay runnable and yield instead
// of parking (mutex::yield_while_crowded says why); they never touch the state bits.
//
// Why a release store cannot slip past a thread about to park: see waiter_registry.cpp.
#include "contend/mutex.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/tsan.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "designee_nap.hpp"
#include "model/mutation.hpp"
#include "parking_keys.hpp"
#include "platform/first_use.hpp"
#include "platform/fork_child.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"
#include "waiter_registry.hpp"

namespace contend {

namespace internal {
std::atomic<std::uint8_t> mutex_sparse_hints[waiter_slot_count]{};
}  // namespace internal

namespace {
// Helgrind takes the hints' relaxed loads and plain stores for unordered plain accesses:
// advice that orders nothing, left unchecked (contend/internal/tsan.hpp). Without this the
// interposer's helgrind test reported a race on them.
[[maybe_unused]] const bool sparse_hints_unchecked =
    (internal::helgrind_unchecked(internal::mutex_sparse_hints, sizeof internal::mutex_sparse_hints), true);
}  // namespace

namespace {

using internal::mutex_designee_key;
using internal::mutex_timed_key;
using internal::mutex_untimed_key;

constexpr std::intptr_t handoff_token = 1;  // you own the mutex
constexpr std::intptr_t designee_token = 2;  // the mutex is free or busy; you are the designee

internal::atomic<std::uint32_t> spin_rounds{mutex::default_spin_limit};

// Rounds of spin per adaptive level (mutex.hpp), and how often a thread spins anyway at
// level 0 (one contended lock() in trial_period, per thread) to learn whether it pays again.
constexpr std::uint32_t level_rounds[4] = {0, 2, 4, 10};
constexpr std::uint32_t trial_rounds = 2;
constexpr std::uint32_t trial_period = 16;
// No spin outlasts a park and wake, one way (a futex ping-pong between two threads:
// docs/design/mutex.md, "The spin limit"). Only yielding rounds can get near it, and they
// check the clock.
constexpr auto max_spin = std::chrono::microseconds(16);

// The adaptive levels, one per waiter slot: a lock's byte has no room for one that its
// holder could keep storing back with a plain store at no cost (the level in the byte made
// the inflated thin_lock's unlock, which releases a contend::mutex, 3 % slower in the counter
// suite). Relaxed: a level is advice, and a lost update only delays it. Unpadded (4 KiB),
// and written only when a level changes, so the array stays read-mostly.
internal::atomic<std::uint8_t> spin_levels[internal::waiter_slot_count];

// A success while spinning raises the level only one time in raise_period (per thread),
// and a spin in vain drops it to 0: on the 2-CPU reference VM a waiter that wins while
// spinning has mostly taken the mutex from a holder that was about to re-take it, which
// trades places without saving a park (the counter suite: 0 rounds beat 2, 4 and 10, and
// raising on every success climbed to 10), so the level climbs only where spins almost
// never fail.
constexpr std::uint32_t raise_period = 8;
void spun_and_won(std::size_t slot_index) noexcept {
    thread_local std::uint32_t successes = 0;
    if (++successes % raise_period != 0) return;
    auto& level = spin_levels[slot_index];
    const std::uint8_t l = level.load(std::memory_order_relaxed);
    if (l < 3) level.store(static_cast<std::uint8_t>(l + 1), std::memory_order_relaxed);
}
void spun_in_vain(std::size_t slot_index) noexcept {
    auto& level = spin_levels[slot_index];
    if (level.load(std::memory_order_relaxed) != 0) level.store(0, std::memory_order_relaxed);
}

// What a waiter that has just woken found: the mutex free (it may be sparse) or held
// (hammered). Two findings of "free" in a row mark the slot sparse (mutex.hpp's unlock wakes
// while the hint reads 2); one of "held" clears it. On a hammered mutex a waiter finds it
// free now and then, in the moment between a holder's release and its next acquisition:
// asking for two in a row keeps such chance findings from marking it. Written only when it
// changes, so the hint stays a read-mostly line for the unlocks.
void judge_sparse(std::size_t slot_index, bool found_free) noexcept {
    auto& hint = internal::mutex_sparse_hints[slot_index];
    const std::uint8_t now = hint.load(std::memory_order_relaxed);
    const std::uint8_t next =
        found_free ? static_cast<std::uint8_t>(now < internal::mutex_sparse ? now + 1 : internal::mutex_sparse) : 0;
    if (next != now) hint.store(next, std::memory_order_relaxed);
}

// How long a mutex must stay free for a waiter to take it as sparse: a holder that takes the
// mutex straight back does so within tens of nanoseconds (a CAS and a loop's turn: 5 to 13 ns
// a CAS on both VM families measured), and on a sparse mutex the gaps between holds last
// microseconds. A time, not a pause count: relax_for and spin_wait derive the pauses from the
// pause measured on this machine.
constexpr std::chrono::nanoseconds sparse_step{100};

// Whether a self-appointed designee watches the mutex before its first nap (wait_as_designee):
// not while this thread's CPU is shared (its last poll's yield gave the CPU away: more
// runnable threads than CPUs), where a watch holds a CPU another thread wants, the holder
// perhaps; but on one look in first_look_trial_period anyway, since only a poll's yield
// finds out that the CPU is free again.
constexpr std::uint32_t first_look_trial_period = 16;

// How long the watch must see the mutex free before it takes it, in reads a sparse_step
// apart: 1 us, a hundredth of the nap it saves. A thread that works through a table of locks
// with nothing between them (the striped suite) comes back to a lock it just released within
// a few of its turns; taking that lock after 100 ns free made two threads share 4 stripes,
// bouncing their lines, where one had run alone while the other napped (docs/design/mutex.md,
// "The designee's first look").
constexpr std::uint32_t first_look_free_reads = 11;

bool first_look_pays() noexcept {
    if (!internal::this_thread_cpu_shared()) return true;
    thread_local std::uint32_t skipped = 0;
    return ++skipped % first_look_trial_period == 0;
}

// A designee's nap and its patience before it asks for a handoff: src/designee_nap.hpp.
using internal::designee_nap;
using internal::designee_patience;
// Read-only probes after each nap, as in the sleeping-spinlock study's sleeping lock.
constexpr int designee_probes = 8;

// Heavy oversubscription: see mutex::yield_while_crowded.
constexpr std::uint32_t crowd_per_cpu = 2;
constexpr auto crowd_yield_budget = std::chrono::milliseconds(20);
// Threads inside yield_while_crowded, per waiter slot (a mutex hashes to one).
cache_padded<internal::atomic<std::uint32_t>> yielding[internal::waiter_slot_count];  // written by every crowded waiter

// fork(): the child has one thread, the forking one, which was not waiting for any mutex
// (the parking lot and the waiter registry reset their own state for the child). What the
// parent's waiters left in mutexes themselves the child cannot find: a mutex can carry
// WAKING (and HANDOFF_REQUEST) for a designee that does not exist there, and then nobody
// wakes the child's parked waiters, since an unlock leaves them to the designee. So in a
// child an untimed waiter that queues behind WAKING parks at most fork_child_designee_check
// and then becomes a designee itself (two at a time is allowed: a designee only ever takes
// the mutex), which clears the stale bits once it acquires. Set by the child handler while
// the child has one thread; its later threads see it through pthread_create.
bool in_fork_child = false;
constexpr auto fork_child_designee_check = std::chrono::milliseconds(10);
// Under helgrind these writes race by design with what the threads gone in the child did:
// left unchecked (contend/internal/tsan.hpp).
void reset_in_fork_child() noexcept {
    internal::helgrind_unchecked(&in_fork_child, sizeof in_fork_child);
    internal::helgrind_unchecked(yielding, sizeof yielding);
    in_fork_child = true;
    for (auto& y : yielding) y->store(0, std::memory_order_relaxed);  // those threads are not in the child
}
[[maybe_unused]] const bool fork_handler_registered = internal::at_fork_child(reset_in_fork_child);

// The CPUs this process may run on (taskset, cgroups' cpusets), read once; never behind a
// guard a forked child could find held (platform/first_use.hpp).
internal::first_use_value<std::uint32_t> crowd_threshold_value;
std::uint32_t crowd_threshold() noexcept {
    return crowd_threshold_value.get([] { return crowd_per_cpu * internal::allowed_cpu_count(); });
}

// Round r of a contended lock's spin: 2^(r+1) pause lengths for the first four rounds, then
// a yield per round, as in Rust parking_lot's SpinWait. A pause length is the 23 ns the
// rounds were tuned with (docs/design/mutex.md); the count of pauses is derived from the
// pause measured here (platform/spin_wait.hpp), so a round lasts as long on every CPU:
// 46, 92, 184 and 368 ns.
constexpr std::chrono::nanoseconds round_unit{46};
void spin_round(std::uint32_t round) noexcept {
    if (round < 4) {
        internal::relax_for(round_unit * (1u << round));
    } else {
        internal::yield_cpu();
    }
}

}  // namespace

namespace internal {
cache_padded<internal::atomic<std::uint64_t>> contention_counts[contention_stripes];
}  // namespace internal

void mutex::set_spin_limit(std::uint32_t rounds) noexcept { spin_rounds.store(rounds, std::memory_order_relaxed); }
std::uint32_t mutex::spin_limit() noexcept { return spin_rounds.load(std::memory_order_relaxed); }

std::uint64_t lock_contention_count() noexcept {
    std::uint64_t sum = 0;
    for (auto& stripe : internal::contention_counts) sum += stripe->load(std::memory_order_relaxed);
    return sum;
}

bool mutex::lock_slow(internal::deadline until) {
    internal::count_contention();
    const std::size_t slot_index = internal::waiter_slot_index(this);
    const auto& slot = internal::waiter_slots[slot_index];

    const std::uint32_t fixed = spin_rounds.load(std::memory_order_relaxed);
    const bool adaptive = fixed == adaptive_spin;
    std::uint32_t limit = fixed;
    if (adaptive) limit = adaptive_spin_limit(slot_index);
    internal::clock::time_point spin_start{};
    for (std::uint32_t round = 0;; ++round) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if (CONTEND_MUTATION(mutex_acquire_by_load_and_store) && !(s & held_bit)) {
            state_.store(static_cast<std::uint8_t>(s | held_bit),
                         std::memory_order_relaxed);  // not atomic with the load
            return true;
        }
        while (!(s & held_bit)) {
            if (state_.compare_exchange_weak(s, s | held_bit, std::memory_order_acquire, std::memory_order_relaxed)) {
                if (adaptive && round > 0) spun_and_won(slot_index);  // the next waiter may spin longer
                return true;
            }
        }
        // Threads already parked here means the wait is long: join them rather than burn
        // a core (WTF's rule: spin only while nobody is parked).
        if ((slot.load(std::memory_order_relaxed) & internal::waiter_slot_count_mask) != 0) break;
        if (round >= limit) {
            if (adaptive && limit > 0) spun_in_vain(slot_index);
            break;
        }
        if (round >= 4) {  // a yielding round: bounded by the clock too
            const auto now = internal::clock::now();
            if (round == 4) spin_start = now;
            else if (now - spin_start > max_spin) {
                if (adaptive) spun_in_vain(slot_index);
                break;
            }
        }
        spin_round(round);
    }
    if (internal::mutex_sparse_hints[slot_index].load(std::memory_order_relaxed) == internal::mutex_sparse &&
        poll_sparse(slot_index, until))
        return true;
    return lock_after_spin(until);
}

// How a waiter watches a held mutex before it sleeps (poll_for_release).
struct mutex::release_watch {
    std::chrono::nanoseconds budget;  // at most this long
    std::uint32_t free_reads;  // reads a step apart that must all find it free
    std::uint8_t clear;  // state bits the acquiring CAS clears
    bool leave_if_shared;  // give up once a yield finds this thread's CPU shared
};

// On a mutex marked sparse a holder lets go after a short hold and does not take it straight
// back, so a waiter polls for it before it registers and sleeps, for up to max_spin, and
// takes it once two reads a step apart find it free. A timed lock polls no further than its
// deadline. True holding the mutex.
bool mutex::poll_sparse(std::size_t slot_index, internal::deadline until) {
    std::chrono::nanoseconds budget = max_spin;
    if (until != internal::no_deadline) {
        // Compared first: a deadline as far back as deadline::min() less the clock overflows.
        const auto now = internal::clock::now();
        if (until <= now) return false;
        budget = std::min(budget, std::chrono::duration_cast<std::chrono::nanoseconds>(until - now));
    }
    return poll_for_release(slot_index, {budget, 2, 0, false});
}

// Watches a held mutex for up to the watch's budget: at most max_spin, what a park and wake
// cost one way on the AMD VM (16 to 19 us) and no less on the Intel ones
// (docs/design/condition_variable.md). Spinning as long as blocking would cost is at worst
// twice the better of the two (docs/references.md, competitive-spinning); where a wake-up
// costs B > max_spin, at worst 1 + B / max_spin. The poll yields the CPU between steps when
// another thread wants it (platform/spin_wait.hpp).
//
// It takes the mutex only when `free_reads` reads a step (sparse_step) apart all find it
// free, and a mutex found free and then held again is one whose holders take it straight
// back: a hammered mutex. Then the poll gives up at once, and clears the slot's sparse mark
// (a chance finding may have set it). Without that check the sparse poll kept the mark for
// ever on a hammered mutex (its waiters no longer napped, so none judged it again) and traded
// the mutex between the CPUs on every turn: the counter suite at 2 workers went from 0.19x
// pthread_mutex's time to 1.5x. True holding the mutex.
bool mutex::poll_for_release(std::size_t slot_index, const release_watch& watch) {
    internal::spin_wait poll(watch.budget, sparse_step);
    std::uint32_t free_reads = 0;
    for (;;) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if (!(s & held_bit)) {
            if (++free_reads >= watch.free_reads &&
                state_.compare_exchange_strong(s, static_cast<std::uint8_t>((s | held_bit) & ~watch.clear),
                                               std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        } else if (free_reads > 0) {
            judge_sparse(slot_index, false);
            return false;
        }
        if (!poll.pause()) return false;
        if (watch.leave_if_shared && internal::this_thread_cpu_shared()) return false;
    }
}

// A condition variable's waiter that its notifier moved onto this mutex's untimed queue
// (register_requeued_waiter) and that the queue has now let go of: unparked with the token
// of this mutex's unlock, or timed out (its wait's deadline) or unparked by nobody of ours.
// It waits on as any registered untimed waiter, with the registration made for it.
void mutex::lock_requeued(bool unparked, std::intptr_t token) {
    const internal::waiter_registration registration(internal::waiter_slot_index(this),
                                                     internal::waiter_registration::adopt_t{});
    if (unparked && token == handoff_token) return;  // the unlocker left it held for us
    if (unparked && token == designee_token) {
        wait_as_designee(false);
        return;
    }
    wait_registered(internal::no_deadline);
}

// For a condition variable's notify, under the bucket locks of its queue and of this
// mutex's untimed key: whether its waiter may move to this mutex's queue instead of waking.
// Only while the mutex is held (its unlock will then find the waiter), and only with the
// waiter counted in the registry first, exactly as the waiter itself counts in before it
// checks the byte under the bucket lock and sleeps (waiter_registry.cpp): the notifier acts
// for it. A mutex that is free is not worth a registration: the waiter is woken as before.
// Nor is one whose waiter slot would need the heavy barrier (a system call, tens of us) while
// two bucket locks are held: then *arm is set, the waiter is woken, and the notifier arms the
// slot after the locks are released (arm_waiter_slot), so that its next notify moves.
bool mutex::register_requeued_waiter(bool* arm) noexcept {
    if (!(state_.load(std::memory_order_relaxed) & held_bit)) return false;
    if (CONTEND_MUTATION(mutex_requeue_without_registering)) return true;  // an unlock can miss the waiter
    const std::size_t slot_index = internal::waiter_slot_index(this);
    if (!internal::register_waiter_if_armed(slot_index)) {
        *arm = true;
        return false;
    }
    if (state_.load(std::memory_order_seq_cst) & held_bit) return true;
    internal::unregister_waiter(slot_index);
    return false;
}

// Pays the barrier of register_requeued_waiter's slot with no lock held. Reads only the
// address (its hash), so the mutex may already be gone.
void mutex::arm_waiter_slot(const void* address) noexcept { internal::arm_slot(internal::waiter_slot_index(address)); }

// A requeued waiter that left this mutex's queue without a token to act on because its park
// threw (a cancellation, or a before_sleep that refused): the registration made for it.
void mutex::drop_requeued_registration() noexcept { internal::unregister_waiter(internal::waiter_slot_index(this)); }

// The adaptive budget of a contended lock(), from what waiting instead would cost:
//   - a crowd (as many waiters as yield_while_crowded needs) is served by yielding, which
//     is cheap, and a spin there only takes the line from the holder: no spin;
//   - a waiter slot at rest (exactly `light`) means parking would first pay a process-wide
//     barrier (tens of us, internal/waiter_slots.hpp): spin trial_rounds, no more: the
//     level is not consulted there, because on a hot lock with nobody asleep a spin wins
//     often, the level climbs, and longer spins only trade the lock back and forth (with
//     the level as a floor, the counter suite at 2 workers took 5.3 to 7.1 ns against 5.2
//     to 5.3 for 2 fixed rounds in five interleaved runs; the cost: 64 stripes at 64
//     workers, where the longer spins paid, went from within 5 % of 2 fixed rounds to 1.3x);
//   - otherwise the slot's level, raised and dropped by how its spins fare (spun_and_won),
//     with one contended lock() in trial_period (per thread) spinning anyway at level 0.
// On the 2-CPU reference VM the first rule is what the hot single locks want (0 rounds
// beat 2 by up to 1.3x at 64 workers), the second what tables of 1,024 locks want (2
// rounds beat 0 by 1.3 to 1.6x), and the levels what 16 to 64 locks at 64 workers want.
std::uint32_t mutex::adaptive_spin_limit(std::size_t slot_index) const noexcept {
    const std::uint32_t word = internal::waiter_slots[slot_index].load(std::memory_order_relaxed);
    if ((word & internal::waiter_slot_count_mask) + yielding[slot_index]->load(std::memory_order_relaxed) + 1 >=
        crowd_threshold())
        return 0;
    if (word == internal::waiter_slot_light) return trial_rounds;
    const std::uint32_t limit = level_rounds[spin_levels[slot_index].load(std::memory_order_relaxed)];
    thread_local std::uint32_t contended_locks = 0;
    if (limit == 0 && ++contended_locks % trial_period == 0) return trial_rounds;
    return limit;
}

// After the spin: yield in a crowd, or register, then become the designee or park.
bool mutex::lock_after_spin(internal::deadline until) {
    const std::size_t slot_index = internal::waiter_slot_index(this);
    const bool timed = until != internal::no_deadline;
    if (!timed && yield_while_crowded(slot_index)) return true;

    const internal::waiter_registration registration(slot_index);
    return wait_registered(until);
}

// The waiting of a registered waiter: take the mutex, become the designee, or park and act
// on what the unparker says; until the mutex is ours or the deadline passes.
bool mutex::wait_registered(internal::deadline until) {
    const auto& slot = internal::waiter_slots[internal::waiter_slot_index(this)];
    const bool timed = until != internal::no_deadline;
    bool woken_to_retry = false;  // by an unlock of a mutex marked sparse (wake_on_sparse_lock)
    for (;;) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if (woken_to_retry && (s & held_bit)) judge_sparse(internal::waiter_slot_index(this), false);
        woken_to_retry = false;
        if (!(s & held_bit)) {
            if (state_.compare_exchange_weak(s, s | held_bit, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
            continue;
        }
        if (timed && internal::clock::now() >= until) return false;
        if (!timed && !(s & waking_bit) &&
            (slot.load(std::memory_order_relaxed) & internal::waiter_slot_count_mask) == 1) {
            // No designee and nobody else waiting (here or on another mutex sharing the
            // slot): become the designee ourselves. Setting WAKING while the mutex is held
            // is safe (only clearing is reserved to the holder), and from now on the holder
            // unlocks with a plain store while we nap: no wake-up on its path at all. With
            // others queued we queue too, so designees are drawn from the queue in order.
            if (state_.compare_exchange_weak(s, static_cast<std::uint8_t>(s | waking_bit), std::memory_order_relaxed,
                                             std::memory_order_relaxed)) {
                wait_as_designee(true);
                return true;
            }
            continue;
        }
        const bool maybe_stale_designee = in_fork_child && !timed && (s & waking_bit);
        const auto result = parking_lot::park(
            timed ? mutex_timed_key(this) : mutex_untimed_key(this),
            [this] { return (state_.load(std::memory_order_seq_cst) & held_bit) != 0; },
            maybe_stale_designee ? internal::clock::now() + fork_child_designee_check : until);
        if (maybe_stale_designee && result.status == parking_lot::park_status::timed_out) {
            // A fork child's waiter that no designee served (see in_fork_child): one now.
            state_.fetch_or(waking_bit, std::memory_order_relaxed);  // a set: never unsafe
            wait_as_designee(false);
            return true;
        }
        if (!result.was_unparked()) continue;  // invalid (released meanwhile) or timed out: retry once
        woken_to_retry = result.token == 0;
        if (result.token == handoff_token) return true;  // the unlocker left it held for us
        if (result.token == designee_token) {
            wait_as_designee(false);
            return true;
        }
    }
}

// When at least crowd_per_cpu waiters per CPU want this mutex (registered sleepers plus
// threads already here), a new waiter does not park: it stays runnable, probing once per
// sched_yield, for up to crowd_yield_budget. Parked waiters can only be served one wake-up
// at a time, and on a small machine a wake-up that lands on the CPU of a holder that never
// sleeps waits for the scheduler's slice (2 to 4 ms on the 2-core reference VM): with 64
// waiters, a cycle through the queue took longer than a 50 ms benchmark repetition, and
// some threads made no progress at all in it. Runnable waiters are served by the
// scheduler's own fairness instead: each gets the CPU in turn and takes the mutex when it
// finds it free, as oneTBB's spin_mutex does (0.23 least-served share at 64 workers where
// every parking lock measured 0.00). Yielding waiters are not registered, so an unlock
// with no sleeper stays a plain store. The price is CPU: crowded waiters keep the CPUs
// busy (about twice the wall time per operation in CPU), bounded by the budget, after
// which the thread parks as usual. With fewer waiters than that (2 or 4 threads on 2 CPUs,
// the hold suite) nothing changes. Returns true holding the mutex.
bool mutex::yield_while_crowded(std::size_t slot_index) {
    const auto& slot = internal::waiter_slots[slot_index];
    auto& here = yielding[slot_index].value;
    const auto crowd = [&] {
        return (slot.load(std::memory_order_relaxed) & internal::waiter_slot_count_mask) +
               here.load(std::memory_order_relaxed);
    };
    if (crowd() + 1 < crowd_threshold()) return false;
    here.fetch_add(1, std::memory_order_relaxed);
    const auto start = internal::clock::now();
    bool acquired = false;
    for (;;) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if (!(s & held_bit) &&
            state_.compare_exchange_strong(s, s | held_bit, std::memory_order_acquire, std::memory_order_relaxed)) {
            acquired = true;
            break;
        }
        internal::yield_cpu();
        if (crowd() < crowd_threshold() || internal::clock::now() - start > crowd_yield_budget) break;
    }
    here.fetch_sub(1, std::memory_order_relaxed);
    return acquired;
}

// The designee's loop: probe, nap, probe...; after designee_patience, ask for a handoff.
// A thread that appoints itself watches the mutex first (poll_for_release), then naps: it
// has just seen the mutex held, and a nap (about 90 us) far outlasts a hold of a
// microsecond, such as RocksDB's per-writer mutex, held by its writer only until its
// condition-variable wait lets go, or CPython's GIL: the holder lets go, and the mutex sat
// free while the designee slept (docs/design/mutex.md, "The designee's first look"). The
// watch takes the mutex only once it stays free 1 us, and gives up at once where a
// holder takes it straight back, so on a hammered mutex it still naps and does not swap
// places with the holder. A thread promoted from the queue probes first: its promoter may
// be about to stop using the mutex (a thread finishing its work), and a nap then would
// leave the mutex idle. Returns holding the mutex. Only untimed waiters become designees,
// so this never gives up.
void mutex::wait_as_designee(bool nap_first) {
    const auto since = internal::clock::now();
    const std::size_t slot_index = internal::waiter_slot_index(this);
    if (nap_first && first_look_pays() &&
        poll_for_release(slot_index, {max_spin, first_look_free_reads,
                                      static_cast<std::uint8_t>(waking_bit | handoff_request_bit), true}))
        return;
    bool just_woke = false;  // from a nap that ran out, or that an unlock cut short
    for (bool napped = false;; napped = true) {
        if (napped || !nap_first) {
            for (int probe = 0; probe < designee_probes; ++probe) {
                std::uint8_t s = state_.load(std::memory_order_relaxed);
                if (just_woke && !(s & held_bit)) {
                    // Free now; still free a poll step later? A mutex its holders take
                    // straight back (or that a crowd of them takes in turn, as with few
                    // stripes and no work between) is held again by then.
                    internal::relax_for(sparse_step);
                    s = state_.load(std::memory_order_relaxed);
                    judge_sparse(slot_index, !(s & held_bit));
                } else if (just_woke) {
                    judge_sparse(slot_index, false);
                }
                just_woke = false;
                if (!(s & held_bit) &&
                    state_.compare_exchange_strong(
                        s, static_cast<std::uint8_t>((s | held_bit) & ~(waking_bit | handoff_request_bit)),
                        std::memory_order_acquire, std::memory_order_relaxed))
                    return;
                cpu_relax();
            }
        }
        const auto now = internal::clock::now();
        const bool want_handoff = now - since >= designee_patience;
        const auto result = parking_lot::park(
            mutex_designee_key(this),
            [&] {
                std::uint8_t s = state_.load(std::memory_order_seq_cst);
                for (;;) {
                    // Nap even if the mutex looks free right now: the probes just saw it
                    // held, so it is being taken and released in a tight loop, and a
                    // designee that keeps probing fights the holder for the line (the
                    // nap is bounded, and a free mutex is also taken by any new arrival).
                    if (!(s & held_bit)) return true;
                    // Re-assert WAKING (another designee may have cleared it by acquiring),
                    // and our request if it is due (a racing blind store may have eaten it).
                    const auto wanted =
                        static_cast<std::uint8_t>(s | waking_bit | (want_handoff ? handoff_request_bit : 0));
                    if (wanted == s) return true;
                    if (state_.compare_exchange_weak(s, wanted, std::memory_order_relaxed, std::memory_order_relaxed))
                        return true;
                }
            },
            now + designee_nap);
        just_woke =
            result.status == parking_lot::park_status::timed_out || (result.was_unparked() && result.token == 0);
        if (result.was_unparked() && result.token == handoff_token) {
            // We hold it now and are no longer a designee; the holder may clear WAKING.
            state_.fetch_and(static_cast<std::uint8_t>(~(waking_bit | handoff_request_bit)), std::memory_order_relaxed);
            return;
        }
    }
}

// Hands the held mutex to the longest-parked thread under `key`, if there is one. Clears
// the handoff request in the same bucket-locked step. True if it handed off.
bool mutex::hand_off_to(const void* key) {
    const auto r = parking_lot::unpark_one(key, [this](parking_lot::unpark_result u) -> std::intptr_t {
        if (!u.did_unpark_thread) return 0;
        state_.fetch_and(static_cast<std::uint8_t>(~handoff_request_bit), std::memory_order_relaxed);
        return handoff_token;
    });
    return r.did_unpark_thread;
}

// Releases with a seq_cst RMW, then looks for waiters that registered meanwhile: the
// fenced half of the waiter-registry handshake, for when no plain-store path applies.
void mutex::release_slow(std::size_t slot_index) {
    state_.fetch_and(static_cast<std::uint8_t>(~(held_bit | handoff_request_bit)), std::memory_order_seq_cst);
    if (internal::slot_has_waiters(slot_index)) wake_after_release();
    else internal::note_idle_unlock(slot_index);
}

void mutex::unlock_before_blocking() {
    // Checked in every build: the caller is about to block, so a load costs nothing here,
    // and a condition variable waited on with an unheld lock must be refused.
    if (!(state_.load(std::memory_order_relaxed) & held_bit))
        throw synchronization_error(
            "contend::mutex: a wait (condition_variable::wait, or another unlock_before_blocking caller) was given "
            "a mutex that is not locked");
    unlock();
    // A designee that is napping would otherwise leave the mutex idle for the rest of its
    // nap. If it is probing instead, or another thread took the mutex meanwhile, the unpark
    // finds nobody or makes the designee probe early and nap again: harmless either way.
    if (state_.load(std::memory_order_relaxed) & waking_bit) parking_lot::unpark_one(mutex_designee_key(this));
}

void mutex::unlock_slow(bool fair) {
    const std::size_t slot_index = internal::waiter_slot_index(this);
    const std::uint8_t s = state_.load(std::memory_order_relaxed);
    if (!(s & held_bit)) throw synchronization_error("contend::mutex::unlock: the mutex is not locked");

    if (fair) {
        if (hand_off_to(mutex_untimed_key(this)) || hand_off_to(mutex_timed_key(this)) ||
            hand_off_to(mutex_designee_key(this)))
            return;
        release_slow(slot_index);
        return;
    }
    if (s & handoff_request_bit) {
        // The designee has barged in vain for its patience: serve a timed waiter first
        // (it has a deadline), else the designee. If it is awake, it will find the mutex free.
        if (hand_off_to(mutex_timed_key(this)) || hand_off_to(mutex_designee_key(this))) return;
        release_slow(slot_index);
        return;
    }
    if ((s & waking_bit) || !internal::slot_has_waiters(slot_index)) {
        release_slow(slot_index);
        return;
    }

    // Waiters are registered and no designee exists: promote the head of the untimed queue,
    // or hand it the mutex if the bucket says it is time to be fair.
    if (CONTEND_MUTATION(mutex_unlock_skips_wake)) {  // a lost wake-up, for the model checker
        state_.fetch_and(static_cast<std::uint8_t>(~held_bit), std::memory_order_release);
        return;
    }
    const auto r =
        parking_lot::unpark_one(mutex_untimed_key(this), [this](parking_lot::unpark_result u) -> std::intptr_t {
            if (!u.did_unpark_thread) return 0;
            if (u.time_to_be_fair) return handoff_token;  // stays held, now by the woken thread
            std::uint8_t v = state_.load(std::memory_order_relaxed);
            while (!state_.compare_exchange_weak(v, static_cast<std::uint8_t>((v & ~held_bit) | waking_bit),
                                                 std::memory_order_release, std::memory_order_relaxed)) {
            }
            // One designee at a time: if one appointed itself meanwhile, this thread just retries.
            return (v & waking_bit) ? 0 : designee_token;
        });
    if (r.did_unpark_thread) return;
    if (hand_off_to(mutex_timed_key(this))) return;
    release_slow(slot_index);  // registered waiters are not queued yet (or belong to another mutex)
}

// The mutex was released by a plain store leaving WAKING, and its slot is marked sparse:
// wake the designee if it naps, else one queued waiter, to retry (token 0) rather than sleep
// out the nap or the queue while the mutex sits free. Either finds out for itself whether
// the mark was right (judge_sparse).
void mutex::wake_on_sparse_lock(const internal::atomic<std::uint32_t>& slot) noexcept {
    if (parking_lot::unpark_one(mutex_designee_key(this)).did_unpark_thread) return;
    // Beyond the designee (one registration), someone queues.
    if ((slot.load(std::memory_order_relaxed) & internal::waiter_slot_count_mask) >= 2)
        parking_lot::unpark_one(mutex_untimed_key(this));
}

// The mutex was released by a plain store and the registry shows waiters: make sure one
// of them is coming. Runs without holding the mutex.
void mutex::wake_after_release() noexcept {
    if (state_.load(std::memory_order_relaxed) & waking_bit) return;  // a designee exists
    const auto r =
        parking_lot::unpark_one(mutex_untimed_key(this), [this](parking_lot::unpark_result u) -> std::intptr_t {
            if (!u.did_unpark_thread) return 0;
            const std::uint8_t before = state_.fetch_or(waking_bit, std::memory_order_relaxed);  // a set: never unsafe
            return (before & waking_bit) ? 0 : designee_token;  // one designee at a time
        });
    if (!r.did_unpark_thread) parking_lot::unpark_one(mutex_timed_key(this));  // it retries on its own
}

}  // namespace contend
