// The pool's shared FIFO queues (the global queue and the time-sensitive one). Internal.
//
// A growable ring of task pointers behind a contend::mutex. A lock-free segmented queue
// (what .NET's ConcurrentQueue is) avoids the lock, but every producer and consumer still
// writes the same head or tail line; here the critical section is a few stores, and the
// lock, the length and the indices share one cache line, so a push or a pop moves that line
// and one slot's line, no more. The length is an atomic so that workers can see "empty" with
// one load, without the lock.
//
// The lock is tried a few times before lock() is called. contend::mutex's designee naps
// about 100 us when it finds the lock taken, which serializes two workers hammering one
// queue (good for the sustained benchmark) but leaves a worker asleep through a whole
// burst of short items: in the lab's pool suite (AMD EPYC VM, 2 workers) a plain lock()
// gave 1,786 items/ms at burst:64 against the mutex pool's 4,200; ten tries first gave
// 7,100 there and kept sustained at 2x the mutex pool. Workers also take a batch per
// pop (thread_pool.cpp), which cuts the pops that contend.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/mutex.hpp"

namespace contend::internal {

template <class T>
class global_queue {
public:
    global_queue() : slots_(std::make_unique<T[]>(initial_capacity)), mask_(initial_capacity - 1) {}
    global_queue(const global_queue&) = delete;
    global_queue& operator=(const global_queue&) = delete;

    void push(T item) {
        std::lock_guard guard(*this);
        if (tail_ - head_ > mask_) grow();
        slots_[tail_++ & mask_] = item;
        length_.store(tail_ - head_, std::memory_order_release);
    }

    // False if empty.
    bool pop(T& out) {
        if (length_.load(std::memory_order_acquire) == 0) return false;
        std::lock_guard guard(*this);
        if (head_ == tail_) return false;
        out = slots_[head_++ & mask_];
        length_.store(tail_ - head_, std::memory_order_relaxed);
        return true;
    }

    // Takes up to `max` items (at least one if any) under one lock hold. Returns how many.
    std::size_t pop_batch(T* out, std::size_t max) {
        if (length_.load(std::memory_order_acquire) == 0) return 0;
        std::lock_guard guard(*this);
        std::size_t n = 0;
        while (n < max && head_ != tail_) out[n++] = slots_[head_++ & mask_];
        length_.store(tail_ - head_, std::memory_order_relaxed);
        return n;
    }

    std::size_t size() const noexcept { return length_.load(std::memory_order_relaxed); }
    bool empty() const noexcept { return size() == 0; }

    // BasicLockable for lock_guard: the queue's own lock, spun on before it may park.
    void lock() {
        for (int i = 0; i < spin_before_lock; ++i) {
            if (lock_.try_lock()) return;
            for (int p = 0; p < 4; ++p) cpu_relax();
        }
        lock_.lock();
    }
    void unlock() { lock_.unlock(); }

private:
    static constexpr std::size_t initial_capacity = 1024;
    static constexpr int spin_before_lock = 10;  // tries, 4 pauses apart

    void grow() {
        const std::size_t cap = mask_ + 1;
        auto bigger = std::make_unique<T[]>(cap * 2);
        for (std::size_t i = 0; i < cap; ++i) bigger[i] = slots_[(head_ + i) & mask_];
        slots_ = std::move(bigger);
        mask_ = cap * 2 - 1;
        tail_ = cap;
        head_ = 0;
    }

    // One line for the lock, the length and the indices: a push or pop touches this line and
    // one slot's line, nothing else.
    alignas(cache_line_size) contend::mutex lock_;
    std::atomic<std::size_t> length_{0};
    std::unique_ptr<T[]> slots_;
    std::size_t mask_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
};

}  // namespace contend::internal
