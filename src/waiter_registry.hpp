// Registering as a (soon to be) parked waiter in the waiter registry; see
// include/contend/internal/waiter_registry.hpp for the protocol and src/mutex.cpp for its use.
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/internal/waiter_registry.hpp"

namespace contend::internal {

// RAII: counts the calling thread in `slot` for its lifetime. On construction it makes
// sure that every unlocker's release store is either visible to this thread's next load
// of the lock word or followed by that unlocker seeing the count (issuing a heavy barrier
// when the slot was not yet armed).
class waiter_registration {
public:
    explicit waiter_registration(std::atomic<std::uint32_t>& slot) noexcept;
    ~waiter_registration();
    waiter_registration(const waiter_registration&) = delete;
    waiter_registration& operator=(const waiter_registration&) = delete;

private:
    std::atomic<std::uint32_t>& slot_;
};

// After the caller released a lock word with a seq_cst RMW: may anyone be registered?
inline bool slot_has_waiters(const std::atomic<std::uint32_t>& slot) noexcept {
    return (slot.load(std::memory_order_seq_cst) & waiter_slot_count_mask) != 0;
}

// An unlock took the fenced path and found nobody registered: counts towards dropping an
// armed, idle slot back to `light`.
void note_idle_unlock(std::atomic<std::uint32_t>& slot) noexcept;

// Whether unlocks may use the store fast path (membarrier available and registered).
bool waiter_registry_light() noexcept;

}  // namespace contend::internal
