// contend::shared_mutex slow paths. The fast paths, the state word and the fairness policy
// are in shared_mutex.hpp.
//
// Four queues per lock, keyed from its address (src/parking_keys.hpp):
//   readers    lock_shared callers (recursive or not), woken all at once
//   writers    lock callers, FIFO, woken one at a time
//   upgraders  lock_upgrade callers, woken all at once to retry
//   upgrading  the one upgrader waiting for the other readers to leave
//
// No lost wake-up: a thread parks only if its validate, run under its queue's bucket lock,
// still sees itself blocked and has set its queue's PARKED bit; every change that unblocks
// a queue whose bit it sees unparks that queue, under the same bucket lock. The one change
// made without a locked instruction, a writer's release by storing its byte, is the mutex's
// plain-store unlock: a thread counts itself in the lock's waiter slot before its validate
// looks at the word (park_registered), and the release looks at the slot after its store
// (src/waiter_registry.cpp has the argument), then at the bits (after_store_release).
// The PARKED bits are conservative: a bit may outlive its waiters (a reader that timed out),
// and the next release that looks finds the queue empty and clears it.
//
// WRITER_WAITING stops new readers, so it must not outlive its writers: it is set by a
// polling writer (again at each poll step while the lock is not free) and by a writer that
// parks, and cleared by a writer that takes the lock, by a release that wakes a parked
// writer to retry (the woken writer sets it again when it polls), and by a writer that
// times out. Whoever clears it while readers are parked lets them in (after_release).
//
// Hand-offs happen when the parking lot says it is time to be fair (at least about once per
// millisecond per bucket); otherwise a release wakes and lets the woken race. A writer's
// release gives the lock to every parked reader at once by adding their count to the state
// in the unpark_all callback, where no reader can park or leave; the last reader out gives it
// to the first parked writer (when no writer or recursive reader got in first). The
// callbacks' CASes are acq_rel: they read the release sequence of every reader that left, so
// a writer handed the lock is ordered after all their reads.
#include "contend/shared_mutex.hpp"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "designee_nap.hpp"
#include "model/mutation.hpp"
#include "parking_keys.hpp"
#include "platform/spin_wait.hpp"
#include "waiter_registry.hpp"

