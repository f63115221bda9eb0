// Compact thread ids: small integers, dense, reused after a thread exits (unless it
// abandoned a lock, see locks_held).
// Internal. The thin lock stores the owner's id in 16 bits of a header word, so ids are
// handed out lowest-free-first, and the threads of an ordinary program fit. Ids are not
// capped: a process with more live threads than that (Linux allows it: threads-max is
// commonly well above 65,535) gets larger ids, and thin_lock takes its lock through
// the fat lock for those threads (thin_lock.hpp); no other user of the ids cares.
#pragma once

#include <cstdint>

namespace contend::internal {

// The largest id that fits thin_lock's 16-bit owner field (it keeps 0xFFFF for the others).
inline constexpr std::uint32_t max_compact_thread_id = 0xFFFE;

// Out of line: allocates on first call in a thread; returned to the pool at thread exit,
// unless the thread still holds a lock that records owners by id (below).
std::uint32_t acquire_compact_thread_id() noexcept;

// Entries the calling thread holds, re-entries counted, in the locks that record their owner
// by compact id (thin_lock, monitor): each successful lock or enter adds one, each unlock or
// exit takes one away. A thread that exits with this above zero has abandoned a lock; its id
// is then never handed out again, so that no later thread finds itself the owner of a lock
// it never took (it gets synchronization_error there, as any non-owner does, and the lock
// stays held, as any lock whose owner vanished). One plain add per entry and exit. 64 bits:
// a 32-bit count wrapped at 2^32 entries, and a thread holding that many passed for one
// holding none.
inline thread_local std::uint64_t locks_held = 0;
// The thin lock this thread last took free on the inline path and still holds exactly as it
// took it (thin_lock.hpp, taken_free), or null. That entry is not in locks_held: the inline
// paths would otherwise add and subtract a thread-local count on every lock and unlock, a
// chain through memory that cost a third of an uncontended pair (docs/design/thin_lock.md).
// A thread holds a lock when locks_held is above zero or this is set.
inline thread_local const void* thin_taken_free = nullptr;

// The calling thread's id, >= 1. Zero is never an id, so a header word can use it for "no owner".
inline std::uint32_t compact_thread_id() noexcept {
    thread_local std::uint32_t id = 0;
    if (id == 0) [[unlikely]]
        id = acquire_compact_thread_id();
    return id;
}

// Tests only: gives the calling thread, which has no id yet, the id `id`, as if that many
// threads were alive, so that a test reaches the ids past the thin lock's 16 bits without
// starting 65,536 threads. Refused (false) if the thread has an id, or unless `id` lies
// beyond every id handed out so far (the test keeps the ids it assigns distinct); the id is
// not kept for reuse once its thread exits.
bool assign_compact_thread_id_for_testing(std::uint32_t id) noexcept;

// Number of ids currently held by live threads (for tests and diagnostics).
std::uint32_t live_compact_thread_ids() noexcept;

// Number of ids retired because their thread exited holding a lock (locks_held above 0, or
// thin_taken_free set).
std::uint32_t retired_compact_thread_ids() noexcept;

}  // namespace contend::internal
