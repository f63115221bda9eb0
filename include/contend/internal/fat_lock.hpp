// The fat lock of an inflated contend::thin_lock, and where to find it from the index in
// the thin lock's word. Internal: in a public header only so that thin_lock's lock() and
// unlock() can take an inflated lock inline (src/sync_table.hpp has the table's rules).
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/cache_padded.hpp"
#include "contend/condition_variable.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/waiter_slots.hpp"
#include "contend/mutex.hpp"

namespace contend::internal {

// A line of its own: fat locks of unrelated thin_locks sit side by side in the table. The
// owner shares the mutex's line: a thread that has just taken the mutex writes it at no
// cost, and putting it on a line apart cost the counter suite's 64 workers more than it
// saved (a waiter's recursion check then misses on a second line per handoff).
struct alignas(cache_line_size) fat_lock {
    contend::mutex m;  // held while some thread owns the lock
    contend::condition_variable cv;  // wait / notify
    // The owner's compact thread id, 0 when free, or idle_mark: a sweep found it free and no
    // thread has acquired it since.
    internal::atomic<std::uint32_t> owner{0};
    std::uint32_t waiters = 0;  // threads inside wait() (under m): such a lock is never deflated
    // Extra entries by the owner; 0 whenever the lock is free. 64 bits, which no program
    // reaches: a 32-bit count wrapped at 2^32 entries, and the next unlock released the lock.
    std::uint64_t recursion = 0;
    internal::atomic<std::uint32_t>* word = nullptr;  // the thin word that names this entry (table's lock)
    // m's waiter slot (internal/waiter_slots.hpp), found once when the entry is first used:
    // the inline unlock then loads it instead of hashing m's address.
    const internal::atomic<std::uint32_t>* slot = nullptr;
};

inline constexpr std::uint32_t idle_mark = 0x8000'0000u;  // no compact thread id has this bit

// The first flat_fat_locks entries are one static array, so finding one from a word is an
// add to a link-time address, with no load between reading the word and taking the lock;
// later entries live in chunks (src/sync_table.cpp). The array is zero-initialized (BSS):
// the operating system backs only the pages that fat locks have used.
inline constexpr std::uint32_t flat_fat_locks = 1u << 16;  // 4 MiB of address space
extern fat_lock flat_fat_lock_table[flat_fat_locks];
fat_lock& chunked_fat_lock(std::uint32_t index) noexcept;

inline fat_lock& fat_lock_at(std::uint32_t index) noexcept {
    if (index < flat_fat_locks) [[likely]]
        return flat_fat_lock_table[index];
    return chunked_fat_lock(index);
}

}  // namespace contend::internal