namespace contend {
namespace {

using internal::shared_gated_nap_key;
using internal::shared_readers_key;
using internal::shared_upgraders_key;
using internal::shared_upgrading_key;
using internal::shared_writers_key;
using parking_lot::park_status;

constexpr std::intptr_t retry_token = 0;  // look at the state again
constexpr std::intptr_t handoff_token = 1;  // you hold the lock (as a writer, or one reader)

constexpr shared_mutex::word readers_of(shared_mutex::word s) noexcept { return s >> shared_mutex::reader_shift; }

// Polls the state until ready(state) or spin_budget has passed. The budget is a time, not a
// pause count (pause lengths differ severalfold between CPUs: platform/spin_wait.hpp), short
// against a park and wake (tens of us on the VMs) and long against a critical section of a
// few cache lines, so a contended lock whose holders are brief never sleeps.
template <class Ready>
bool poll_until(const internal::atomic<shared_mutex::word>& state, Ready ready) {
    internal::spin_wait wait(shared_mutex::spin_budget);
    do {
        if (ready(state.load(std::memory_order_relaxed))) return true;
    } while (wait.pause());
    return false;
}

// validate() for a park: true (park) while `blocked(state)`, after setting every bit of
// `parked_bit`.
template <class Blocked>
bool mark_parked(internal::atomic<shared_mutex::word>& state, shared_mutex::word parked_bit, Blocked blocked) {
    shared_mutex::word v = state.load(std::memory_order_relaxed);
    for (;;) {
        if (!blocked(v)) return false;
        if ((v & parked_bit) == parked_bit ||
            state.compare_exchange_weak(v, v | parked_bit, std::memory_order_relaxed, std::memory_order_relaxed))
            return true;
    }
}

// parking_lot::park, counted in the waiter slot of the lock at `lock` meanwhile, so that a
// writer releasing by a store either sees this thread or is seen by its validate.
template <class Validate>
parking_lot::park_result park_registered(const shared_mutex* lock, const void* key, Validate validate,
                                         internal::deadline until) {
    if (CONTEND_MUTATION(shared_mutex_parks_unregistered)) return parking_lot::park(key, validate, until);
    const internal::waiter_registration registration(internal::waiter_slot_index(lock));
    return parking_lot::park(key, validate, until);
}

}  // namespace

void shared_mutex::misuse(const char* what) { throw synchronization_error(what); }

// ---- reader bias ----

namespace {

// The bias's clock, in ticks of 2^10 units: on x86-64 the time-stamp counter's cycles (a tick
// is then 0.3 to 0.5 us; a TSC read cost about 12 ns on the 2-vCPU EPYC VM, the steady clock
// 30), elsewhere (and in the model-checking build, on the model's clock) nanoseconds. Only
// differences of ticks are used, so their length in ns does not matter: an inhibition is a
// multiple of a revocation measured on the same clock. Kept modulo 2^16 in bias_until_, where
// 0 means "not inhibited" (an until that falls on 0 is stored as 1).
std::uint64_t bias_clock() noexcept {
#if defined(__x86_64__) && !CONTEND_MODEL_CHECK
    return __rdtsc() >> 10;
#else
    return static_cast<std::uint64_t>(internal::clock::now().time_since_epoch().count()) >> 10;
#endif
}
std::uint16_t nonzero(std::uint64_t t) noexcept {
    const auto v = static_cast<std::uint16_t>(t);
    return v == 0 ? 1 : v;
}
// The longest inhibition, 4095 ticks (1 to 2 ms of TSC): a larger difference is a wrapped
// clock, not an inhibition.
constexpr std::int16_t max_inhibit_ticks = 0x0fff;

// What stops a reader from biasing the lock: a writer holding, waiting or parked, an upgrade,
// or a bias already (or being revoked).
constexpr shared_mutex::word bias_blockers = shared_mutex::writer_bit | shared_mutex::writer_waiting_bit |
                                             shared_mutex::writers_parked_bit | shared_mutex::upgrading_bit |
                                             shared_mutex::read_bias_bit | shared_mutex::revoking_bit;

}  // namespace

// A read went through the count (state `s` before it added itself). If the lock is biased
// already, this thread's next read tries its slot; otherwise, every look_interval reads, the
// reader biases the lock when nothing stops it and no revocation inhibits it. It holds its
// read meanwhile, so no writer holds the lock.
void shared_mutex::after_counted_read(internal::reader_row& r, word s) noexcept {
    auto& slot = r.slot_for(this);
    if (!(s & read_bias_bit)) {
        r.countdown = internal::reader_row::look_interval;
        if (const std::uint16_t until = bias_until_.load(std::memory_order_relaxed); until != 0) {
            const auto left = static_cast<std::int16_t>(until - static_cast<std::uint16_t>(bias_clock()));
            if (left > 0 && left <= max_inhibit_ticks) return;
            // Over, or so far off that the clock wrapped past it: forget it, so that a lock left
            // alone for a while does not seem inhibited when the ticks come round again.
            bias_until_.store(0, std::memory_order_relaxed);
        }
        word v = state_.load(std::memory_order_relaxed);
        for (;;) {
            if (v & bias_blockers) return;
            if (state_.compare_exchange_weak(v, v | read_bias_bit, std::memory_order_relaxed,
                                             std::memory_order_relaxed))
                break;
        }
    }
    if (slot.load(std::memory_order_relaxed) == nullptr)
        slot.store(internal::reader_row::hint(), std::memory_order_relaxed);
}

namespace {

// After a revocation that took `took`, the bias stays off for bias_inhibit_factor times as
// long: at least two ticks (one could end at once), at most half the ticks' range.
std::uint16_t inhibit_ticks(std::uint64_t took) noexcept {
    return static_cast<std::uint16_t>(
        std::clamp<std::uint64_t>(took * shared_mutex::bias_inhibit_factor + 2, 2, max_inhibit_ticks));
}

}  // namespace

// How long the bias stays off after a revocation that took `took` ticks. While the lock's
// reads are taken exclusively, the longest inhibition (1 to 2 ms): a write that came within a
// revocation's few microseconds would otherwise see the bias back at once, and every read
// between two writes would go through a row that the next write revokes, instead of the
// cheaper exclusive read.
std::uint16_t shared_mutex::inhibition(std::uint64_t took) const noexcept {
    return reads_exclusively() ? static_cast<std::uint16_t>(max_inhibit_ticks) : inhibit_ticks(took);
}

// Takes the bias back, so that a writer (or an upgrade) can wait for the count alone. One
// revoker at a time: the one whose CAS set REVOKING scans the rows and clears both bits; others
// wait for it. A reader cannot enter through its row while REVOKING is set, and every reader
// that entered before it was set is seen by the scans (enter_biased). False if `until` passed:
// the revoker then clears REVOKING alone, and the bias stays.
bool shared_mutex::revoke_bias(internal::deadline until, word stop) {
    for (;;) {
        word s = state_.load(std::memory_order_relaxed);
        if (!(s & read_bias_bit)) return true;
        if (s & revoking_bit) {
            // Another thread revokes: wait until it is done.
            if (!internal::wait_while([this] { return (state_.load(std::memory_order_relaxed) & revoking_bit) != 0; },
                                      until))
                return false;
            continue;
        }
        if (!state_.compare_exchange_strong(s, s | revoking_bit | stop, std::memory_order_seq_cst,
                                            std::memory_order_relaxed))
            continue;
        const std::uint64_t started = bias_clock();
        const bool drained = CONTEND_MUTATION(shared_mutex_revocation_skips_the_scan) ||
                             internal::wait_while([this] { return internal::any_reader_slot_holds(this); }, until);
        if (!drained) {
            if (CONTEND_MUTATION(shared_mutex_timed_out_revoker_keeps_revoking)) return false;
            state_.fetch_and(~revoking_bit, std::memory_order_relaxed);
            // WRITER_WAITING must not outlive its writer (an upgrade clears its UPGRADING itself).
            if (stop == writer_waiting_bit) after_writer_timeout();
            return false;
        }
        const std::uint64_t done = bias_clock();
        bias_until_.store(nonzero(done + inhibition(done - started)), std::memory_order_relaxed);
        // acq_rel: the readers' slot releases were read (acquire) by the scan; the clear
        // publishes nothing new but keeps the word's release sequence.
        state_.fetch_and(~(read_bias_bit | revoking_bit), std::memory_order_acq_rel);
        return true;
    }
}

// revoke_bias with one look at the rows: false (the bias kept) if a reader holds a slot or
// another thread is revoking.
bool shared_mutex::try_revoke_bias() noexcept {
    word s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (!(s & read_bias_bit)) return true;
        if (s & revoking_bit) return false;
        if (state_.compare_exchange_weak(s, s | revoking_bit, std::memory_order_seq_cst, std::memory_order_relaxed))
            break;
    }
    if (internal::any_reader_slot_holds(this)) {
        state_.fetch_and(~revoking_bit, std::memory_order_relaxed);
        return false;
    }
    bias_until_.store(nonzero(bias_clock() + inhibition(0)), std::memory_order_relaxed);
    state_.fetch_and(~(read_bias_bit | revoking_bit), std::memory_order_acq_rel);
    return true;
}

