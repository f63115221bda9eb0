// Compact thread ids: small integers, dense, reused after a thread exits.
// Internal. The thin lock stores the owner's id in 16 bits of a header word, so ids are
// handed out lowest-free-first, and 65,535 live threads fit. Ids are not capped: past that,
// a thread gets an id above max_compact_thread_id, and thin_lock does not check for one
// (its word would misread such an owner); no other user of the ids cares.
#pragma once

#include <cstdint>

namespace contend::internal {

inline constexpr std::uint32_t max_compact_thread_id = 0xFFFF;

// Out of line: allocates on first call in a thread; returned to the pool at thread exit.
std::uint32_t acquire_compact_thread_id() noexcept;

// The calling thread's id, >= 1. Zero is never an id, so a header word can use it for "no owner".
inline std::uint32_t compact_thread_id() noexcept {
    thread_local std::uint32_t id = 0;
    if (id == 0) [[unlikely]]
        id = acquire_compact_thread_id();
    return id;
}

// Number of ids currently held by live threads (for tests and diagnostics).
std::uint32_t live_compact_thread_ids() noexcept;

}  // namespace contend::internal
