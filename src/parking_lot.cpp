// The parking lot's table, queues and per-thread parking slots. See parking_lot.hpp for
// the contract; this file is about how it survives growth and timeouts.
#include "contend/parking_lot.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/tsan.hpp"
#include "contend/internal/word_lock.hpp"
#include "parking_lot_cancellation.hpp"
#include "platform/first_use.hpp"
#include "platform/fork_child.hpp"
#include "platform/spin_wait.hpp"
#include "platform/wait.hpp"

namespace contend::parking_lot {
namespace {

using internal::word_lock;

// One per thread that has parked. Pooled and never freed: an unparker may still call
// wake_one on `parked` after the thread it woke has returned and even exited, so the
// memory must stay valid (a stray wake on a recycled slot is just a spurious wake-up).
struct thread_data {
    internal::atomic<std::uint32_t> parked{0};  // 0 once unparked, else queued or asleep (below)
    // The key it is queued under. Written under the bucket lock (a requeue holds both), read
    // by its own thread without one only to find the bucket to lock (withdraw).
    std::atomic<const void*> address{nullptr};  // not a model atomic: only the bucket locks order it
    const void* requeue_context = nullptr;  // what park_requeueable was given; bucket lock
    bool requeued = false;  // moved by unpark_requeue_one; bucket lock, read once unparked
    thread_data* next = nullptr;  // queue link, guarded by the bucket lock
    std::intptr_t token = 0;  // written under the bucket lock before `parked` is released
    thread_data* next_free = nullptr;  // pool link, guarded by the pool lock
};

struct bucket {
    word_lock lock;
    thread_data* head = nullptr;
    thread_data* tail = nullptr;
    clock::time_point next_fair_unpark{};
    std::uint64_t random = 0;