// ---- exclusive reads ----

namespace {

// The clock of a sampled read: the time-stamp counter's cycles on x86-64 (about 12 ns a read
// on the 2-vCPU EPYC VM), nanoseconds elsewhere and on the model's clock. Only a ratio of
// two intervals measured on it is used.
std::uint64_t sample_clock() noexcept {
#if defined(__x86_64__) && !CONTEND_MODEL_CHECK
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(internal::clock::now().time_since_epoch().count());
#endif
}

}  // namespace

// A read through the count whose thread looks (one in look_interval): at the bias, after
// its add, and one look in sample_interval times the read too.
void shared_mutex::lock_shared_looked(internal::reader_row& r) {
    r.countdown = internal::reader_row::look_interval;
    if (--r.sample_countdown == 0) return lock_shared_sampled(r);
    const word s = state_.fetch_add(one_reader, std::memory_order_acquire);
    if (s & reader_blockers) [[unlikely]] {
        r.countdown = 1;  // look at the next read instead
        return back_out_and_wait(s + one_reader);
    }
    after_counted_read(r, s);
}

// A timed read (one in look_interval * sample_interval of each thread's reads through the
// count, or a probe of read_exclusively): it times its fetch_add (what the count's line costs
// this read, c) and marks its slot, so that its unlock_shared times the section (s) and votes.
// The look at the bias is after_counted_read's, as for any read that looks.
void shared_mutex::lock_shared_sampled(internal::reader_row& r) {
    r.countdown = internal::reader_row::look_interval;
    r.sample_countdown = internal::reader_row::sample_interval;
    auto& slot = r.slot_for(this);
    const std::uint64_t before = sample_clock();
    const word s = state_.fetch_add(one_reader, std::memory_order_acquire);
    const std::uint64_t entered = sample_clock();
    if (s & reader_blockers) [[unlikely]] {
        back_out_and_wait(s + one_reader);  // a wait is no sample
        return;
    }
    after_counted_read(r, s);
    const void* v = slot.load(std::memory_order_relaxed);
    if (v == nullptr || v == internal::reader_row::hint() || v == internal::reader_row::exclusive_hint()) {
        // The section is short when it ends before twice the add's time has passed again,
        // counted from here (the bookkeeping above is not the section's).
        r.sample_until = static_cast<std::uint32_t>(sample_clock() + 2 * (entered - before));
        slot.store(internal::reader_row::tagged(this, sampled_tag), std::memory_order_relaxed);
    }
}

void shared_mutex::read_through_the_count() {
    const word s = state_.fetch_add(one_reader, std::memory_order_acquire);
    if (s & reader_blockers) [[unlikely]]
        back_out_and_wait(s + one_reader);
}

// Takes the writer's byte for a read when nothing keeps an exclusive reader out: no writer or
// exclusive reader holds, nothing stops readers, no bias. Readers in the count, an upgrader
// (whose upgrade to write waits for the byte too), and parked threads' bits may stay.
bool shared_mutex::try_read_exclusively(internal::atomic<const void*>& slot) noexcept {
    word s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (s & exclusive_read_blockers) return false;
        if (state_.compare_exchange_weak(s, s | exclusive_read_bit, std::memory_order_acquire,
                                         std::memory_order_relaxed))
            break;
    }
    slot.store(internal::reader_row::tagged(this, exclusive_tag), std::memory_order_relaxed);
    return true;
}

// A read of a lock whose reads are taken exclusively, which was not free. Biased meanwhile:
// through the row. One such read in sample_interval of each thread is the probe: it joins
// through the count and is timed, so that a lock whose sections grew long goes back to shared
// reads (uncontended the two kinds of read cost about the same, and a countdown to a probe on
// the fast path cost the one-worker cells 10 to 20 %). Held by a reader in the writer's byte:
// nap at the gate while it stays held, as a writer behind a writer does (one napper at a time, the others queued at the
// gate), for at most the nap's patience; then through the count, which joins the readers (and
// waits, as a reader, for a writer). No poll first: on the 2-CPU VMs a reader that polled took
// the lock from a holder about to take it again, and the two then moved the line between them
// at every read (2 workers, 99 % reads: 17-20 ns a read with a 4 us poll, 13 without;
// contend::mutex's spin learned the same, docs/design/mutex.md).
void shared_mutex::read_exclusively(internal::reader_row& r, internal::atomic<const void*>& slot) {
    if (try_read_exclusively(slot)) return;  // (again: the caller's CAS may have failed a while ago)
    internal::count_contention();
    const word s = state_.load(std::memory_order_relaxed);
    if (s & read_bias_bit) {
        slot.store(internal::reader_row::hint(), std::memory_order_relaxed);
        return lock_shared();
    }
#if !CONTEND_MODEL_CHECK  // (the models set the mode, and it stays)
    if (--r.sample_countdown == 0) {
        slot.store(nullptr, std::memory_order_relaxed);
        return lock_shared_sampled(r);
    }
#else
    (void)r;
#endif
    if ((s & exclusive_read_bit) && !(s & reader_blockers)) {
        gate_.lock();
        nap_behind_a_writer(internal::no_deadline, exclusive_read_bit);
        bool taken = try_read_exclusively(slot);
        while (!taken && CONTEND_MUTATION(shared_mutex_exclusive_reader_waits_for_the_holder)) {
            nap_behind_a_writer(internal::no_deadline, exclusive_read_bit);
            taken = try_read_exclusively(slot);
        }
        open_gate();
        if (taken) return;
    }
    read_through_the_count();
}

