// A worker's own queue: the owner pushes and pops at the bottom without a lock (LIFO: the
// item it just made is hot in its cache), thieves take from the top (FIFO: the oldest,
// likely largest, piece of work). Internal to the pool.
//
// The Chase-Lev dynamic circular deque (Chase and Lev, "Dynamic Circular Work-Stealing
// Deque", SPAA 2005) with the memory orders of Le, Pop, Cohen and Zappa Nardelli, "Correct
// and Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013), which corrected the
// original's reliance on sequential consistency (see docs/references.md, chase-lev-weak-memory).
// Two deviations, both stronger than the paper: push publishes `bottom` with a release store
// instead of a release fence and a relaxed store (the same code on x86, and a happens-before
// edge ThreadSanitizer can see), and steal loads the buffer with acquire, not consume.
//
// Buffers grow by doubling and are never freed while the deque lives: a thief may still be
// reading an old one. The owner alone pushes, pops and grows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

template <class T>
class work_stealing_deque {
    static_assert(std::is_trivially_copyable_v<T>, "slots are atomics: pointers or small values");

public:
    explicit work_stealing_deque(std::size_t initial_capacity = 256) {
        std::size_t cap = 1;
        while (cap < initial_capacity) cap <<= 1;
        buffers_.push_back(std::make_unique<buffer>(cap));
        buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
    }
    work_stealing_deque(const work_stealing_deque&) = delete;
    work_stealing_deque& operator=(const work_stealing_deque&) = delete;

    // Owner only.
    void push(T item) {
        const std::int64_t b = bottom_->load(std::memory_order_relaxed);
        const std::int64_t t = top_->load(std::memory_order_acquire);
        buffer* a = buffer_.load(std::memory_order_relaxed);
        if (b - t > static_cast<std::int64_t>(a->mask)) a = grow(a, t, b);
        a->put(b, item);
        bottom_->store(b + 1, std::memory_order_release);
    }

    // Owner only. False if empty.
    bool pop(T& out) {
        const std::int64_t b = bottom_->load(std::memory_order_relaxed) - 1;
        buffer* a = buffer_.load(std::memory_order_relaxed);
        bottom_->store(b, std::memory_order_relaxed);
        // The store of bottom must be visible before top is read, or a thief and the owner
        // could both take the last item (the store-load order only a full fence gives).
        internal::thread_fence(std::memory_order_seq_cst);
        std::int64_t t = top_->load(std::memory_order_relaxed);
        if (t > b) {  // empty
            bottom_->store(b + 1, std::memory_order_relaxed);
            return false;
        }
        out = a->get(b);
        if (t == b) {
            // The last item: race the thieves for it through top.
            bool won;
            if (CONTEND_MUTATION(deque_pop_takes_last_by_load_and_store)) {
                won = top_->load(std::memory_order_seq_cst) == t;
                if (won) top_->store(t + 1, std::memory_order_seq_cst);
            } else {
                won = top_->compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed);
            }
            bottom_->store(b + 1, std::memory_order_relaxed);
            return won;
        }
        return true;
    }

    enum class steal_result { success, empty, lost_race };

    // Any thread.
    steal_result steal(T& out) {
        std::int64_t t = top_->load(std::memory_order_acquire);
        internal::thread_fence(std::memory_order_seq_cst);
        const std::int64_t b = bottom_->load(std::memory_order_acquire);
        if (t >= b) return steal_result::empty;
        buffer* a = buffer_.load(std::memory_order_acquire);
        const T item = a->get(t);
        if (CONTEND_MUTATION(deque_steal_by_load_and_store)) {
            if (top_->load(std::memory_order_seq_cst) != t) return steal_result::lost_race;
            top_->store(t + 1, std::memory_order_seq_cst);
        } else if (!top_->compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
            return steal_result::lost_race;
        }
        out = item;
        return steal_result::success;
    }

    // A snapshot; exact only when no one else is using the deque.
    std::size_t size() const noexcept {
        const std::int64_t b = bottom_->load(std::memory_order_relaxed);
        const std::int64_t t = top_->load(std::memory_order_relaxed);
        return b > t ? static_cast<std::size_t>(b - t) : 0;
    }
    bool empty() const noexcept { return size() == 0; }

private:
    struct buffer {
        explicit buffer(std::size_t capacity) : mask(capacity - 1), slots(new internal::atomic<T>[capacity]) {}
        std::size_t mask;
        std::unique_ptr<internal::atomic<T>[]> slots;
        T get(std::int64_t i) const noexcept {
            return slots[static_cast<std::size_t>(i) & mask].load(std::memory_order_relaxed);
        }
        void put(std::int64_t i, T v) noexcept {
            slots[static_cast<std::size_t>(i) & mask].store(v, std::memory_order_relaxed);
        }
    };

    buffer* grow(buffer* old, std::int64_t t, std::int64_t b) {
        auto bigger = std::make_unique<buffer>((old->mask + 1) * 2);
        for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
        buffer* raw = bigger.get();
        buffers_.push_back(std::move(bigger));  // the old one stays: thieves may hold it
        buffer_.store(raw, std::memory_order_release);
        return raw;
    }

    cache_padded<internal::atomic<std::int64_t>> top_;  // thieves' end (zero: C++20 atomics value-initialize)
    cache_padded<internal::atomic<std::int64_t>> bottom_;  // owner's end
    internal::atomic<buffer*> buffer_{nullptr};
    std::vector<std::unique_ptr<buffer>> buffers_;  // owner only
};

}  // namespace contend::internal
