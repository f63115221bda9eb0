// What the interposer assumes about glibc's pthread_mutex_t and pthread_cond_t, and the
// few accessors that read those bytes. Every assumption is a static_assert here, so a
// platform where one fails does not build instead of corrupting locks at run time.
//
// x86-64 is built and tested. aarch64's values (from glibc's generic struct_mutex.h and
// aarch64 pthreadtypes-arch.h) are asserted but untested. Elsewhere the library is not built.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "contend/condition_variable.hpp"
#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "interpose/interpose_locks.hpp"

#if !defined(__GLIBC__)
#error "libcontend_interpose relies on glibc's pthread layout"
#endif

namespace contend::interpose {

#if defined(__x86_64__)
inline constexpr std::size_t mutex_size = 40;
#elif defined(__aarch64__)
inline constexpr std::size_t mutex_size = 48;  // asserted, untested
#else
#error "libcontend_interpose: pthread layout unknown on this architecture"
#endif

// __kind: glibc's type in the low bits (NORMAL = DEFAULT = 0, RECURSIVE 1, ERRORCHECK 2,
// ADAPTIVE 3) ored with ROBUST 16, PRIO_INHERIT 32, PRIO_PROTECT 64, PSHARED 128,
// ELISION 256 and NO_ELISION 512. Only exactly 0 (a private, normal, non-robust mutex
// without elision flags) is ours: any bit set means glibc gives the mutex a meaning that
// a one-byte lock does not have, so glibc keeps it. PTHREAD_MUTEX_INITIALIZER is all zero.
inline constexpr std::size_t mutex_kind_offset = 16;
static_assert(sizeof(pthread_mutex_t) == mutex_size);
static_assert(offsetof(__pthread_mutex_s, __kind) == mutex_kind_offset);
static_assert(offsetof(pthread_mutex_t, __data) == 0);
static_assert(offsetof(__pthread_mutex_s, __lock) == 0 && sizeof(int) == 4);

// contend::mutex lives in the low byte of __lock (little-endian: byte 0 of the object),
// which glibc's kind check never reads. A zero-filled or PTHREAD_MUTEX_INITIALIZER mutex
// is then a free contend::mutex, since contend::mutex's all-zero state is "free".
static_assert(sizeof(contend::mutex) == 1 && alignof(contend::mutex) == 1);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);

// pthread_cond_t: 48 bytes on both. glibc (2.36's layout) keeps __g1_orig_size at 32
// (its low two bits are glibc's internal condvar lock: 0, 1 or 2, never 3) and __wrefs at
// 36: waiter references << 3 | wake-request 4 | clock 2 (CLOCK_MONOTONIC) | pshared 1.
inline constexpr std::size_t cond_size = 48;
inline constexpr std::size_t cond_marker_offset = 32;
inline constexpr std::size_t cond_wrefs_offset = 36;
inline constexpr std::uint32_t cond_wrefs_pshared = 1;
inline constexpr std::uint32_t cond_wrefs_monotonic = 2;
inline constexpr unsigned cond_wrefs_waiter_shift = 3;
static_assert(sizeof(pthread_cond_t) == cond_size);
static_assert(offsetof(__pthread_cond_s, __g1_orig_size) == cond_marker_offset);
static_assert(offsetof(__pthread_cond_s, __wrefs) == cond_wrefs_offset);
// The marker a cond carries while contend runs it (see cond_interpose.cpp): its low two bits
// are 3, a value glibc's condvar lock bits never take, so no glibc-run cond looks marked.
inline constexpr std::uint32_t cond_ours_marker = 0x636f6e03u;
static_assert((cond_ours_marker & 3u) == 3u);

// contend::condition_variable in byte 0 of a marked cond (the low byte of __wseq): one byte
// whose all-zero state means "no waiters".
static_assert(sizeof(contend::condition_variable) == 1 && alignof(contend::condition_variable) == 1);
static_assert(std::is_standard_layout_v<contend::condition_variable>);
static_assert(std::is_trivially_destructible_v<contend::condition_variable>);