// unlock_shared() of a read that this thread's slot marks: taken exclusively, or sampled.
void shared_mutex::unlock_shared_marked(internal::reader_row& r, const void* v) {
    auto& slot = r.slot_for(this);
    if (v == internal::reader_row::tagged(this, exclusive_tag)) {
        slot.store(internal::reader_row::exclusive_hint(), std::memory_order_relaxed);
        return release_exclusive_read();
    }
    const auto ended = static_cast<std::uint32_t>(sample_clock());
    const bool short_section = static_cast<std::int32_t>(ended - r.sample_until) < 0;
    const word s = state_.fetch_sub(one_reader, std::memory_order_release);
    slot.store(nullptr, std::memory_order_relaxed);
    if (!holds_plain_reader(s)) [[unlikely]]
        undo_unlock_shared();  // throws
    judge_read_section(short_section);
    if (s & read_bias_bit) slot.store(internal::reader_row::hint(), std::memory_order_relaxed);
    else if (reads_exclusively()) slot.store(internal::reader_row::exclusive_hint(), std::memory_order_relaxed);
    if (s & reader_unlock_wakes) [[unlikely]]
        after_reader_left(s - one_reader);
}

// A vote: plain load and store (a vote lost to a race changes nothing but when the verdict
// comes). In the model-checking build the lock never switches by itself (the model's clock
// makes no verdict worth modelling); a model sets the mode (internal::shared_mutex_access).
void shared_mutex::judge_read_section(bool short_section) noexcept {
#if CONTEND_MODEL_CHECK
    (void)short_section;
#else
    const std::uint8_t v = read_score_.load(std::memory_order_relaxed);
    if (v > exclusive_read_score_max) return;  // pinned
    const std::uint8_t n = short_section ? static_cast<std::uint8_t>(std::min<int>(v + 1, exclusive_read_score_max))
                                         : static_cast<std::uint8_t>(v == 0 ? 0 : v - 1);
    if (n != v) read_score_.store(n, std::memory_order_relaxed);
#endif
}

// ---- writers ----

bool shared_mutex::lock_slow(internal::deadline until) {
    if (try_lock()) return true;
    internal::count_contention();
    for (;;) {
        // A writer that finds readers waits on the state directly: with WRITER_WAITING set
        // the readers present drain, and its wait is theirs. One that finds another writer
        // holding queues behind the writers at the gate first, so that writers contending
        // with writers do not all poll the state word (16 writers polling and re-announcing
        // on one line ran 3.4x slower than glibc's lock on the 16-core Intel machine;
        // docs/design/shared_mutex.md). Only a writer holding sends it there, never the gate
        // alone: a writer woken from the writers' queue to retry carries the wake-up of the
        // writers still parked there, and may leave for the gate only when a holder's release
        // will pass that wake-up on (going to the gate of a free lock, it left the gate's
        // holder parked on the word for ever: the torture's hang).
        if (state_.load(std::memory_order_relaxed) & read_bias_bit) {
            if (!revoke_bias(until, writer_waiting_bit)) return false;
            continue;
        }
        if (state_.load(std::memory_order_relaxed) & writer_bit) {
            if (until == internal::no_deadline) gate_.lock();
            else if (!gate_.try_lock_until(until)) return false;
            const wait_result r = wait_for_state(until, true);
            if (r == wait_result::taken) return true;
            open_gate();
            if (r == wait_result::timed_out) return false;
            continue;
        }
        const wait_result r = wait_for_state(until, false);
        if (r == wait_result::taken) return true;
        if (r == wait_result::timed_out) return false;
    }
}

// The gate's next writer is woken now if it naps as the mutex's designee: its wait at the
// gate adds to the writer's wait for the lock (a designee naps about 100 us). On the 16-core
// Intel machine, 99 % reads, 16 workers, the writers' p99 wait went from 425 to 143 us with
// this (glibc's rwlock: 1,101 to 1,533 us), and no cell of the rw suite got slower than
// std::shared_mutex (docs/design/shared_mutex.md).
void shared_mutex::open_gate() { gate_.unlock_before_blocking(); }

