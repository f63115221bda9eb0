// The pool's shared FIFO queues (the global queue and the time-sensitive one). Internal.
//
// A growable ring of task pointers behind a contend::mutex. A lock-free segmented queue
// (what .NET's ConcurrentQueue is) avoids the lock, but every producer and consumer still
// writes the same head or tail line; here the critical section is a few stores, and the
// lock, the length and the indices share one cache line, so a push or a pop moves that line
// and one slot's line, no more. The length is an atomic so that workers can see "empty" with
// one load, without the lock. Workers move items in batches (push_batch, pop_share: a
// worker's outbox and its share of the queue, pool_core.cpp), which cuts the lock holds
// that contend. A worker that ran dry may keep its own items out of the queue once for each
// item at the head (claim_bypass, pop_share_then_keep_or_push): the claim is a
// compare-and-swap on a line of its own, by head index, which goes on counting as the ring
// grows.
//
// The lock is tried a few times before lock() is called. contend::mutex's designee naps
// about 100 us when it finds the lock taken, which serializes two workers hammering one
// queue (good for the sustained benchmark) but leaves a worker asleep through a whole
// burst of short items; ten tries about 90 ns apart fixed that without losing the
// sustained case (docs/design/pool.md, "The global queue's lock tries"). The spacing is a time,
// not a count of pauses (a pause's length differs threefold between CPUs:
// platform/spin_wait.hpp), so the tries cover about 1 us on every CPU. A count of tries, not a clock-checked budget,
// because each try is one look at the lock's line and the whole wait is a handful of the holder's critical sections (a
// few stores each): a clock read per try would cost a fifth of the spacing, and a holder that is not running
// (preempted) is contend::mutex's business, which parks. Tries, not yields: 1 us is within one yield_interval(), the
// shortest a poll here goes without yielding.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "platform/spin_wait.hpp"

namespace contend::internal {

template <class T>
class global_queue {
public:
    global_queue() : slots_(std::make_unique<T[]>(initial_capacity)), mask_(initial_capacity - 1) {}
    global_queue(const global_queue&) = delete;
    global_queue& operator=(const global_queue&) = delete;

    void push(T item) {
        std::lock_guard guard(*this);
        append(&item, 1);
        length_.store(tail_ - head_, std::memory_order_release);
    }

    // Appends items[0..n) in that order under one lock hold.
    void push_batch(const T* items, std::size_t n) {
        if (n == 0) return;
        std::lock_guard guard(*this);
        append(items, n);
        length_.store(tail_ - head_, std::memory_order_release);
    }

    // Appends items[0..n) (none: n = 0), then takes a share of the queue from its head:
    // length / sharers + 1 items, at most `max`, all under one lock hold. Returns how many
    // it took (0 only if the queue was and stays empty). The share is reckoned on the
    // length under the lock, so `sharers` workers taking their share in turn leave some
    // for each.
    std::size_t push_and_pop_share(const T* items, std::size_t n, T* out, std::size_t sharers, std::size_t max) {
        if (n == 0 && length_.load(std::memory_order_acquire) == 0) return 0;
        std::lock_guard guard(*this);
        append(items, n);
        const std::size_t got = take_share(out, sharers, max);
        length_.store(tail_ - head_, std::memory_order_release);
        return got;
    }

    // A worker that ran dry with items[0..n) of its own: takes a share of the queue from its
    // head, as push_and_pop_share does but reckoned on the queue without its items, then
    // keeps its items (`kept`: they are not appended, the caller runs them after the share)
    // if the queue is now empty or it claims a bypass of the new head (claim_bypass), else
    // appends them. One lock hold. Returns how many it took.
    std::size_t pop_share_then_keep_or_push(const T* items, std::size_t n, T* out, std::size_t sharers, std::size_t max,
                                            bool& kept) {
        kept = false;
        if (n == 0 && length_.load(std::memory_order_acquire) == 0) return 0;
        std::lock_guard guard(*this);
        const std::size_t got = take_share(out, sharers, max);
        if (n > 0) {
            kept = head_ == tail_ || claim_head(head_);
            if (!kept) append(items, n);
        }
        length_.store(tail_ - head_, std::memory_order_release);
        return got;
    }