    // xorshift64*: a fairness deadline only needs to be unpredictable enough that threads
    // do not fall into lock step, not cryptographic.
    std::uint64_t next_random() noexcept {
        random ^= random >> 12;
        random ^= random << 25;
        random ^= random >> 27;
        return random * 0x2545F4914F6CDD1Dull;
    }
};

struct table {
    std::size_t size;  // power of two
    cache_padded<bucket>* buckets;
    table* retired_next;  // older tables stay allocated: a thread may still be reading one
};

constexpr std::size_t initial_buckets = 64;
constexpr std::size_t buckets_per_thread = 3;  // WTF's maxLoadFactor
constexpr auto max_fair_interval = std::chrono::milliseconds(1);

internal::atomic<table*> current_table{nullptr};
internal::atomic<std::size_t> growth_count{0};
internal::atomic<std::size_t> thread_count{0};

table* make_table(std::size_t size, table* retired) {
    auto* t = new table{size, new cache_padded<bucket>[size], retired};
    for (std::size_t i = 0; i < size; ++i) {
        t->buckets[i]->random = 0x9E3779B97F4A7C15ull * (i + 1) ^ reinterpret_cast<std::uintptr_t>(t);
    }
    return t;
}

// The current table, with the acquire that orders its contents before our reads.
table* load_table() noexcept {
    table* t = current_table.load(std::memory_order_acquire);
    internal::tsan_acquired(&current_table);
    return t;
}

table* get_table() {
    table* t = load_table();
    if (t) [[likely]]
        return t;
    table* fresh = make_table(initial_buckets, nullptr);
    internal::tsan_releasing(&current_table);
    const bool won = current_table.compare_exchange_strong(t, fresh, std::memory_order_acq_rel);
    internal::tsan_acquired(&current_table);
    if (won) return fresh;
    delete[] fresh->buckets;
    delete fresh;
    return t;
}

std::size_t hash_address(const void* address, std::size_t size) noexcept {
    auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
    bits *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(bits ^ (bits >> 32)) & (size - 1);
}

// Locks the bucket for `address` in the table that is current once the lock is held.
bucket& lock_bucket(const void* address) {
    for (;;) {
        table* t = get_table();
        bucket& b = *t->buckets[hash_address(address, t->size)];
        b.lock.lock();
        if (t == load_table()) [[likely]]
            return b;
        b.lock.unlock();  // the table grew while we waited; our address lives elsewhere now
    }
}

// Locks the buckets of two addresses (once if they share one), lower index first: the order
// grow_for takes every bucket in, so no two lockers of more than one bucket can deadlock.
struct bucket_pair {
    bucket* first;  // `a`'s
    bucket* second;  // `b`'s; the same bucket as `first` if they share one
    void unlock() noexcept {
        if (second != first) second->lock.unlock();
        first->lock.unlock();
    }
};
bucket_pair lock_bucket_pair(const void* a, const void* b) {
    for (;;) {
        table* t = get_table();
        const std::size_t i = hash_address(a, t->size);
        const std::size_t j = hash_address(b, t->size);
        bucket_pair pair{&*t->buckets[i], &*t->buckets[j]};
        if (i <= j) pair.first->lock.lock();
        if (i != j) pair.second->lock.lock();
        if (i > j) pair.first->lock.lock();
        if (t == load_table()) [[likely]]
            return pair;
        pair.unlock();
    }
}

void grow_for(std::size_t threads) {
    for (;;) {
        table* old = get_table();
        if (old->size >= threads * buckets_per_thread) return;
        // Lock every bucket in index order (the only place that holds more than one, so
        // the order cannot deadlock), then check nobody else replaced the table meanwhile.
        for (std::size_t i = 0; i < old->size; ++i) old->buckets[i]->lock.lock();
        if (old != load_table()) {
            for (std::size_t i = 0; i < old->size; ++i) old->buckets[i]->lock.unlock();
            continue;
        }
        std::size_t size = old->size;
        while (size < threads * buckets_per_thread * 2) size *= 2;
        table* fresh = make_table(size, old);
        // Walk old buckets in order and each queue front to back, appending: all threads on
        // one address sit in one old bucket, so their FIFO order carries over unchanged.
        for (std::size_t i = 0; i < old->size; ++i) {
            for (thread_data* td = old->buckets[i]->head; td != nullptr;) {
                thread_data* next = td->next;
                bucket& nb = *fresh->buckets[hash_address(td->address.load(std::memory_order_relaxed), size)];
                td->next = nullptr;
                if (nb.tail) nb.tail->next = td;
                else nb.head = td;
                nb.tail = td;
                td = next;
            }
            old->buckets[i]->head = old->buckets[i]->tail = nullptr;
        }
        internal::tsan_releasing(&current_table);
        current_table.store(fresh, std::memory_order_release);
        growth_count.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t i = 0; i < old->size; ++i) old->buckets[i]->lock.unlock();
        return;
    }
}

// The pool of parking slots.
struct slot_pool {
    std::mutex lock;
    thread_data* free = nullptr;
};
// Leaked: threads may exit during static destruction. Built on first use with no guard a
// forked child could find held (platform/first_use.hpp).
internal::first_use_object<slot_pool> slot_pool_object;
slot_pool& pool() { return slot_pool_object.get(); }

struct thread_slot {
    thread_data* data;
    thread_slot() {
        {
            std::lock_guard guard(pool().lock);
            data = pool().free;
            if (data) pool().free = data->next_free;
        }
        if (!data) {
            data = new thread_data;
            // Its `parked` is stored to plainly (the unparker's release) and read plainly.
            internal::helgrind_unchecked(&data->parked, sizeof data->parked);
        }
        grow_for(thread_count.fetch_add(1, std::memory_order_relaxed) + 1);
    }
    ~thread_slot() {
        thread_count.fetch_sub(1, std::memory_order_relaxed);
        std::lock_guard guard(pool().lock);
        data->next_free = pool().free;
        pool().free = data;
    }
};

thread_data& this_thread() {
    thread_local thread_slot slot;
    return *slot.data;
}

// fork(): the child has one thread, the one that called fork, which was not parked (it was
// calling fork). Every thread queued in a bucket, every thread holding or waiting for a
// bucket lock or the slot pool's lock, is one that does not exist in the child: an unpark
// would hand a mutex to nobody, and a held bucket lock would never be released. So the
// child empties every queue and frees every lock, without looking at what they were doing:
// whatever a thread left half-done under a bucket lock belonged to queues that are dropped
// whole. The slots of those threads are leaked (never returned to the pool); a slot pool
// list a thread left half-updated loses at most one entry. Registered when the library
// loads, so it runs before the program's own child handlers, which may unlock mutexes.
//
// Under helgrind these writes race by design with what the threads gone in the child last did
// there: what they rewrite is left unchecked from now on (contend/internal/tsan.hpp).
void reset_in_fork_child() noexcept {
    if (table* t = current_table.load(std::memory_order_relaxed)) {
        for (std::size_t i = 0; i < t->size; ++i) {
            bucket& b = *t->buckets[i];
            internal::helgrind_unchecked(&b, sizeof b);
            b.lock.reset_after_fork();
            b.head = b.tail = nullptr;
        }
    }
    internal::helgrind_unchecked(&pool().lock, sizeof pool().lock);
    new (&pool().lock) std::mutex;  // its holder, if any, is not in the child
}
[[maybe_unused]] const bool fork_handler_registered = internal::at_fork_child(reset_in_fork_child);

void enqueue(bucket& b, thread_data* td) noexcept {
    td->next = nullptr;
    if (b.tail) b.tail->next = td;
    else b.head = td;
    b.tail = td;
}

// Removes `td` if it is queued in `b`; true if it was.
bool remove(bucket& b, thread_data* td) noexcept {
    thread_data* prev = nullptr;
    for (thread_data* cur = b.head; cur != nullptr; prev = cur, cur = cur->next) {
        if (cur != td) continue;
        if (prev) prev->next = cur->next;
        else b.head = cur->next;
        if (b.tail == cur) b.tail = prev;
        cur->next = nullptr;
        return true;
    }
    return false;
}

// thread_data::parked: 0 once unparked; `queued` while queued and awake (in before_sleep or
// its poll); `asleep` once it announced that it sleeps. An unparker makes the futex call
// only for a thread that announced it: a poll that catches its unpark costs the unparker no
// system call (about a microsecond on the VMs measured).
constexpr std::uint32_t queued = 1;
constexpr std::uint32_t asleep = 2;

// Announces that this thread sleeps; false if it was unparked already.
bool announce_sleep(thread_data& me) noexcept {
    std::uint32_t v = queued;
    return me.parked.compare_exchange_strong(v, asleep, std::memory_order_acquire) || v == asleep;
}

// Lets the thread of `td` go: the caller wrote its token; wakes it if it sleeps.
void release_parked(thread_data& td) noexcept {
    internal::tsan_releasing(&td.parked);
    if (td.parked.exchange(0, std::memory_order_release) == asleep) internal::wake_one(td.parked);
}

// After a timeout or an exception we may find that an unparker already took us off the
// queue; its wake-up is then on its way, and we must consume it before returning so the
// slot is clean for the next park. Returns true if we removed ourselves first. The queue is
// the one we are in now: a requeue may have moved us since we parked.
bool withdraw(thread_data& me) {
    bucket* b = nullptr;
    for (;;) {
        const void* address = me.address.load(std::memory_order_relaxed);
        b = &lock_bucket(address);
        if (me.address.load(std::memory_order_relaxed) == address) break;
        b->lock.unlock();  // requeued while we locked: that bucket is no longer ours
    }
    const bool removed = remove(*b, &me);
    b->lock.unlock();
    if (removed) return true;
    while (me.parked.load(std::memory_order_acquire) != 0)
        if (announce_sleep(me)) internal::wait_on_address(me.parked, asleep, internal::no_deadline);
    internal::tsan_acquired(&me.parked);
    return false;
}

// The address whose parks are cancellation points on this thread (cancellable_parks).
thread_local const void* cancellable_address = nullptr;

// The sleep of a cancellable park: on the unwind of a cancellation, off the queue first.
internal::wait_status sleep_cancellably(thread_data& me, clock::time_point deadline) {
    try {
        return internal::wait_on_address_cancellable(me.parked, asleep, deadline);
    } catch (...) {  // abi::__forced_unwind: may be caught, must be rethrown
        withdraw(me);
        throw;
    }
}

// park()'s poll (internal::poll_until): until the thread is unparked, `poll` has passed or
// `deadline` has, or, on a shared CPU, its yields are spent.
internal::poll_outcome poll_for_unpark(thread_data& me, std::chrono::nanoseconds poll,
                                       clock::time_point deadline) noexcept {
    return internal::poll_until([&] { return me.parked.load(std::memory_order_acquire) == 0; }, poll, deadline);
}

// Whether a park's poll pays, judged by this thread's own last polls. A poll wins only when
// the unpark comes within it, which needs the unparker to be running meanwhile; where it is
// not (more runnable threads than CPUs, or an unparker with work to do first), each poll is
// CPU taken from the threads that have work, and its yields are context switches. RocksDB's
// db_bench (fillrandom, 8 threads on the 2-CPU AMD EPYC VM), whose writers wait on condition
// variables their leader notifies after its writes: with every wait polling 8 us, 0.87x
// glibc's rate and 7x its involuntary context switches; with no poll, 1.16x. So after
// poll_misses_to_stop polls in a row that missed (below: ran out on a CPU of their own, and
// the wait went on well past them), the thread sleeps at once, and polls again on one park
// in poll_trial_period to learn whether polling pays again (as contend::mutex's spin does);
// one poll that wins makes it poll every time again.
// A count of outcomes measured here, not a time: the same on every CPU.
constexpr std::uint8_t poll_misses_to_stop = 3;
constexpr std::uint8_t poll_trial_period = 16;
struct poll_history {
    std::uint8_t misses = 0;
    std::uint8_t skipped = 0;  // parks since the last poll, while misses >= poll_misses_to_stop
};
thread_local poll_history polls;
thread_local parking_lot::detail::poll_counts poll_totals;  // for the tests

bool poll_pays() noexcept {
    if (polls.misses < poll_misses_to_stop) return true;
    if (++polls.skipped < poll_trial_period) {
        ++poll_totals.skipped;
        return false;
    }
    polls.skipped = 0;
    return true;
}

// A thread whose CPU is shared polls on every park, judged or not: its poll is a few yields
// (internal::shared_poll_yields), each of which lets a thread that wants the CPU run, so a
// miss there costs the others little and does not count against polling.
//
// A poll that ran out on a CPU of its own is judged when the park ends, by how long the
// whole wait took: one that ended within near_miss_factor polls counts as a near miss,
// which lets polling go on (misses back to 0), and only a longer wait counts as a miss. A
// judge that counted near misses could talk itself out of polling for good: a ring of 4
// threads on 2 CPUs (AMD EPYC VM) whose fresh threads missed their first polls stopped
// polling, after which every hand-off woke an idle CPU (10 to 12 us), every wait (three
// hand-offs) outlasted the 30 us poll, and each trial poll missed again: 10 to 14 us a turn
// for as long as the threads lived, against 2.4 to 3 us once they poll. Polling through a
// wait of up to twice the poll costs at most two polls, where the poll is sized to what a
// wake-up costs (src/semaphore.cpp).
constexpr int near_miss_factor = 2;

// Returns when the poll began if its judgment waits for the park's end, else {}.
clock::time_point poll_and_judge(thread_data& me, std::chrono::nanoseconds poll, clock::time_point deadline) noexcept {
    if (!internal::this_thread_cpu_shared() && !poll_pays()) return {};
    ++poll_totals.polled;
    const auto start = clock::now();
    switch (poll_for_unpark(me, poll, deadline)) {
        case internal::poll_outcome::ready:
            polls.misses = 0;
            ++poll_totals.won;
            break;
        case internal::poll_outcome::missed_shared:
            ++poll_totals.missed_shared;
            break;
        case internal::poll_outcome::missed:
            return start;
    }
    return {};
}

// The judgment of a poll that ran out on a CPU of its own, once the park ends (`woken`:
// unparked, not timed out).
void judge_missed_poll(clock::time_point poll_start, std::chrono::nanoseconds poll, bool woken) noexcept {
    if (woken && clock::now() - poll_start <= near_miss_factor * poll) {
        polls.misses = 0;
        ++poll_totals.near_misses;
    } else if (polls.misses < poll_misses_to_stop) {
        ++polls.misses;
    }
}

}  // namespace