// Polls, then parks, until the state lets this writer in. A writer at the gate (`gated`)
// marks the state so that its unlock opens the gate; one that is not gives up as soon as it
// sees another writer holding (writer_seen), to queue at the gate.
shared_mutex::wait_result shared_mutex::wait_for_state(internal::deadline until, bool gated) {
    if (gated) nap_behind_a_writer(until, writer_bit);
    for (;;) {
        const wait_result polled = announce_and_poll(gated);
        if (polled == wait_result::bias_seen) {
            // Readers biased the lock (between this writer's waits): take the bias back.
            if (!revoke_bias(until, writer_waiting_bit)) return wait_result::timed_out;
            continue;
        }
        if (polled != wait_result::timed_out) return polled;  // taken, or writer_seen
        const auto result = park_registered(
            this, shared_writers_key(this),
            [this] {
                // Never parked on a biased lock: no reader's release would wake it.
                return mark_parked(state_, writers_parked_bit | writer_waiting_bit, [](shared_mutex::word v) {
                    return !writer_can_take(v) &&
                           (!(v & read_bias_bit) || CONTEND_MUTATION(shared_mutex_writer_parks_on_a_biased_lock));
                });
            },
            until);
        if (result.status == park_status::unparked && result.token == handoff_token) {
            if (gated) state_.fetch_or(writer_gated_bit, std::memory_order_relaxed);
            return wait_result::taken;
        }
        if (result.status == park_status::timed_out) {
            after_writer_timeout();
            return wait_result::timed_out;
        }
    }
}

// The gate's writer found another writer holding the lock: it naps, as contend::mutex's
// designee does, for as long as a writer holds it and at most designee_patience, then waits
// as any writer (polls, then parks with WRITERS_PARKED, so that releases wake it and hand
// it the lock when the parking lot says it is time to be fair). Nobody wakes a nap, and no
// bit says that one is under way, so the holder's release stays that of a lock nobody
// waits for (a store of its byte, when it did not come through the gate), and it runs
// section after section with the lock's line and the data in its cache. Polling instead
// (on the line the holder writes) and parking (so that every release woke it, to lose the
// race to the holder's next lock and poll again) kept both CPUs busy moving the line. What
// it costs: a lock freed while its next writer naps stays free (to anyone else) until the
// nap ends, up to about 90 us, and the writers' p99 wait rises. The figures, before and
// after: docs/design/shared_mutex.md, "The gate's writer naps".
void shared_mutex::nap_behind_a_writer(internal::deadline until, word holder) {
    const auto since = internal::clock::now();
    for (;;) {
        const word s = state_.load(std::memory_order_relaxed);
        // Readers biased the lock, or hold it, or nobody does: the writer's usual wait (which
        // takes a free lock at once).
        if (!(s & holder)) return;
        const auto now = internal::clock::now();
        if (now - since >= internal::designee_patience || now >= until) return;
        const auto nap_until = CONTEND_MUTATION(shared_mutex_gated_writer_naps_without_a_deadline)
                                   ? until
                                   : std::min<internal::deadline>(until, now + internal::designee_nap);
        parking_lot::park(
            shared_gated_nap_key(this),
            [this, holder] { return (state_.load(std::memory_order_relaxed) & holder) != 0; }, nap_until);
    }
}

// A writer's poll before it parks (timed_out: its budget ran out). It sets WRITER_WAITING
// while readers hold the lock: the bit stops new readers, so the readers present drain while
// the writer is still awake, and it takes the lock without a sleep. Polling without it, a
// writer among readers whose sections overlap rarely saw the count reach 0 and parked, and
// every phase change then cost a wake-up: 4 threads at 90 % reads ran 10x slower than glibc's
// reader-preferring lock (docs/design/shared_mutex.md).
shared_mutex::wait_result shared_mutex::announce_and_poll(bool gated) {
    internal::spin_wait wait(spin_budget);
    word s = state_.load(std::memory_order_relaxed);
    for (;;) {
        while (writer_can_take(s)) {
            if (state_.compare_exchange_weak(s, gated ? taken_by_gated_writer(s) : taken_by_writer(s),
                                             std::memory_order_acquire, std::memory_order_relaxed))
                return wait_result::taken;
        }
        if (!gated && (s & writer_bit)) return wait_result::writer_seen;
        if (s & read_bias_bit) return wait_result::bias_seen;
        // Only readers need stopping: a writer holding the lock leaves it to a waiting writer
        // without waiting for this bit.
        if (!(s & writer_waiting_bit) && (readers_of(s) > 0 || (s & exclusive_read_bit)))
            state_.compare_exchange_weak(s, s | writer_waiting_bit, std::memory_order_relaxed,
                                         std::memory_order_relaxed);
        if (!wait.pause()) return wait_result::timed_out;
        s = state_.load(std::memory_order_relaxed);
    }
}

// unlock() when a store of the writer's byte will not do: the release is a CAS (or the slow
// path's), a locked instruction that orders it before the look at the slot; a slot that
// stays armed with nobody registered ages back to `light` (the mutex's fenced path).
void shared_mutex::unlock_fenced(bool exclusive_read) {
    word s = exclusive_read ? exclusive_read_bit : writer_bit;
    if (!state_.compare_exchange_strong(s, 0, std::memory_order_seq_cst, std::memory_order_relaxed))
        unlock_slow(exclusive_read);
    const std::size_t slot_index = internal::waiter_slot_index(this);
    if (!internal::slot_has_waiters(slot_index)) internal::note_idle_unlock(slot_index);
}

