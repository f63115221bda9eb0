// The waiter registry, write side: a thread about to park counts itself in its lock's
// waiter slot, and an unlock that took the fenced path checks the slot and ages it. The
// slot table, its bit layout and the unlock fast path that reads it are in
// include/contend/internal/waiter_slots.hpp; why a plain-store unlock still cannot miss a
// registered waiter is in src/waiter_registry.cpp. Users: src/mutex.cpp, src/thin_lock.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/waiter_slots.hpp"

namespace contend::internal {

// RAII: counts the calling thread in slot `slot_index` for its lifetime. On construction it
// makes sure that every unlocker's release store is either visible to this thread's next
// load of the lock word or followed by that unlocker seeing the count (issuing a heavy
// barrier when the slot was not yet armed).
class waiter_registration {
public:
    explicit waiter_registration(std::size_t slot_index) noexcept;
    // Takes over a registration another thread made for this one (register_waiter: a
    // condition variable's notify that moved this thread onto a mutex's queue).
    struct adopt_t {};
    waiter_registration(std::size_t slot_index, adopt_t) noexcept;
    ~waiter_registration();
    waiter_registration(const waiter_registration&) = delete;
    waiter_registration& operator=(const waiter_registration&) = delete;

private:
    std::size_t slot_index_;
};

// Counts a waiter in slot `slot_index` as waiter_registration does, for a thread that is
// not the caller: the caller then checks the lock word under the bucket lock as that thread
// would before sleeping, and either hands the registration over (waiter_registration's
// adopt_t) or gives it back with unregister_waiter.
void register_waiter(std::size_t slot_index) noexcept;
void unregister_waiter(std::size_t slot_index) noexcept;
// register_waiter where it needs no heavy barrier (the slot is armed, or there is no light
// mode): true, counted. Else false, and nothing is counted: a caller that holds locks (a
// notify moving a waiter, under two bucket locks) does not make the system call there, but
// arms the slot afterwards with arm_slot, which pays the barrier with no lock held.
bool register_waiter_if_armed(std::size_t slot_index) noexcept;
void arm_slot(std::size_t slot_index) noexcept;

// After the caller released a lock word with a seq_cst RMW: may anyone be registered?
inline bool slot_has_waiters(std::size_t slot_index) noexcept {
    return (waiter_slots[slot_index].load(std::memory_order_seq_cst) & waiter_slot_count_mask) != 0;
}

// An unlock took the fenced path and found nobody registered: counts towards dropping an
// armed, idle slot back to `light`.
void note_idle_unlock(std::size_t slot_index) noexcept;

// Whether unlocks may use the store fast path (membarrier available and registered).
bool waiter_registry_light() noexcept;

}  // namespace contend::internal
