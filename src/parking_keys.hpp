// The parking lot's key space: which address each contend primitive parks its threads
// under. Every key contend derives is made here; a new user (the thread pool, the pipe)
// takes a free space from the table below, and nothing else invents keys.
//
// A key is an address with a 4-bit space number in its top bits:
//     key = address ^ (space << 60)
// User-space addresses have bits 60..63 clear (x86-64: 47 bits, 56 with 5-level paging;
// arm64: 48, or 52 with large virtual addresses; arm64 MTE tags sit in bits 56..59), so a
// key in a space other than 0 is nobody's address, and keys in different spaces never meet.
// (Pointer tagging that uses the whole top byte, as HWASan does, would break this; contend
// does not support it.)
//
// | space | bits set | user                  | parks under this key                               |
// |-------|----------|-----------------------|----------------------------------------------------|
// | 0x0   | none     | contend::mutex        | lock() waiters, FIFO; the head becomes designee    |
// |       |          | contend::shared_mutex | readers (lock_shared, recursive or not)            |
// |       |          | contend::thin_lock    | threads waiting for a thin word (the word itself)  |
// |       |          | condition_variable    | its waiters (condition_variable.hpp, inline)       |
// |       |          | manual/auto_reset_event | its waiters (src/event.cpp)                      |
// |       |          | parking_lot's callers | whatever address they pass                         |
// | 0x1   | 60       | contend::shared_mutex | writers (lock, try_lock_for/until)                 |
// | 0x2   | 61       | monitor::             | wait() callers waiting for a pulse on the address  |
// | 0x3   | 61, 60   | contend::shared_mutex | would-be upgraders (lock_upgrade)                  |
// | 0x5   | 62, 60   | contend::shared_mutex | the upgrader waiting for the readers to leave      |
// | 0x6   | 62, 61   | contend::shared_mutex | the gate's writer napping behind a writer          |
// | 0x4   | 62       | contend::mutex        | the designee's naps (src/mutex.cpp)                |
// | 0x8   | 63       | contend::mutex        | try_lock_for / try_lock_until waiters              |
// | 0xC   | 63, 62   | monitor::             | threads waiting to enter the address               |
// | other | -        | free                  | 0x7, 0x9-0xB, 0xD-0xF                              |
//
// Space 0 is for a primitive parking on its own address: nobody else owns that address, and
// no two of these primitives share one (none holds another at its offset 0). monitor:: is
// the exception that needs spaces of its own: it locks an address that belongs to someone
// else, which may well be a contend::mutex or a thin_lock parking in space 0 itself.
#pragma once

#include <cstdint>

namespace contend::internal {

static_assert(sizeof(std::uintptr_t) == 8, "parking keys use the top bits of a 64-bit address");

enum class parking_space : std::uintptr_t {
    own = 0x0,
    shared_writers = 0x1,
    monitor_pulse = 0x2,
    shared_upgraders = 0x3,
    shared_upgrading = 0x5,
    shared_gated_nap = 0x6,
    mutex_designee = 0x4,
    mutex_timed = 0x8,
    monitor_enter = 0xC,
};

inline constexpr unsigned parking_space_shift = 60;

inline const void* parking_key(const void* address, parking_space space) noexcept {
    return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(address) ^
                                         (static_cast<std::uintptr_t>(space) << parking_space_shift));
}

// contend::mutex (src/mutex.cpp): three queues per mutex `m`.
inline const void* mutex_untimed_key(const void* m) noexcept { return parking_key(m, parking_space::own); }
inline const void* mutex_timed_key(const void* m) noexcept { return parking_key(m, parking_space::mutex_timed); }
inline const void* mutex_designee_key(const void* m) noexcept { return parking_key(m, parking_space::mutex_designee); }

// contend::thin_lock (src/thin_lock.cpp): waiters for a thin word park on the word.
inline const void* thin_lock_key(const void* word) noexcept { return parking_key(word, parking_space::own); }

// contend::monitor (src/monitor.cpp): two queues per address `a` in use.
inline const void* monitor_enter_key(const void* a) noexcept { return parking_key(a, parking_space::monitor_enter); }
inline const void* monitor_pulse_key(const void* a) noexcept { return parking_key(a, parking_space::monitor_pulse); }

// contend::shared_mutex (src/shared_mutex.cpp): four queues per lock `m`, and the gate's
// writer's naps (timed; nobody wakes them).
inline const void* shared_readers_key(const void* m) noexcept { return parking_key(m, parking_space::own); }
inline const void* shared_writers_key(const void* m) noexcept { return parking_key(m, parking_space::shared_writers); }
inline const void* shared_upgraders_key(const void* m) noexcept {
    return parking_key(m, parking_space::shared_upgraders);
}
inline const void* shared_upgrading_key(const void* m) noexcept {
    return parking_key(m, parking_space::shared_upgrading);
}
inline const void* shared_gated_nap_key(const void* m) noexcept {
    return parking_key(m, parking_space::shared_gated_nap);
}

}  // namespace contend::internal