namespace detail {

cancellable_parks::cancellable_parks(const void* address) noexcept : previous_(cancellable_address) {
    cancellable_address = address;
}
cancellable_parks::~cancellable_parks() { cancellable_address = previous_; }

park_result park(const void* address, internal::function_ref<bool()> validate,
                 internal::function_ref<void()> before_sleep, clock::time_point deadline, const void* requeue_context,
                 std::chrono::nanoseconds poll) {
    thread_data& me = this_thread();
    {
        bucket& b = lock_bucket(address);
        me.requeued = false;
        if (!validate()) {
            b.lock.unlock();
            return {park_status::invalid, 0};
        }
        me.address.store(address, std::memory_order_relaxed);
        me.requeue_context = requeue_context;
        me.token = 0;
        me.parked.store(queued, std::memory_order_relaxed);
        enqueue(b, &me);
        b.lock.unlock();
    }

    try {
        before_sleep();
    } catch (...) {
        withdraw(me);
        throw;
    }

    clock::time_point missed_poll{};
    if (poll > std::chrono::nanoseconds::zero()) missed_poll = poll_and_judge(me, poll, deadline);

    const bool cancellable = address == cancellable_address;
    while (me.parked.load(std::memory_order_acquire) != 0) {
        if (!announce_sleep(me)) break;
        ++poll_totals.sleeps;
        const internal::wait_status slept =
            cancellable ? sleep_cancellably(me, deadline) : internal::wait_on_address(me.parked, asleep, deadline);
        if (slept == internal::wait_status::timed_out ||
            (deadline != internal::no_deadline && clock::now() >= deadline)) {
            if (me.parked.load(std::memory_order_acquire) == 0) break;
            if (withdraw(me)) {
                if (missed_poll != clock::time_point{}) judge_missed_poll(missed_poll, poll, false);
                return {park_status::timed_out, 0, me.requeued};
            }
            break;
        }
    }
    internal::tsan_acquired(&me.parked);
    if (missed_poll != clock::time_point{}) judge_missed_poll(missed_poll, poll, true);
    return {park_status::unparked, me.token, me.requeued};
}

bool this_thread_was_requeued() noexcept { return this_thread().requeued; }

poll_counts this_thread_poll_counts() noexcept { return poll_totals; }

}  // namespace detail
namespace {

// The first thread queued under `address` in `b`, or nullptr; `prev` is its predecessor.
thread_data* find_first(bucket& b, const void* address, thread_data*& prev) noexcept {
    prev = nullptr;
    for (thread_data* cur = b.head; cur != nullptr; prev = cur, cur = cur->next)
        if (cur->address.load(std::memory_order_relaxed) == address) return cur;
    return nullptr;
}

// Takes `found` (with predecessor `prev`) off `b`'s queue and says whether more threads
// remain under `address`.
bool unlink(bucket& b, thread_data* found, thread_data* prev, const void* address) noexcept {
    if (prev) prev->next = found->next;
    else b.head = found->next;
    if (b.tail == found) b.tail = prev;
    bool more = false;
    for (thread_data* cur = found->next; cur != nullptr; cur = cur->next) {
        if (cur->address.load(std::memory_order_relaxed) == address) {
            more = true;
            break;
        }
    }
    found->next = nullptr;
    return more;
}

// Whether the bucket's fairness deadline has passed (and if so, draws the next one).
bool time_to_be_fair(bucket& b) {
    const auto now = clock::now();
    if (now < b.next_fair_unpark) return false;
    const auto window = std::chrono::duration_cast<clock::duration>(max_fair_interval).count();
    b.next_fair_unpark =
        now + clock::duration(static_cast<clock::rep>(b.next_random() % static_cast<std::uint64_t>(window)));
    return true;
}

// unpark_one's work with `b` (the bucket of `address`) locked; `unlock` releases what the
// caller locked once the token is written, before the wake-up.
template <class Unlock>
unpark_result unpark_first(bucket& b, const void* address,
                           internal::function_ref<std::intptr_t(unpark_result)> callback, Unlock&& unlock) {
    thread_data* prev = nullptr;
    thread_data* found = find_first(b, address, prev);
    unpark_result result;
    if (found) {
        result.may_have_more_threads = unlink(b, found, prev, address);
        result.did_unpark_thread = true;
        result.time_to_be_fair = time_to_be_fair(b);
    }
    const std::intptr_t token = callback(result);
    if (found) found->token = token;
    unlock();
    if (found) release_parked(*found);
    return result;
}

}  // namespace
namespace detail {

unpark_result unpark_one(const void* address, internal::function_ref<std::intptr_t(unpark_result)> callback) {
    bucket& b = lock_bucket(address);
    return unpark_first(b, address, callback, [&b] { b.lock.unlock(); });
}

unpark_result unpark_requeue_one(const void* from, internal::function_ref<const void*(const void*)> target,
                                 internal::function_ref<bool(const void*)> validate,
                                 internal::function_ref<std::intptr_t(unpark_result)> callback) {
    for (;;) {
        // Which queue the first thread would move to: its context says, read under `from`'s
        // lock. Both buckets are then locked in order, so the first thread is looked up again.
        bucket& fb = lock_bucket(from);
        thread_data* prev = nullptr;
        thread_data* first = find_first(fb, from, prev);
        const void* context = first ? first->requeue_context : nullptr;
        const void* to = context ? target(context) : nullptr;
        if (to == nullptr) return unpark_first(fb, from, callback, [&fb] { fb.lock.unlock(); });
        fb.lock.unlock();

        bucket_pair pair = lock_bucket_pair(from, to);
        first = find_first(*pair.first, from, prev);
        if (first == nullptr || first->requeue_context != context) {
            pair.unlock();  // it left, or another thread is first now: decide again
            continue;
        }
        if (!validate(context)) return unpark_first(*pair.first, from, callback, [&pair] { pair.unlock(); });
        unpark_result result;
        result.may_have_more_threads = unlink(*pair.first, first, prev, from);
        result.did_requeue_thread = true;
        first->address.store(to, std::memory_order_relaxed);
        first->requeued = true;
        enqueue(*pair.second, first);
        callback(result);
        pair.unlock();
        return result;
    }
}

}  // namespace detail

