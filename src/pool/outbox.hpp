// A worker's outbox: the items it post()s on its way to the global queue, gathered so that
// they cross to the shared queue in batches instead of one lock hold (and one transfer of
// the queue's line) each. Internal to the pool; the rules for when it empties, and why no
// item waits in it while a worker is idle, are at the top of pool_core.cpp.
//
// The owner appends at the tail without an atomic read-modify-write (a slot store and a
// release store of the tail, both on lines it owns). Anyone takes from the head, the oldest
// items first, with a compare-and-swap of the head: the owner when it moves its outbox to
// the global queue, an idle worker that steals. So an item in an outbox is as visible as
// one in a worker's deque: a worker that looks for work finds it and can run it.
//
// Why a taker never reads a slot the owner is rewriting: the owner writes slot `t` only
// while t - head < capacity for a head it read (acquire), and a taker's head CAS from h
// succeeds only if no one moved the head since it read h. The taker read the tail t' >= h
// after h; the slots it copied are [h, h + n), n <= t' - h, and while the head is still h
// the owner writes only indices in [t', h + capacity), none of which is congruent to one
// in [h, t') modulo the capacity. A CAS that fails discards what it copied.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

template <class T, std::size_t Capacity>
class worker_outbox {
    static_assert(Capacity > 0 && (Capacity & (Capacity - 1)) == 0, "a power of two: the index is a mask");

public:
    static constexpr std::size_t capacity = Capacity;

    // Owner only. False, nothing stored, when full: the owner empties it first.
    bool push(T item) noexcept {
        const std::uint64_t t = ends_.tail.load(std::memory_order_relaxed);
        if (t - ends_.head.load(std::memory_order_acquire) >= Capacity) return false;
        slots_[t & (Capacity - 1)].store(item, std::memory_order_relaxed);
        ends_.tail.store(t + 1, std::memory_order_release);  // publishes the slot, and the item it points to
        return true;
    }

    // Any thread. Takes up to min(max, Capacity) of the oldest items into `out`, in the
    // order they were pushed; returns how many (0: empty). Never more than Capacity, whatever
    // `max` says: a caller may size `max` from a size() that was stale by the time it took,
    // and a head read before other takers moved it can see a tail more than Capacity ahead
    // (that CAS fails, but the copies into `out` have been made by then).
    std::size_t take(T* out, std::size_t max) noexcept {
        std::uint64_t h = ends_.head.load(std::memory_order_acquire);
        for (;;) {
            const std::uint64_t t = ends_.tail.load(std::memory_order_acquire);
            if (t <= h) return 0;
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>({t - h, std::uint64_t{max}, std::uint64_t{Capacity}}));
            for (std::size_t i = 0; i < n; ++i)
                out[i] = slots_[(h + i) & (Capacity - 1)].load(std::memory_order_relaxed);
            // Release: the copies above are done before the owner may reuse their slots.
            if (CONTEND_MUTATION(outbox_take_by_load_and_store)) {
                const std::uint64_t now = ends_.head.load(std::memory_order_acquire);
                if (now == h) {
                    ends_.head.store(h + n, std::memory_order_release);
                    return n;
                }
                h = now;
                continue;
            }
            if (ends_.head.compare_exchange_weak(h, h + n, std::memory_order_acq_rel, std::memory_order_acquire))
                return n;
        }
    }

    // A snapshot, at most Capacity; exact for the owner as to what it pushed, others may take
    // meanwhile. (The head is read before the tail: takes and pushes between the two reads
    // would otherwise show more than the outbox can hold.)
    std::size_t size() const noexcept {
        const std::uint64_t h = ends_.head.load(std::memory_order_acquire);
        const std::uint64_t t = ends_.tail.load(std::memory_order_acquire);
        return t > h ? static_cast<std::size_t>(std::min<std::uint64_t>(t - h, Capacity)) : 0;
    }
    bool empty() const noexcept { return size() == 0; }

private:
    // Both ends on one line: the owner's push reads the head and writes the tail, and an
    // idle worker's look at this outbox reads one line, not two.
    struct alignas(cache_line_size) ends {
        internal::atomic<std::uint64_t> head{0};
        internal::atomic<std::uint64_t> tail{0};
    };
    ends ends_;
    alignas(cache_line_size) internal::atomic<T> slots_[Capacity];  // C++20: value-initialized
};

}  // namespace contend::internal
