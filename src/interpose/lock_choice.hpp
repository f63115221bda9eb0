// Which lock the interposer runs kind-0 mutexes on: CONTEND_INTERPOSE_LOCK, read once.
#pragma once

#include <atomic>

#include "interpose/interpose_locks.hpp"

namespace contend::interpose {

// One enumerator per entry of CONTEND_INTERPOSE_LOCKS, named as the entry. contend's spin
// locks are for comparison in the lab: they never park (a timed lock polls), so they suit
// short critical sections only; conds still use contend::condition_variable.
enum class lock_choice : int {
    unresolved = 0,
#define CONTEND_INTERPOSE_ENUMERATOR(name, alias, type, description) name,
    CONTEND_INTERPOSE_LOCKS(CONTEND_INTERPOSE_ENUMERATOR)
#undef CONTEND_INTERPOSE_ENUMERATOR
};

// Set beside the choice in chosen_lock when CONTEND_INTERPOSE_PROFILE asks for a profile
// (profile.hpp): the fast path reads both with one load.
inline constexpr int profile_flag = 0x100;
// Set beside the choice when the process runs under helgrind and the choice is one of our
// locks: the pthread functions then tell helgrind of each acquisition and release
// (helgrind_notes.hpp). Tested with the profile's flag in one instruction (noted_flags).
inline constexpr int valgrind_flag = 0x200;
// The flags that send a pthread function off its fast path, to its noted (slower) path.
inline constexpr int noted_flags = profile_flag | valgrind_flag;

namespace detail {
extern std::atomic<int> chosen_lock;
lock_choice resolve_lock_choice() noexcept;
}  // namespace detail

// The choice is read from the environment by the library's constructor, or by the first
// interposed call if one comes first (another library's constructor, a thread started
// before ours ran): it must never change once any mutex was used, or a mutex locked one way
// would be unlocked the other. A relaxed load on the fast path.
inline int current_choice_and_flags() noexcept {
    const int c = detail::chosen_lock.load(std::memory_order_relaxed);
    if (c != 0) [[likely]]
        return c;
    return static_cast<int>(detail::resolve_lock_choice()) | (detail::chosen_lock.load() & noted_flags);
}
inline lock_choice choice_of(int choice_and_flags) noexcept {
    return static_cast<lock_choice>(choice_and_flags & ~noted_flags);
}
inline lock_choice current_lock() noexcept { return choice_of(current_choice_and_flags()); }
inline bool profiling() noexcept { return (current_choice_and_flags() & profile_flag) != 0; }
inline bool telling_helgrind() noexcept { return (current_choice_and_flags() & valgrind_flag) != 0; }

// The entry's name (an alias chosen is reported by its entry's name).
const char* lock_name(lock_choice c) noexcept;

}  // namespace contend::interpose
