// What the interposer assumes about glibc's pthread_rwlock_t (glibc 2.25's rwlock, unchanged
// through 2.36), and the accessors that read those bytes. As glibc_layout.hpp does for the
// mutex, every assumption is a static_assert, so a platform where one fails does not build.
//
// A rwlock we run keeps, in its own 56 bytes (x86-64):
//   0..7    contend::shared_mutex           (glibc's __readers and __writers)
//   16..23  the profile's record, or null   (__pad3, __pad4: glibc never uses them)
//   24..27  the writer's id, 0 when none    (__cur_writer: glibc keeps its writer's tid there)
//   28..31  __shared: read only, to decide whose the rwlock is
//   32..39  the profile's write count       (__rwelision, __pad1: unused since glibc 2.25)
//   40..47  the profile's read count        (__pad2: unused)
//   48..51  __flags: read only, to decide whose the rwlock is
// glibc's pthread_rwlock_init zeroes all 56 bytes before it writes __flags and __shared, and
// PTHREAD_RWLOCK_INITIALIZER is all zero: either way our words start all-zero, which is a
// free shared_mutex, no writer and no profile record. The profile's words are also unused by
// glibc's own rwlock, so a rwlock glibc runs (CONTEND_INTERPOSE_LOCK=glibc) is profiled there
// too. aarch64's layout differs and is not asserted: the rwlock functions pass through there.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "contend/shared_mutex.hpp"

namespace contend::interpose {

// x86-64's offsets (the table above); elsewhere rwlocks_supported is false and every rwlock
// call passes through, so the offsets are never used.
struct rwlock_offsets {
    std::size_t shared, flags;  // glibc reads them to decide how to treat the object, and so do we
    std::size_t writer;  // ours while we run the rwlock: the writer's id
    std::size_t record, write_count, read_count;  // the profile's, under either side (profile_rwlock.hpp)
};
inline constexpr rwlock_offsets rwlock_at{
    .shared = 28, .flags = 48, .writer = 24, .record = 16, .write_count = 32, .read_count = 40};
#if defined(__x86_64__)
inline constexpr bool rwlocks_supported = true;
static_assert(sizeof(pthread_rwlock_t) == 56 && alignof(pthread_rwlock_t) == 8);
static_assert(offsetof(pthread_rwlock_t, __data) == 0);
static_assert(offsetof(__pthread_rwlock_arch_t, __readers) == 0 && offsetof(__pthread_rwlock_arch_t, __writers) == 4);
static_assert(offsetof(__pthread_rwlock_arch_t, __pad3) == rwlock_at.record);
static_assert(offsetof(__pthread_rwlock_arch_t, __pad4) == rwlock_at.record + 4);
static_assert(offsetof(__pthread_rwlock_arch_t, __cur_writer) == rwlock_at.writer);
static_assert(offsetof(__pthread_rwlock_arch_t, __shared) == rwlock_at.shared);
static_assert(offsetof(__pthread_rwlock_arch_t, __rwelision) == rwlock_at.write_count);
static_assert(offsetof(__pthread_rwlock_arch_t, __pad2) == rwlock_at.read_count);
static_assert(offsetof(__pthread_rwlock_arch_t, __flags) == rwlock_at.flags);
static_assert(sizeof(int) == 4 && sizeof(void*) == 8);

// contend::shared_mutex in bytes 0..7: eight bytes, 8-aligned as the object is, all-zero its
// free state, no constructor needed (used only through atomics, as as_contend_mutex says).
static_assert(sizeof(contend::shared_mutex) == 8 && alignof(contend::shared_mutex) <= 8);
static_assert(std::is_standard_layout_v<contend::shared_mutex>);
static_assert(std::is_trivially_destructible_v<contend::shared_mutex>);
#else
inline constexpr bool rwlocks_supported = false;
#endif

inline std::uint32_t* rwlock_u32(const pthread_rwlock_t* l, std::size_t offset) noexcept {
    return reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(const_cast<pthread_rwlock_t*>(l)) + offset);
}
inline std::uint64_t* rwlock_u64(pthread_rwlock_t* l, std::size_t offset) noexcept {
    return reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(l) + offset);
}

// Whether a rwlock is of the kind we run: process-private and PTHREAD_RWLOCK_PREFER_READER_NP
// (0, the default kind: what PTHREAD_RWLOCK_INITIALIZER, a null attr and default attrs give).
// Decided by the two fields glibc's own functions read to decide how they treat the object,
// __flags (the kind) and __shared, which only pthread_rwlock_init writes: so the answer is
// the same on every call for the object's life, and a zeroed object is ours as it is glibc's
// default. A process-shared rwlock must stay glibc's (another process, without the
// interposer, may lock it by glibc's protocol); the writer-preferring kinds too, since glibc
// gives them semantics (writers first, and PREFER_WRITER_NONRECURSIVE_NP's recursive reads
// that deadlock) that our phase-fair lock does not reproduce.
inline bool rwlock_is_default_private(const pthread_rwlock_t* l) noexcept {
    if constexpr (!rwlocks_supported) return false;
    return __atomic_load_n(rwlock_u32(l, rwlock_at.flags), __ATOMIC_RELAXED) == 0 &&
           __atomic_load_n(rwlock_u32(l, rwlock_at.shared), __ATOMIC_RELAXED) == 0;
}

inline contend::shared_mutex& as_shared_mutex(pthread_rwlock_t* l) noexcept {
    return *std::launder(reinterpret_cast<contend::shared_mutex*>(l));
}

// The writer's id (rwlock_owner.hpp), written by the writer after it took the lock and cleared
// by it before it releases: another thread reads either 0 or some other thread's id, never
// its own, so a thread finding its own id holds the write lock.
inline std::uint32_t rwlock_writer(const pthread_rwlock_t* l) noexcept {
    return __atomic_load_n(rwlock_u32(l, rwlock_at.writer), __ATOMIC_RELAXED);
}
inline void set_rwlock_writer(pthread_rwlock_t* l, std::uint32_t id) noexcept {
    __atomic_store_n(rwlock_u32(l, rwlock_at.writer), id, __ATOMIC_RELAXED);
}

}  // namespace contend::interpose
