// The sync table: fat locks for inflated thin_locks, addressed by a 31-bit index that fits
// in the thin lock's word, and the sweeps that deflate idle ones. Internal.
//
// Entries live in chunks that are never freed, so an index read from a word always names
// valid memory, even after the entry was deflated or released and handed to another lock;
// a released entry goes on a free list and is reused, so creating, inflating and
// destroying locks forever keeps the table at the peak number of live fat locks.
//
// Deflation (sync_table_sweep): a sweep marks every unowned fat lock idle (a mark in its
// owner word, which any acquisition overwrites). A fat lock that the next sweep still
// finds marked, whose mutex it can take at once, and that nobody waits on (wait()) is
// deflated: under its mutex, the sweep stores 0 (thin, free) into the thin lock's word, and
// the entry returns to the free list. A thread that read the word before that store and
// then takes the entry's mutex finds, under the mutex, that the word no longer names the
// entry, lets go and starts over (src/thin_lock.cpp, fat_enter): the sweep needs no thread
// to stop. Background sweeps run on a thread of their own, started by the first inflation.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/fat_lock.hpp"

namespace contend::internal {

// Takes a free entry for the thin lock whose word is `word`, already held by `owner` (its
// mutex locked, owner set, recursion 0), and returns its index. Starts the background
// sweeps on first use.
std::uint32_t sync_table_allocate(internal::atomic<std::uint32_t>* word, std::uint32_t owner);
inline fat_lock& sync_table_at(std::uint32_t index) noexcept { return fat_lock_at(index); }
// Tests only: the next `count` allocations throw std::bad_alloc, as they would with no
// memory left for the table's lists or a new chunk of entries. Returns how many failures
// the previous call had left unused.
std::uint32_t sync_table_fail_allocations_for_testing(std::uint32_t count) noexcept;
// The thin lock whose word is `word` is being destroyed (nobody uses it): if the word still
// names an entry, the entry returns to the free list.
void sync_table_release(internal::atomic<std::uint32_t>& word) noexcept;

// One sweep: deflates every fat lock that the previous sweep marked idle and that no thread
// has acquired since (nor holds, nor waits on), and marks the unowned rest. Returns how many
// it deflated. `marked_only` false deflates every unowned, unwaited fat lock at once (tests).
std::size_t sync_table_sweep(bool marked_only = true);
// Background sweeps every `interval` while fat locks exist; zero stops them.
void sync_table_set_sweep_interval(std::chrono::milliseconds interval);
std::chrono::milliseconds sync_table_sweep_interval() noexcept;

struct sync_table_counts {
    std::size_t live = 0;  // entries allocated and not released
    std::size_t capacity = 0;  // entries ever created (the table's size)
    std::uint64_t inflations = 0;  // allocations so far
    std::uint64_t deflations = 0;  // entries returned by sweeps (not by destruction)
    std::size_t last_sweep_visits = 0;  // entries the latest sweep looked at (the live ones)
};
sync_table_counts sync_table_stats() noexcept;

}  // namespace contend::internal