// A writer released by storing its byte and then found a thread registered in the slot: it
// may have parked having seen the byte still set. The fence makes the store visible before
// the bits are read, so a waiter whose PARKED bit this load misses sees the lock free
// itself, under its bucket lock, and does not park. Then this is a release like any other,
// of a lock that is already free: parked waiters are woken (no hand-off: the lock may be
// taken already).
void shared_mutex::after_store_release() {
    internal::thread_fence(std::memory_order_seq_cst);
    const word s = state_.load(std::memory_order_relaxed);
    if (s & (writer_bit | exclusive_read_bit)) return;  // taken again: that holder's release looks
    if ((s & writers_parked_bit) && readers_of(s) == 0) {
        wake_a_writer(false);
        return;
    }
    after_release(s);
}

void shared_mutex::unlock_slow(bool exclusive_read) {
    if (exclusive_read) return release_exclusive_read_slow();
    const word s = state_.load(std::memory_order_relaxed);
    if (!(s & writer_bit)) misuse("contend::shared_mutex::unlock: no writer holds the lock");
    release_writer(0);
    if (s & writer_gated_bit) open_gate();  // the next waiting writer's turn
}

// A reader's release of the writer's byte when a thread is registered in the waiter slot:
// then as the last reader's release, since readers may have joined it through the count.
void shared_mutex::release_exclusive_read_slow() {
    word s = state_.load(std::memory_order_relaxed);
    while (!state_.compare_exchange_weak(s, s & ~writer_byte, std::memory_order_release, std::memory_order_relaxed)) {
    }
    if (CONTEND_MUTATION(shared_mutex_exclusive_release_wakes_nobody)) return;
    after_reader_left(s & ~writer_byte);
}

void shared_mutex::unlock_and_lock_shared() {
    if (!(state_.load(std::memory_order_relaxed) & writer_bit))
        misuse("contend::shared_mutex::unlock_and_lock_shared: no writer holds the lock");
    const bool gated = state_.load(std::memory_order_relaxed) & writer_gated_bit;
    release_writer(one_reader);
    if (gated) open_gate();
}

void shared_mutex::unlock_and_lock_upgrade() {
    if (!(state_.load(std::memory_order_relaxed) & writer_bit))
        misuse("contend::shared_mutex::unlock_and_lock_upgrade: no writer holds the lock");
    const bool gated = state_.load(std::memory_order_relaxed) & writer_gated_bit;
    release_writer(one_reader | upgrader_bit);
    if (gated) open_gate();
}

// The writer leaves, keeping `keep` (0; or one reader, and maybe the upgrade, for a
// downgrade).
void shared_mutex::release_writer(shared_mutex::word keep) {
    for (;;) {
        shared_mutex::word s = state_.load(std::memory_order_relaxed);
        if ((s & readers_parked_bit) && release_writer_to_readers(keep)) return;
        if ((s & writers_parked_bit) && keep == 0) {
            wake_a_writer(true);
            return;
        }
        // Nobody parked (a polling writer takes the lock by itself). A waiter that parks
        // meanwhile fails the CAS, and the release looks again.
        const shared_mutex::word n = (s & ~writer_byte) + keep;
        if (state_.compare_exchange_strong(s, n, std::memory_order_release, std::memory_order_relaxed)) {
            after_release(n);
            return;
        }
    }
}

