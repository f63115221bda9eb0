// The waiter registry: the slot table and its only writers (see src/waiter_registry.hpp for
// the calls, include/contend/internal/waiter_slots.hpp for the slot word).
//
// Why the plain-store unlock cannot lose a wake-up. Unlocker U runs
//     W(lock = free); compiler barrier; R(slot)
// and waiter P runs
//     RMW(slot += 1) [; heavy barrier]; then, under the parking-lot bucket lock, R(lock)
// and only sleeps if R(lock) still shows the lock held. membarrier makes every running
// thread execute a full barrier at some point during the call. If that point falls before
// U's R(slot), the read sees the count P added. If it falls after, U's store was already
// globally visible when the call returned, so P's R(lock) sees it (or something later) and
// P does not sleep on a stale "held". Either U wakes someone, or P does not sleep.
//
// P need not pay the barrier when the slot is `armed`: arming happens only after a barrier
// that began while P's predecessor was registered, and from then until the slot is
// exactly `light` again it never reads `light`. An unlock that read the slot before that
// barrier's point in its thread had its store flushed by the barrier; one that read it
// after saw a value other than `light` and took the fenced path (seq_cst RMW release, then
// a seq_cst load of the slot), which is an ordinary Dekker handshake with P's seq_cst
// registration. Under contention, and for a while after it, waiters pay no barrier at all.
#include "waiter_registry.hpp"

#include <pthread.h>

#include <mutex>

#include "contend/internal/atomic.hpp"
#include "contend/internal/tsan.hpp"
#include "platform/fork_child.hpp"
#include "platform/heavy_fence.hpp"

namespace contend::internal {

// Constant-initialized (all zero: the safe state) before any code runs, so the load-time
// initialization below and unlocks in other static initializers find it ready.
constinit const waiter_slot_table waiter_slots{};

// The one way to a writable slot: a friend of waiter_slot_table.
struct waiter_slot_writer {
    static internal::atomic<std::uint32_t>& slot(std::size_t index) noexcept { return waiter_slots.slots_[index]; }
};

namespace {

bool light_mode = false;
std::once_flag init_once;

void init_registry() noexcept {
    std::call_once(init_once, [] {
        light_mode = heavy_fence_init();
        if (!light_mode) return;
        for (std::size_t i = 0; i < waiter_slot_count; ++i)
            waiter_slot_writer::slot(i).fetch_or(waiter_slot_light, std::memory_order_seq_cst);
    });
}

// fork(): the child's only thread (the forking one) is not waiting for any lock, so every
// registration counted in a slot belongs to a thread that does not exist there. Left as it
// was, an unlock in the child would look for those waiters (and a held mutex's unlock, the
// pthread_atfork pattern, would hand it to one). Every slot goes back to rest.
// Under helgrind the stores race by design with those threads' registrations: the slots are
// left unchecked from now on (contend/internal/tsan.hpp).
void reset_slots_in_fork_child() noexcept {
    const std::uint32_t rest = light_mode ? waiter_slot_light : 0;
    for (std::size_t i = 0; i < waiter_slot_count; ++i) {
        auto& slot = waiter_slot_writer::slot(i);
        helgrind_unchecked(&slot, sizeof slot);
        slot.store(rest, std::memory_order_relaxed);
    }
}
[[maybe_unused]] const bool fork_handler_registered = internal::at_fork_child(reset_slots_in_fork_child);

// Decide the mode at load time, before main, so uncontended unlocks are fast from the
// first one; the call_once in every registration covers use from other static initializers.
[[maybe_unused]] const bool initialized_at_load = (init_registry(), true);

}  // namespace

bool waiter_registry_light() noexcept {
    init_registry();
    return light_mode;
}

void register_waiter(std::size_t slot_index) noexcept {
    init_registry();
    internal::atomic<std::uint32_t>& slot = waiter_slot_writer::slot(slot_index);
    const std::uint32_t before = slot.fetch_add(1, std::memory_order_seq_cst);
    if (!light_mode || (before & waiter_slot_armed)) return;
    heavy_fence();
    slot.fetch_or(waiter_slot_armed, std::memory_order_seq_cst);
}

bool register_waiter_if_armed(std::size_t slot_index) noexcept {
    init_registry();
    const std::uint32_t before = waiter_slot_writer::slot(slot_index).fetch_add(1, std::memory_order_seq_cst);
    if (!light_mode || (before & waiter_slot_armed)) return true;
    unregister_waiter(slot_index);
    return false;
}

void arm_slot(std::size_t slot_index) noexcept {
    register_waiter(slot_index);
    unregister_waiter(slot_index);  // the last one out leaves the slot armed
}

void unregister_waiter(std::size_t slot_index) noexcept {
    internal::atomic<std::uint32_t>& slot = waiter_slot_writer::slot(slot_index);
    std::uint32_t v = slot.load(std::memory_order_relaxed);
    for (;;) {
        std::uint32_t next = v - 1;
        // Last one out: stay armed (idle count reset) rather than drop back to `light`.
        if ((next & waiter_slot_count_mask) == 0) next &= ~waiter_slot_idle_mask;
        if (slot.compare_exchange_weak(v, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return;
    }
}

waiter_registration::waiter_registration(std::size_t slot_index) noexcept : slot_index_(slot_index) {
    register_waiter(slot_index);
}

waiter_registration::waiter_registration(std::size_t slot_index, adopt_t) noexcept : slot_index_(slot_index) {}

waiter_registration::~waiter_registration() { unregister_waiter(slot_index_); }

void note_idle_unlock(std::size_t slot_index) noexcept {
    internal::atomic<std::uint32_t>& slot = waiter_slot_writer::slot(slot_index);
    std::uint32_t v = slot.load(std::memory_order_relaxed);
    for (;;) {
        if (!(v & waiter_slot_armed) || (v & waiter_slot_count_mask) != 0) return;
        std::uint32_t next = v + waiter_slot_idle_unit;
        if ((next & waiter_slot_idle_mask) == waiter_slot_idle_mask) next = waiter_slot_light;  // disarm
        if (slot.compare_exchange_weak(v, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return;
    }
}

}  // namespace contend::internal
