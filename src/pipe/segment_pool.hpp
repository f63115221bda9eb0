// The pipe's spare segments: a FIFO for exactly one producer and one consumer. Internal.
//
// The reader returns segments it has consumed at one end, the writer takes them at the
// other (the Pipelines contention PR made its pool FIFO for this reason: a LIFO stack has
// both sides on its top, a FIFO keeps them apart; see docs/references.md,
// dotnet-runtime-pipelines-contention). Neither side takes the pipe's lock for it: a bounded
// ring with one atomic index per side, each written only by its side. (The writer then keeps
// what it takes in a stack of its own and reuses the newest first: pipe.cpp, rent.)
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"

namespace contend::internal {

template <class T>
class spsc_pool {
public:
    explicit spsc_pool(std::size_t capacity) : capacity_(capacity + 1), slots_(new T[capacity + 1]) {}
    spsc_pool(const spsc_pool&) = delete;
    spsc_pool& operator=(const spsc_pool&) = delete;

    // Producer only. False when full (the caller frees the item).
    bool push(T item) noexcept {
        const std::size_t t = tail_->load(std::memory_order_relaxed);
        const std::size_t next = t + 1 == capacity_ ? 0 : t + 1;
        if (next == head_->load(std::memory_order_acquire)) return false;
        slots_[t] = item;
        tail_->store(next, std::memory_order_release);
        return true;
    }

    // Consumer only. False when empty.
    bool pop(T& out) noexcept {
        const std::size_t h = head_->load(std::memory_order_relaxed);
        if (h == tail_->load(std::memory_order_acquire)) return false;
        out = slots_[h];
        head_->store(h + 1 == capacity_ ? 0 : h + 1, std::memory_order_release);
        return true;
    }

    std::size_t size() const noexcept {
        const std::size_t h = head_->load(std::memory_order_acquire);
        const std::size_t t = tail_->load(std::memory_order_acquire);
        return t >= h ? t - h : t + capacity_ - h;
    }

private:
    const std::size_t capacity_;
    std::unique_ptr<T[]> slots_;
    cache_padded<internal::atomic<std::size_t>> head_;  // the consumer's (writer's) end
    cache_padded<internal::atomic<std::size_t>> tail_;  // the producer's (reader's) end
};

}  // namespace contend::internal
