// The pool's shared FIFO queues (the global queue and the time-sensitive one). Internal.
//
// A growable ring of task pointers behind a contend::mutex. A lock-free segmented queue
// (what .NET's ConcurrentQueue is) avoids the lock, but every producer and consumer still
// writes the same head or tail line; with a one-byte parking mutex the critical section is a
// few stores, so the lock costs little more than those shared lines do, and the ring is
// simple enough to be obviously right. The length is kept in an atomic beside it so that
// workers can see "empty" with one load, without taking the lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "contend/cache_padded.hpp"
#include "contend/mutex.hpp"

namespace contend::internal {

template <class T>
class global_queue {
public:
    global_queue() : slots_(std::make_unique<T[]>(initial_capacity)), mask_(initial_capacity - 1) {}
    global_queue(const global_queue&) = delete;
    global_queue& operator=(const global_queue&) = delete;

    void push(T item) {
        std::lock_guard guard(lock_);
        if (tail_ - head_ > mask_) grow();
        slots_[tail_++ & mask_] = item;
        length_->store(tail_ - head_, std::memory_order_release);
    }

    // False if empty.
    bool pop(T& out) {
        if (length_->load(std::memory_order_acquire) == 0) return false;
        std::lock_guard guard(lock_);
        if (head_ == tail_) return false;
        out = slots_[head_++ & mask_];
        length_->store(tail_ - head_, std::memory_order_relaxed);
        return true;
    }

    std::size_t size() const noexcept { return length_->load(std::memory_order_relaxed); }
    bool empty() const noexcept { return size() == 0; }

private:
    static constexpr std::size_t initial_capacity = 1024;

    void grow() {
        const std::size_t cap = mask_ + 1;
        auto bigger = std::make_unique<T[]>(cap * 2);
        for (std::size_t i = 0; i < cap; ++i) bigger[i] = slots_[(head_ + i) & mask_];
        slots_ = std::move(bigger);
        mask_ = cap * 2 - 1;
        tail_ = cap;
        head_ = 0;
    }

    cache_padded<std::atomic<std::size_t>> length_;
    alignas(cache_line_size) contend::mutex lock_;
    std::unique_ptr<T[]> slots_;
    std::size_t mask_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
};

}  // namespace contend::internal