// A downgrade, or a release with no writer waiting, lets every parked reader in; with
// writers waiting, only when the readers' turn is due. Returns false (nothing done, the lock
// still held) when it is not.
bool shared_mutex::release_writer_to_readers(shared_mutex::word keep) {
    word after = 0;
    bool released = false;
    parking_lot::unpark_all(shared_readers_key(this), [&](parking_lot::unpark_all_result r) -> std::intptr_t {
        // Whether writers wait is decided here, on the word as the CAS finds it: a writer
        // that parked since the release began must not see the lock freed for readers it
        // then stops again, with nobody left to wake it (the torture's hang).
        word v = state_.load(std::memory_order_relaxed);
        for (;;) {
            const bool writers_wait = keep == 0 && (v & (writers_parked_bit | writer_waiting_bit));
            if (writers_wait && !r.time_to_be_fair) return parking_lot::keep_parked;
            const bool hand = r.time_to_be_fair || keep != 0;
            word add = hand ? static_cast<word>(r.threads) * one_reader : 0;
            if (CONTEND_MUTATION(shared_mutex_readers_handed_uncounted)) add = 0;
            const word next = ((v & ~(writer_byte | readers_parked_bit)) + keep) + add;
            if (state_.compare_exchange_weak(v, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
                after = next;
                released = true;
                return hand ? handoff_token : retry_token;
            }
        }
    });
    if (released) after_release(after);
    return released;
}

// A writer leaves (`from_writer`), or the last reader does, with writers parked: the first
// is woken to race for the lock, or handed it when it is time to be fair (and, after a
// reader, when no writer or recursive reader got in meanwhile).
void shared_mutex::wake_a_writer(bool from_writer) {
    word after = 0;
    parking_lot::unpark_one(shared_writers_key(this), [&](parking_lot::unpark_result r) -> std::intptr_t {
        word v = state_.load(std::memory_order_relaxed);
        for (;;) {
            word n = v;
            if (!r.did_unpark_thread || !r.may_have_more_threads) n &= ~writers_parked_bit;
            const bool hand = r.did_unpark_thread && r.time_to_be_fair && (from_writer || writer_can_take(v));
            if (hand) {
                n = taken_by_writer(n & ~writer_gated_bit);  // held on, now by the woken writer
            } else {
                if (from_writer) n &= ~writer_byte;
                // Readers may come in while it wakes; it stops them again when it polls.
                if (r.did_unpark_thread) n &= ~writer_waiting_bit;
            }
            if (state_.compare_exchange_weak(v, n, std::memory_order_acq_rel, std::memory_order_relaxed)) {
                after = n;
                return hand ? handoff_token : retry_token;
            }
        }
    });
    after_release(after);
}

// A writer timed out. If it was the last parked writer, nothing may stay stopped for it;
// another parked writer, if any, is woken to retry (it renews WRITER_WAITING when it polls).
void shared_mutex::after_writer_timeout() {
    shared_mutex::word after = 0;
    parking_lot::unpark_one(shared_writers_key(this), [&](parking_lot::unpark_result r) -> std::intptr_t {
        shared_mutex::word v = state_.load(std::memory_order_relaxed);
        for (;;) {
            shared_mutex::word n = v;
            if (!CONTEND_MUTATION(shared_mutex_timed_out_writer_leaves_its_bit)) {
                n &= ~writer_waiting_bit;
                if (!r.did_unpark_thread) n &= ~writers_parked_bit;
            }
            if (state_.compare_exchange_weak(v, n, std::memory_order_relaxed, std::memory_order_relaxed)) {
                after = n;
                return retry_token;
            }
        }
    });
    after_release(after);
}

// ---- readers ----

bool shared_mutex::lock_shared_slow(internal::deadline until, shared_mutex::word blockers) {
    if (try_add_reader(blockers)) return true;
    internal::count_contention();
    for (;;) {
        if (try_add_reader(blockers)) return true;
        if (poll_until(state_, [blockers](shared_mutex::word v) { return !(v & blockers); })) continue;
        const auto result = park_registered(
            this, shared_readers_key(this),
            [this, blockers] {
                return mark_parked(state_, readers_parked_bit,
                                   [blockers](shared_mutex::word v) { return (v & blockers) != 0; });
            },
            until);
        if (result.status == park_status::unparked && result.token == handoff_token) return true;
        // A stale READERS_PARKED left by a timeout is cleared by the next release that looks.
        if (result.status == park_status::timed_out) return false;
    }
}

// lock_shared() added a reader to a stopped lock (`s`, with it): it takes itself out again,
// as an unlock does, then waits.
void shared_mutex::back_out_and_wait(shared_mutex::word s) {
    s = state_.fetch_sub(one_reader, std::memory_order_relaxed) - one_reader;
    if (s & reader_unlock_wakes) after_reader_left(s);
    lock_shared_slow(internal::no_deadline, reader_blockers);
}

// unlock_shared() found no reader to take out: put the count back, wake whoever the
// transient count may have stopped, and report the misuse.
void shared_mutex::undo_unlock_shared() {
    const shared_mutex::word s = state_.fetch_add(one_reader, std::memory_order_relaxed) + one_reader;
    if (s & reader_unlock_wakes) after_reader_left(s);
    misuse("contend::shared_mutex::unlock_shared: no reader holds the lock");
}

// A reader left; `s` is the state it left behind, with one of reader_unlock_wakes set.
void shared_mutex::after_reader_left(shared_mutex::word s) {
    if ((s & upgrading_bit) && upgrader_alone(s)) {
        if (!CONTEND_MUTATION(shared_mutex_reader_leaves_the_upgrader_parked))
            parking_lot::unpark_one(shared_upgrading_key(this));  // the upgrader is alone now
        return;
    }
    if (readers_of(s) == 0 && (s & writers_parked_bit) && !(s & (writer_bit | exclusive_read_bit))) {
        if (CONTEND_MUTATION(shared_mutex_last_reader_forgets_the_writer)) return;
        wake_a_writer(false);
        return;
    }
    after_release(s);
}

// Whoever changed the state to `s` lets in the parked readers and upgraders that nothing
// stops any more. (Parked writers are woken only by the releases that free the lock for
// them: the last reader's and a writer's.)
void shared_mutex::after_release(shared_mutex::word s) {
    if (s & writer_bit) return;  // the holder's release will look
    if ((s & readers_parked_bit) && !(s & reader_blockers)) {
        release_to_readers();
        return;
    }
    if ((s & upgraders_parked_bit) && !(s & upgrader_blockers)) wake_upgraders();
}

// Parked readers whom nothing stops: woken to race for the lock, or handed it (counted for
// them) when their turn is due.
void shared_mutex::release_to_readers() {
    shared_mutex::word after = 0;
    parking_lot::unpark_all(shared_readers_key(this), [&](parking_lot::unpark_all_result r) -> std::intptr_t {
        shared_mutex::word v = state_.load(std::memory_order_relaxed);
        for (;;) {
            // Stopped again since (a writer took the lock or waits): they stay parked, and
            // whoever clears that lets them in.
            if (v & reader_blockers) return parking_lot::keep_parked;
            const shared_mutex::word add = r.time_to_be_fair ? r.threads * one_reader : 0;
            const shared_mutex::word next = (v & ~readers_parked_bit) + add;
            if (state_.compare_exchange_weak(v, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
                after = next;
                return r.time_to_be_fair ? handoff_token : retry_token;
            }
        }
    });
    if ((after & upgraders_parked_bit) && !(after & upgrader_blockers)) wake_upgraders();
}

// ---- upgraders ----

bool shared_mutex::lock_upgrade_slow(internal::deadline until) {
    internal::count_contention();
    for (;;) {
        if (try_lock_upgrade()) return true;
        if (poll_until(state_, [](shared_mutex::word v) { return !(v & upgrader_blockers); })) continue;
        const auto result = park_registered(
            this, shared_upgraders_key(this),
            [this] {
                return mark_parked(state_, upgraders_parked_bit,
                                   [](shared_mutex::word v) { return (v & upgrader_blockers) != 0; });
            },
            until);
        if (result.status == park_status::timed_out) return false;
    }
}

void shared_mutex::wake_upgraders() {
    parking_lot::unpark_all(shared_upgraders_key(this), [this](parking_lot::unpark_all_result) -> std::intptr_t {
        state_.fetch_and(~upgraders_parked_bit, std::memory_order_relaxed);
        return retry_token;
    });
}

void shared_mutex::unlock_upgrade() {
    shared_mutex::word s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (!(s & upgrader_bit) || (s & upgrading_bit))
            misuse("contend::shared_mutex::unlock_upgrade: no upgrader holds the lock");
        if (state_.compare_exchange_weak(s, s - one_reader - upgrader_bit, std::memory_order_release,
                                         std::memory_order_relaxed))
            break;
    }
    after_reader_left(s - one_reader - upgrader_bit);
}

void shared_mutex::unlock_upgrade_and_lock_shared() {
    shared_mutex::word s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (!(s & upgrader_bit) || (s & upgrading_bit))
            misuse("contend::shared_mutex::unlock_upgrade_and_lock_shared: no upgrader holds the lock");
        if (state_.compare_exchange_weak(s, s - upgrader_bit, std::memory_order_release, std::memory_order_relaxed))
            break;
    }
    after_release(s - upgrader_bit);
}

