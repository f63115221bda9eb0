// Process-wide count of contended acquisitions, kept in per-thread stripes so that
// counting never makes two threads fight over one line (the fast paths do not count at all).
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/thread_id.hpp"

namespace contend::internal {

inline constexpr std::size_t contention_stripes = 64;
extern cache_padded<internal::atomic<std::uint64_t>> contention_counts[contention_stripes];

inline void count_contention() noexcept {
    contention_counts[compact_thread_id() % contention_stripes]->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace contend::internal
