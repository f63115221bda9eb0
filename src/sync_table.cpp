#include "sync_table.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "contend/condition_variable.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "contend/thin_lock.hpp"
#include "model/mutation.hpp"
#include "platform/background_threads.hpp"
#include "platform/first_use.hpp"
#include "platform/fork_child.hpp"

namespace contend::internal {
namespace {

// Past the flat array: chunks of 1,024, indexed from flat_fat_locks on.
constexpr std::uint32_t chunk_bits = 10;
constexpr std::uint32_t chunk_size = 1u << chunk_bits;
constexpr std::uint32_t max_chunks = 1u << 16;  // 2^26 more fat locks: far below the 2^31 a word holds
// Entries a sweep visits before it lets go of the table's lock for a moment, so that
// inflations and destructions elsewhere wait for a few microseconds at most.
constexpr std::uint32_t sweep_batch = 256;
// HotSpot's asynchronous deflation looks for idle monitors every 250 ms (AsyncDeflationInterval,
// docs/references.md); a fat lock costs every acquisition a few ns here, so we look twice as
// often: a lock nobody touched for 100 to 200 ms is thin again.
constexpr std::chrono::milliseconds default_sweep_interval{100};
constexpr std::chrono::milliseconds max_sweep_interval{std::chrono::hours(24)};

// Chunk pointers are published once and never change: readers need no lock.
internal::atomic<fat_lock*> chunks[max_chunks];

}  // namespace

fat_lock flat_fat_lock_table[flat_fat_locks];

fat_lock& chunked_fat_lock(std::uint32_t index) noexcept {
    const std::uint32_t i = index - flat_fat_locks;
    return chunks[i >> chunk_bits].load(std::memory_order_acquire)[i & (chunk_size - 1)];
}

namespace {

struct table_state {
    contend::mutex lock;  // allocation, release and sweeps: slow paths only
    std::vector<std::uint32_t> free;
    // The entries in use, in no order, and each one's place in it (indexed by entry): a sweep
    // visits the live fat locks only, not every entry the table ever made, so a program that
    // once had a million fat locks and now has ten pays for ten every interval.
    std::vector<std::uint32_t> in_use;
    std::vector<std::uint32_t> place;
    std::uint32_t next = 0;  // entries created so far
    std::size_t live = 0;
    std::size_t last_sweep_visits = 0;
    std::uint64_t inflations = 0;
    std::uint64_t deflations = 0;
    std::chrono::milliseconds interval = default_sweep_interval;
    bool sweeper_started = false;
    contend::condition_variable wake;  // the sweeper waits here (interval changed, first fat lock)
};

// Never destroyed: locks and the sweeper may outlive statics. Built on first use with no
// guard a forked child could find held (platform/first_use.hpp).
internal::first_use_object<table_state> table_object;
table_state& state() { return table_object.get(); }

// A fork while a sweep holds the lock would leave the child's table locked for good.
// Registered at load, so that the prepare handler runs after the program's own (which may
// inflate thin locks) and the child's before the program's.
void before_fork();
void after_fork_parent();
void after_fork_child();
[[maybe_unused]] const bool fork_handlers_registered = at_fork(before_fork, after_fork_parent, after_fork_child);

void before_fork() { state().lock.lock(); }
void after_fork_parent() { state().lock.unlock(); }
void after_fork_child() {
    auto& t = state();
    t.sweeper_started = false;  // threads do not survive a fork: the next inflation starts one
    t.lock.unlock();
}

bool is_fat(std::uint32_t w) noexcept { return (w & thin_lock::inflated_bit) != 0; }

// With the table's lock held: entry `index` is no longer in use.
void retire(table_state& t, std::uint32_t index) {
    const std::uint32_t at = t.place[index];
    const std::uint32_t last = t.in_use.back();
    t.in_use[at] = last;
    t.place[last] = at;
    t.in_use.pop_back();
    --t.live;
    t.free.push_back(index);  // a vector at most as long as the peak of live entries
}

// With the table's lock held. Deflates entry `index` if it is idle (see sync_table.hpp).
bool sweep_one(table_state& t, std::uint32_t index, bool marked_only) {
    fat_lock& f = sync_table_at(index);
    if (f.word == nullptr) return false;  // free
    std::uint32_t o = f.owner.load(std::memory_order_relaxed);
    if (o == 0 && marked_only) {
        // Idle now: mark it. Any acquisition stores its owner over the mark.
        f.owner.compare_exchange_strong(o, idle_mark, std::memory_order_relaxed, std::memory_order_relaxed);
        return false;
    }
    if (o != idle_mark && !(o == 0 && !marked_only)) return false;
    if (!f.m.try_lock()) return false;
    // Under the mutex nobody is between taking it and storing an owner, so a mark still
    // here means no thread has acquired the lock since the last sweep.
    o = f.owner.load(std::memory_order_relaxed);
    std::uint32_t expected = thin_lock::inflated_bit | index;
    const bool idle = (o == idle_mark || (o == 0 && !marked_only)) &&
                      (f.waiters == 0 || CONTEND_MUTATION(thin_lock_deflation_ignores_waiters));
    // The word names this entry (only a sweep or the destructor change a fat word, both
    // under the table's lock); compare anyway, so a broken invariant deflates nothing.
    if (!idle || !f.word->compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed)) {
        f.m.unlock();
        return false;
    }
    // The word is thin and free now. Threads that read the old word and wait for (or will
    // take) this mutex find it no longer names them, and start over.
    f.word = nullptr;
    f.owner.store(0, std::memory_order_relaxed);
    f.recursion = 0;
    f.m.unlock();
    retire(t, index);
    ++t.deflations;
    return true;
}

// Retiring an entry moves the last one into its place, so a position is visited again
// after a deflation, and entries only ever move from the end to a place before it: no
// entry is visited twice in one sweep (which would deflate it without a whole interval of
// idleness); one moved while the lock was let go waits for the next sweep.
std::size_t sweep_locked(table_state& t, std::unique_lock<contend::mutex>& lk, bool marked_only) {
    std::size_t deflated = 0, visits = 0;
    for (std::size_t at = 0; at < t.in_use.size();) {
        if (++visits % sweep_batch == 0) {
            lk.unlock();
            lk.lock();
            if (at >= t.in_use.size()) break;
        }
        if (sweep_one(t, t.in_use[at], marked_only)) ++deflated;
        else ++at;
    }
    t.last_sweep_visits = visits;
    return deflated;
}

void sweeper_main() {
    auto& t = state();
    std::unique_lock lk(t.lock);
    auto next_sweep = std::chrono::steady_clock::now() + t.interval;
    for (;;) {
        if (t.interval.count() == 0 || t.live == 0) {
            t.wake.wait(lk);
            next_sweep = std::chrono::steady_clock::now() + t.interval;  // idle from now on
            continue;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now < next_sweep) {
            t.wake.wait_until(lk, next_sweep);
            continue;  // re-read the interval and the count
        }
        sweep_locked(t, lk, true);
        next_sweep = std::chrono::steady_clock::now() + t.interval;
    }
}

// Starts the sweeper if fat locks exist, sweeps are on and none runs yet. Called without
// the table's lock: creating a thread is a system call, and inflations wait on that lock.
void ensure_sweeper(table_state& t) {
    // Not in the model-checking build (platform/background_threads.hpp): a model runs a sweep
    // from one of its own threads (thin_lock::deflate_idle_locks), where it races entries
    // under the scheduler.
    if constexpr (!internal::background_threads) return;
    {
        std::lock_guard guard(t.lock);
        if (t.sweeper_started || t.interval.count() == 0 || t.live == 0) return;
        t.sweeper_started = true;
    }
    // Every signal blocked: a signal sent to the process must reach the program's own
    // threads, not this one (the new thread inherits the mask).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
        std::thread sweeper(sweeper_main);
        pthread_setname_np(sweeper.native_handle(), "contend-deflate");
        sweeper.detach();
    } catch (const std::system_error&) {
        // No thread to be had: locks stay fat until a sweep is asked for
        // (thin_lock::deflate_idle_locks), or a later inflation tries again.
        std::lock_guard guard(t.lock);
        t.sweeper_started = false;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

internal::atomic<std::uint32_t> failures_for_testing{0};  // sync_table_fail_allocations_for_testing

}  // namespace

std::uint32_t sync_table_fail_allocations_for_testing(std::uint32_t count) noexcept {
    return failures_for_testing.exchange(count, std::memory_order_relaxed);
}

std::uint32_t sync_table_allocate(internal::atomic<std::uint32_t>* word, std::uint32_t owner) {
    for (std::uint32_t left = failures_for_testing.load(std::memory_order_relaxed); left != 0;)
        if (failures_for_testing.compare_exchange_weak(left, left - 1, std::memory_order_relaxed))
            throw std::bad_alloc();
    auto& t = state();
    std::uint32_t index;
    {
        std::lock_guard guard(t.lock);
        // Room first, so that nothing below throws halfway, and so that retire(), under
        // noexcept callers, never needs memory: every list can hold every entry.
        t.in_use.reserve(t.next + 1);
        t.place.reserve(t.next + 1);
        t.free.reserve(t.next + 1);
        if (!t.free.empty()) {
            index = t.free.back();
            t.free.pop_back();
        } else {
            index = t.next;
            if (index >= flat_fat_locks) {
                const std::uint32_t i = index - flat_fat_locks;
                if ((i >> chunk_bits) >= max_chunks) throw std::bad_alloc();
                if ((i & (chunk_size - 1)) == 0)
                    chunks[i >> chunk_bits].store(new fat_lock[chunk_size], std::memory_order_release);
            }
            ++t.next;
            t.place.push_back(0);
        }
        t.place[index] = static_cast<std::uint32_t>(t.in_use.size());
        t.in_use.push_back(index);
        fat_lock& f = sync_table_at(index);
        if (f.slot == nullptr) f.slot = &waiter_slot_for(&f.m);  // the same on every use
        f.word = word;
        // An owner, not the idle mark: a sweep leaves the entry alone from now on.
        f.owner.store(owner, std::memory_order_relaxed);
        f.recursion = 0;
        if (++t.live == 1) t.wake.notify_all();
        ++t.inflations;
    }
    ensure_sweeper(t);
    // Outside the table's lock: a thread that read this entry's index from another word
    // before a sweep released it may hold the mutex for a moment (it lets go once it sees
    // that its word names another entry now).
    sync_table_at(index).m.lock();
    return index;
}

void sync_table_release(internal::atomic<std::uint32_t>& word) noexcept {
    auto& t = state();
    std::lock_guard guard(t.lock);
    const std::uint32_t w = word.load(std::memory_order_relaxed);  // a sweep may have deflated it
    if (!is_fat(w)) return;
    const std::uint32_t index = w & ~thin_lock::inflated_bit;
    fat_lock& f = sync_table_at(index);
    f.word = nullptr;
    f.owner.store(0, std::memory_order_relaxed);
    f.recursion = 0;
    retire(t, index);
}

std::size_t sync_table_sweep(bool marked_only) {
    auto& t = state();
    std::unique_lock lk(t.lock);
    return sweep_locked(t, lk, marked_only);
}

void sync_table_set_sweep_interval(std::chrono::milliseconds interval) {
    auto& t = state();
    {
        std::lock_guard guard(t.lock);
        // Capped, so that `now + interval` cannot overflow the clock (milliseconds::max()).
        t.interval = interval.count() <= 0 ? std::chrono::milliseconds{0} : std::min(interval, max_sweep_interval);
        t.wake.notify_all();
    }
    ensure_sweeper(t);
}

std::chrono::milliseconds sync_table_sweep_interval() noexcept {
    auto& t = state();
    std::lock_guard guard(t.lock);
    return t.interval;
}

sync_table_counts sync_table_stats() noexcept {
    auto& t = state();
    std::lock_guard guard(t.lock);
    return {t.live, t.next, t.inflations, t.deflations, t.last_sweep_visits};
}

}  // namespace contend::internal