bool shared_mutex::try_unlock_upgrade_and_lock() noexcept {
    shared_mutex::word s = state_.load(std::memory_order_relaxed);
    if ((s & read_bias_bit) && (!(s & upgrader_bit) || !try_revoke_bias())) return false;
    s = state_.load(std::memory_order_relaxed);
    while ((s & upgrader_bit) && upgrader_alone(s) && !(s & read_bias_bit)) {
        if (state_.compare_exchange_weak(s, taken_by_writer(s - one_reader - upgrader_bit - (s & upgrading_bit)),
                                         std::memory_order_acquire, std::memory_order_relaxed))
            return true;
    }
    return false;
}

bool shared_mutex::upgrade_slow(internal::deadline until) {
    shared_mutex::word s = state_.load(std::memory_order_relaxed);
    if (!(s & upgrader_bit)) misuse("contend::shared_mutex::unlock_upgrade_and_lock: no upgrader holds the lock");
    bool spun = false;
    for (;;) {
        // Announce the upgrade: new readers queue from here on, so the readers present drain.
        // Again at every turn: a reader may have come in through the count while the upgrade
        // took the bias back, or before (the upgrade found itself the only counted reader).
        s = state_.load(std::memory_order_relaxed);
        while (!(s & upgrading_bit) && !upgrader_alone(s) &&
               !CONTEND_MUTATION(shared_mutex_upgrade_does_not_announce)) {
            if (state_.compare_exchange_weak(s, s | upgrading_bit, std::memory_order_relaxed,
                                             std::memory_order_relaxed))
                break;
        }
        // Readers in rows are readers too; UPGRADING stops new ones through the count while
        // they drain. (The bias cannot come back while UPGRADING is set.)
        if ((s & read_bias_bit) && !revoke_bias(until, upgrading_bit)) {
            const shared_mutex::word before = state_.fetch_and(~upgrading_bit, std::memory_order_relaxed);
            after_release(before & ~upgrading_bit);
            return false;
        }
        if (CONTEND_MUTATION(shared_mutex_upgrade_does_not_wait)) {
            s = state_.load(std::memory_order_relaxed);
            while (!state_.compare_exchange_weak(s, taken_by_writer((s & ~(upgrader_bit | upgrading_bit)) - one_reader),
                                                 std::memory_order_acquire, std::memory_order_relaxed)) {
            }
            return true;
        }
        if (try_unlock_upgrade_and_lock()) return true;
        if (!spun) {
            spun = true;
            if (poll_until(state_, [](shared_mutex::word v) { return upgrader_alone(v); })) continue;
        }
        // Registered in the waiter slot: a reader holding the writer's byte leaves with a store
        // of that byte when nobody is registered, and must see this upgrade to wake it.
        const auto result = park_registered(
            this, shared_upgrading_key(this),
            [this] {
                const shared_mutex::word v = state_.load(std::memory_order_relaxed);
                return (v & upgrading_bit) && !upgrader_alone(v);
            },
            until);
        if (result.status == park_status::timed_out) {
            if (try_unlock_upgrade_and_lock()) return true;
            // Give up the upgrade, keep the upgradable read, and let in the readers it stopped.
            const shared_mutex::word before = state_.fetch_and(~upgrading_bit, std::memory_order_relaxed);
            after_release(before & ~upgrading_bit);
            return false;
        }
    }
}

}  // namespace contend