    // Whether a worker that ran dry may run its own posts before the items queued here: yes
    // when the queue is empty, and else once for each item at the head (the first caller to
    // see that head claims it; a later one, while that item is still at the head, is told
    // no). So an item at the head waits behind at most one such batch. Without the lock; a
    // snapshot, as the length is.
    bool claim_bypass() noexcept {
        if (length_.load(std::memory_order_acquire) == 0) return true;
        return claim_head(head_index_.load(std::memory_order_relaxed));
    }

    // False if empty.
    bool pop(T& out) {
        if (length_.load(std::memory_order_acquire) == 0) return false;
        std::lock_guard guard(*this);
        if (head_ == tail_) return false;
        out = slots_[head_++ & mask_];
        head_index_.store(head_, std::memory_order_relaxed);
        length_.store(tail_ - head_, std::memory_order_relaxed);
        return true;
    }

    std::size_t size() const noexcept { return length_.load(std::memory_order_relaxed); }
    bool empty() const noexcept { return size() == 0; }

    // BasicLockable for lock_guard: the queue's own lock, spun on before it may park.
    void lock() {
        if (lock_.try_lock()) return;
        const std::uint32_t relaxes = relaxes_for(try_spacing);
        for (int i = 1; i < lock_tries; ++i) {
            for (std::uint32_t p = 0; p < relaxes; ++p) cpu_relax();
            if (lock_.try_lock()) return;
        }
        lock_.lock();
    }
    void unlock() { lock_.unlock(); }

private:
    static constexpr std::size_t initial_capacity = 1024;
    // 10 tries 100 ns apart: about 1 us (see the top of the file).
    static constexpr int lock_tries = 10;
    static constexpr std::chrono::nanoseconds try_spacing{100};

    // Under the lock: length / sharers + 1 items from the head, at most `max`.
    std::size_t take_share(T* out, std::size_t sharers, std::size_t max) noexcept {
        const std::size_t want = std::min(max, (tail_ - head_) / std::max<std::size_t>(sharers, 1) + 1);
        std::size_t got = 0;
        while (got < want && head_ != tail_) out[got++] = slots_[head_++ & mask_];
        head_index_.store(head_, std::memory_order_relaxed);
        return got;
    }

    bool claim_head(std::size_t head) noexcept {
        const std::size_t mark = head + 1;  // 0: no claim yet
        std::size_t claimed = bypassed_.load(std::memory_order_relaxed);
        return claimed != mark && bypassed_.compare_exchange_strong(claimed, mark, std::memory_order_relaxed);
    }

    void append(const T* items, std::size_t n) {
        if (tail_ - head_ + n > mask_ + 1) grow(tail_ - head_ + n);
        for (std::size_t i = 0; i < n; ++i) slots_[tail_++ & mask_] = items[i];
    }

    // To the next power of two that holds `need` items.
    void grow(std::size_t need) {
        const std::size_t len = tail_ - head_;
        std::size_t cap = (mask_ + 1) * 2;
        while (cap < need) cap *= 2;
        auto bigger = std::make_unique<T[]>(cap);
        // The indices go on counting (claim_bypass tells heads apart by them).
        for (std::size_t i = 0; i < len; ++i) bigger[(head_ + i) & (cap - 1)] = slots_[(head_ + i) & mask_];
        slots_ = std::move(bigger);
        mask_ = cap - 1;
    }

    // One line for the lock, the length and the indices: a push or pop touches this line and
    // one slot's line, nothing else.
    alignas(cache_line_size) contend::mutex lock_;
    internal::atomic<std::size_t> length_{0};
    std::unique_ptr<T[]> slots_;
    std::size_t mask_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
    internal::atomic<std::size_t> head_index_{0};  // head_, for claim_bypass
    // The head (+ 1) that a bypass was last claimed for. Its own line: a claim writes it,
    // and the lock's line stays with the worker that holds it.
    alignas(cache_line_size) internal::atomic<std::size_t> bypassed_{0};
};

}  // namespace contend::internal
