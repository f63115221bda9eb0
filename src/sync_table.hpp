// The sync table: fat locks for inflated thin_locks, addressed by a 31-bit index that fits
// in the thin lock's word. Internal.
//
// Entries live in chunks that are never freed, so an index read from a word always names
// valid memory; a released entry goes on a free list and is reused, so creating, inflating
// and destroying locks forever keeps the table at the peak number of live fat locks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "contend/condition_variable.hpp"
#include "contend/mutex.hpp"

namespace contend::internal {

struct fat_lock {
    contend::mutex m;  // held while some thread owns the lock
    std::atomic<std::uint32_t> owner{0};  // compact thread id of the owner, 0 when free
    std::uint32_t recursion = 0;  // extra entries by the owner; touched only by the owner
    contend::condition_variable cv;  // wait / notify
};

// Takes a free entry (owner 0, recursion 0, mutex unlocked) and returns its index.
std::uint32_t sync_table_allocate();
fat_lock& sync_table_at(std::uint32_t index) noexcept;
// Returns an entry; its mutex must be unlocked and nobody may use the index again.
void sync_table_release(std::uint32_t index) noexcept;

struct sync_table_counts {
    std::size_t live = 0;  // entries allocated and not released
    std::size_t capacity = 0;  // entries ever created (the table's size)
    std::uint64_t inflations = 0;  // allocations so far
};
sync_table_counts sync_table_stats() noexcept;

}  // namespace contend::internal
