// Visible readers: one cache line per thread in which the thread marks the reader-writer locks
// it reads, so that readers of a read-mostly lock write only their own line instead of a
// count they all share (the BRAVO scheme: docs/references.md, bravo-rw;
// docs/design/shared_mutex.md). Internal: contend::shared_mutex's fast read path, inline in
// its header, reads this thread's row.
//
// Contract:
// - A thread's row is claimed at its first read of any shared_mutex and given back when the
//   thread exits (its slots cleared; a thread that exits holding a read through its slot gives
//   it up; one held exclusively, in the lock's writer's byte, stays held, as a write would).
// - Slot i of a row holds nullptr (empty), `hint` (empty; the last lock of this index that the
//   thread read was biased towards readers, so the next read tries its slot first),
//   `exclusive_hint` (empty; that lock's reads were being taken exclusively), the address of a
//   lock the thread holds a read of through the slot, or that address tagged (a read held
//   exclusively, or a sampled read through the count: the slot then holds no read). Only the row's owner writes a slot;
//   writers of a lock scan slot index_of(lock) of every claimed row.
// - A lock's index is the same in every row, so a writer reads one word per thread.
//
// Costs: a slot is 8 bytes, a row 64, a claim and a release a CAS on a 64-row chunk's mask; a
// scan one load per claimed row (a cache miss for each row whose owner used it since).
#pragma once

#include <cstddef>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/function_ref.hpp"

namespace contend::internal {

struct alignas(64) reader_row {
    static constexpr std::size_t slots = 7;
    static const void* hint() noexcept { return reinterpret_cast<const void*>(std::uintptr_t{1}); }
    // Empty; the last look of this thread at a lock of this index found its reads taken
    // exclusively (shared_mutex.hpp, "Exclusive reads"), so the next read tries that first.
    static const void* exclusive_hint() noexcept { return reinterpret_cast<const void*>(std::uintptr_t{2}); }
    // A lock's address with a tag in its low bits (locks are at least 4-byte aligned): the
    // thread holds a read of it taken exclusively (1) or a sampled read through its count (2).
    static const void* tagged(const void* lock, std::uintptr_t tag) noexcept {
        return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(lock) | tag);
    }

    // Which slot a lock's reads use: a multiplicative hash, so that locks at a fixed stride
    // (one per structure) spread over the slots.
    static std::size_t index_of(const void* lock) noexcept {
        const std::uint64_t h =
            static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(lock) >> 3) * 0x9E3779B97F4A7C15ull;
        return static_cast<std::size_t>(((h >> 32) * slots) >> 32);
    }
    internal::atomic<const void*>& slot_for(const void* lock) noexcept { return slot[index_of(lock)]; }

    internal::atomic<const void*> slot[slots] = {};
    // A thread's reads through a lock's count look whether to bias the lock towards readers
    // once per this many (every time in the model-checking build, so the models reach it).
#if CONTEND_MODEL_CHECK
    static constexpr std::uint8_t look_interval = 1;
#else
    static constexpr std::uint8_t look_interval = 16;
#endif
    // One look in this many times a read (shared_mutex.cpp, lock_shared_sampled).
#if CONTEND_MODEL_CHECK
    // (In the models, never: the judgement is inert there, the models reach exclusive reads
    // through a test hook, and a timed read's steps would lengthen every schedule.)
    static constexpr std::uint8_t sample_interval = 255;
#else
    static constexpr std::uint8_t sample_interval = 8;
#endif
    // The owner's own countdowns to its next look and its next timed read (shared_mutex.cpp).
    std::uint8_t countdown = look_interval;
    std::uint8_t sample_countdown = sample_interval;
    // A sampled read's verdict time: the low 32 bits of the sample clock by which its section
    // must end to count as short (shared_mutex.cpp, judge_read_section).
    std::uint32_t sample_until = 0;
};
static_assert(sizeof(reader_row) == 64);

// This thread's row, or nullptr before its first read (and after it exits). A plain pointer
// with no initializer to run, so reading it is one load from the thread's block.
extern thread_local constinit reader_row* this_thread_reader_row __attribute__((tls_model("initial-exec")));

// Claims a row for this thread (its first read); nullptr if the thread is exiting or no
// memory is left (its reads then go through the count).
reader_row* claim_reader_row() noexcept;

inline reader_row* reader_row_for_read() noexcept {
    reader_row* r = this_thread_reader_row;
    if (r == nullptr) [[unlikely]]
        r = claim_reader_row();
    return r;
}

// Whether some thread's row holds a read of `lock` now.
bool any_reader_slot_holds(const void* lock) noexcept;
// How many rows threads hold now (a snapshot, for tests).
std::size_t claimed_reader_rows() noexcept;
// How many rows hold a read of `lock` now (a snapshot, for diagnostics).
std::uint32_t reader_slots_holding(const void* lock) noexcept;
// Waits while busy(): polls, then sleeps in growing steps (up to 100 us: the readers' sections
// may be long, and nothing wakes this wait). False if `until` passed first.
bool wait_while(function_ref<bool()> busy, deadline until) noexcept;

}  // namespace contend::internal