namespace detail {

std::size_t unpark_all(const void* address, internal::function_ref<std::intptr_t(unpark_all_result)> callback) {
    thread_data* woken = nullptr;
    thread_data* woken_tail = nullptr;
    std::size_t count = 0;
    {
        bucket& b = lock_bucket(address);
        for (thread_data* cur = b.head; cur != nullptr; cur = cur->next)
            if (cur->address.load(std::memory_order_relaxed) == address) ++count;
        const std::intptr_t token = callback({count, count > 0 && time_to_be_fair(b)});
        if (token == keep_parked) count = 0;
        thread_data* prev = nullptr;
        for (thread_data* cur = b.head; cur != nullptr && count > 0;) {
            thread_data* next = cur->next;
            if (cur->address.load(std::memory_order_relaxed) == address) {
                if (prev) prev->next = next;
                else b.head = next;
                if (b.tail == cur) b.tail = prev;
                cur->next = nullptr;
                cur->token = token;
                if (woken_tail) woken_tail->next = cur;
                else woken = cur;
                woken_tail = cur;
            } else {
                prev = cur;
            }
            cur = next;
        }
        b.lock.unlock();
    }
    // Read each link before releasing its thread: once released, it may park again and
    // reuse `next` for another queue.
    std::size_t released = 0;
    while (woken) {
        thread_data* next = woken->next;
        release_parked(*woken);
        woken = next;
        ++released;
    }
    return released;
}

}  // namespace detail

std::size_t unpark_all(const void* address) {
    return detail::unpark_all(address, [](unpark_all_result) -> std::intptr_t { return 0; });
}

table_stats stats() {
    table* t = get_table();
    return {t->size, thread_count.load(std::memory_order_relaxed), growth_count.load(std::memory_order_relaxed)};
}

}  // namespace contend::parking_lot