// Fields glibc writes at init only are read with relaxed atomic loads: other threads may
// use the object meanwhile, and a plain read would be a data race on paper.
inline std::uint32_t load_u32(const void* object, std::size_t offset) noexcept {
    const auto* p = reinterpret_cast<const std::uint32_t*>(static_cast<const char*>(object) + offset);
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
inline std::uint32_t* u32_at(void* object, std::size_t offset) noexcept {
    return reinterpret_cast<std::uint32_t*>(static_cast<char*>(object) + offset);
}

inline int mutex_kind(const pthread_mutex_t* m) noexcept { return static_cast<int>(load_u32(m, mutex_kind_offset)); }

// __owner: glibc's lock writes the holder's thread id there and its unlock clears it; none of
// our locks ever writes it. So a kind-0 mutex with an owner, under our locks, is held by
// glibc's own pthread_mutex_lock, called from code that did not bind to the interposer (a
// library loaded with dlopen(RTLD_DEEPBIND)): see refuse_glibc_held in mutex_interpose.cpp.
inline constexpr std::size_t mutex_owner_offset = 8;
static_assert(offsetof(__pthread_mutex_s, __owner) == mutex_owner_offset);
inline std::uint32_t glibc_owner(const pthread_mutex_t* m) noexcept { return load_u32(m, mutex_owner_offset); }

// Every lock of CONTEND_INTERPOSE_LOCKS (interpose_locks.hpp) lives in a kind-0 mutex's first
// mutex_owner_offset bytes, __lock and __count: before __owner, which must stay glibc's (see
// above), and before __kind. Those are the bytes pthread_mutex_init clears for a kind-0 mutex
// made with attributes (mutex_interpose.cpp). The object is used where no constructor ran
// (as_lock in our_locks.hpp): standard layout, nothing to destroy, and the all-zero bytes of
// PTHREAD_MUTEX_INITIALIZER its free state (each type's default state is all-zero words).
// ttas_lock, backoff_spin_lock and sleeping_spin_lock are one 32-bit word (__lock),
// ticket_lock two (__lock and __count), contend::mutex one byte (__lock's low byte).
static_assert(offsetof(__pthread_mutex_s, __count) == 4 && mutex_owner_offset == 8);
struct glibc_normal_mutex;  // our_locks.hpp: glibc's own lock, kept in no bytes of ours
template <class Lock>
constexpr bool lives_before_owner() {
    if constexpr (std::is_same_v<Lock, glibc_normal_mutex>) return true;
    else
        return sizeof(Lock) <= mutex_owner_offset && alignof(Lock) <= alignof(int) && std::is_standard_layout_v<Lock> &&
               std::is_trivially_destructible_v<Lock>;
}
#define CONTEND_INTERPOSE_FITS(name, alias, type, description) \
    static_assert(lives_before_owner<type>(), #type " does not fit in a kind-0 pthread_mutex_t before __owner");
CONTEND_INTERPOSE_LOCKS(CONTEND_INTERPOSE_FITS)
#undef CONTEND_INTERPOSE_FITS

// A kind-0 mutex's lock words (__lock and __count) set to all-zero: any lock of the list, free.
inline void clear_lock_words(pthread_mutex_t* m) noexcept {
    __atomic_store_n(&m->__data.__lock, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&m->__data.__count, 0u, __ATOMIC_RELEASE);
}

// glibc marks a destroyed mutex with kind -1, so that later use fails with EINVAL; with kind
// -1 it is no longer ours, and glibc's functions give exactly that answer.
inline void mark_destroyed(pthread_mutex_t* m) noexcept { __atomic_store_n(&m->__data.__kind, -1, __ATOMIC_RELEASE); }

// __list (glibc's robust-mutex list links) is unused by a kind-0 mutex: glibc's lock, unlock,
// trylock, timedlock and condvar paths touch it for robust kinds only, and init zeroes it. The
// profile (profile.hpp) keeps there, in __list.__prev, the mutex's record, or null, and in
// __list.__next the mutex's acquisitions not yet in the record.
inline constexpr std::size_t record_word_offset = 24;
inline constexpr std::size_t count_word_offset = 32;
static_assert(offsetof(__pthread_mutex_s, __list) == record_word_offset);
static_assert(sizeof(__pthread_mutex_s::__list) == 2 * sizeof(void*) && sizeof(void*) == 8);
static_assert(count_word_offset + 8 <= mutex_size);

// The contend::mutex in a mutex whose kind is 0. No constructor ever ran there: the
// object's state is its one byte, all-zero is its constructed state, and it is only ever
// used through atomics, so reading the byte as the object is what a constructor would give.
inline contend::mutex& as_contend_mutex(pthread_mutex_t* m) noexcept {
    return *std::launder(reinterpret_cast<contend::mutex*>(m));
}

inline contend::condition_variable& as_contend_cond(pthread_cond_t* c) noexcept {
    return *std::launder(reinterpret_cast<contend::condition_variable*>(c));
}

}  // namespace contend::interpose
