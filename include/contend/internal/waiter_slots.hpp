// The waiter slots, read side: how contend::mutex and thin_lock unlock with a plain store.
// Internal. The writers (waiters registering, the fenced unlock path) are in
// src/waiter_registry.hpp; src/waiter_registry.cpp says why the plain store cannot lose a
// wake-up.
//
// A one-byte mutex has no room for a waiter count, and a lock whose unlock must notice
// "someone is parked" would normally pay a second locked instruction (CAS or exchange) to
// release, which about doubles an uncontended lock+unlock (docs/design/unlock.md). Instead, a thread about to park
// registers in a slot of this table, chosen by hashing the lock's address, and the unlock fast path is
//     store(state, 0, release); compiler barrier; load(slot)
// A store followed by a load needs a full fence to be a correct Dekker handshake; the
// registering thread supplies it for both sides with an asymmetric process-wide barrier
// (Linux membarrier), and only when a slot turns from idle to busy. Where no such barrier
// exists (or before the library has initialized), slots lack the `light` bit, so unlocks
// take the fenced slow path: a locked RMW, then a load.
//
// This header gives read access only: `waiter_slots` is a const table, and only the
// registry (a friend) writes its words.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "contend/internal/atomic.hpp"

namespace contend::internal {

inline constexpr std::size_t waiter_slot_bits = 12;
inline constexpr std::size_t waiter_slot_count = std::size_t{1} << waiter_slot_bits;

// Slot word:
//   bit 31 light   : unlocks may release with a plain store (heavy barriers work here)
//   bit 30 armed   : a heavy barrier has completed since the slot was last exactly `light`,
//                    so a new waiter need not issue another. An armed slot is never exactly
//                    `light`, so meanwhile every unlock takes the fenced path.
//   bits 20..29    : unlocks that found the slot armed but idle; after 1,023 of them the
//                    slot drops back to `light` (hysteresis: a lock contended on and off
//                    does not pay a barrier, tens of microseconds, per episode)
//   bits 0..19     : threads registered as (about to be) parked on an address hashing here
// Zero-initialized (no `light`) is the safe state: every unlock takes the fenced path.
inline constexpr std::uint32_t waiter_slot_light = 0x8000'0000u;
inline constexpr std::uint32_t waiter_slot_armed = 0x4000'0000u;
inline constexpr std::uint32_t waiter_slot_idle_unit = 0x0010'0000u;
inline constexpr std::uint32_t waiter_slot_idle_mask = 0x3FF0'0000u;
inline constexpr std::uint32_t waiter_slot_count_mask = 0x000F'FFFFu;

inline std::size_t waiter_slot_index(const void* address) noexcept {
    // Fibonacci hashing: neighbouring one-byte mutexes land in different slots.
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> (64 - waiter_slot_bits));
}

struct waiter_slot_writer;  // src/waiter_registry.cpp: the only code that writes a slot

class waiter_slot_table {
public:
    constexpr waiter_slot_table() noexcept = default;
    waiter_slot_table(const waiter_slot_table&) = delete;
    waiter_slot_table& operator=(const waiter_slot_table&) = delete;

    const internal::atomic<std::uint32_t>& operator[](std::size_t index) const noexcept { return slots_[index]; }

private:
    friend struct waiter_slot_writer;
    // `mutable`: the table is a const object to everyone, and its words still change; the
    // registry writes them through waiter_slot_writer, nobody else can name them.
    mutable internal::atomic<std::uint32_t> slots_[waiter_slot_count]{};
};

// Defined in src/waiter_registry.cpp.
extern const waiter_slot_table waiter_slots;

// The slot an unlock of the lock at `address` must check: a multiply and a shift from the
// table's address, which is fixed once the program is loaded, so the check is a plain load.
inline const internal::atomic<std::uint32_t>& waiter_slot_for(const void* address) noexcept {
    return waiter_slots[waiter_slot_index(address)];
}

}  // namespace contend::internal
