// The lock profile (CONTEND_INTERPOSE_PROFILE=DIR): what each contended mutex cost, written
// to DIR/<pid>.json when the process exits (docs/interpose.md, "Profiling").
//
// Costs, and what is exact and what is sampled:
//  - every acquisition of a kind-0 mutex adds one to this thread's stripe (a plain store to
//    a thread-owned cache line) and one to a count kept in the mutex itself, in bytes glibc
//    leaves unused for this kind (__list): the holder writes it, on the line the lock is
//    already on, so no other cache line is touched. Both counts are exact;
//  - a mutex gets a record (a table entry, pointed to from the mutex's __list) the first time
//    an acquisition of it finds it held. From then on its contended acquisitions are timed
//    (total, max and a log-linear histogram of the wait), and the count in the mutex is moved
//    into the record at each of them and at each timed hold;
//  - each thread times the hold of one of its acquisitions in hold_sample_period, on average,
//    when that mutex has a record. The gaps are drawn at random from 33 to 96: a fixed gap
//    aliases with a program's own rhythm (two threads taking turns, one holding long and one
//    short: an even gap times only one of them);
//  - uncontended mutexes have no record: they are in the program's totals only.
// Times are read with the CPU's cycle counter and turned into nanoseconds against the steady
// clock over the whole run.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "interpose/glibc_layout.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace contend::interpose::profile {

// One acquisition in this many of a contended mutex has its hold timed. A power of two: the
// check is a compare on a count already loaded. Two cycle-counter reads per sample cost about
// 20-50 ns on the VMs we measure on (AMD EPYC, Intel Xeon): 1 in 64 keeps that under a
// nanosecond per acquisition on either, and a lock acquired a million times still gets
// 15,000 samples for its p99.
inline constexpr std::uint64_t hold_sample_period = 64;

// __list (glibc's robust-mutex list links) is unused by a kind-0 mutex: glibc's lock, unlock,
// trylock, timedlock and condvar paths touch it for robust kinds only, and init zeroes it.
// __list.__prev: the mutex's record, or null; its bit 0 is set while the holder's hold is timed.
inline constexpr std::size_t record_word_offset = 24;
inline constexpr std::uintptr_t timing_hold = 1;
inline constexpr std::size_t count_word_offset = 32;  // __list.__next: acquisitions not in the record
static_assert(offsetof(__pthread_mutex_s, __list) == record_word_offset);
static_assert(sizeof(__pthread_mutex_s::__list) == 2 * sizeof(void*) && sizeof(void*) == 8);
static_assert(count_word_offset + 8 <= mutex_size);

struct lock_record;

inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    std::uint64_t t;
    asm volatile("mrs %0, cntvct_el0" : "=r"(t));
    return t;
#else
#error "profile: no cycle counter on this architecture"
#endif
}

inline std::uint64_t* count_word(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(m) + count_word_offset);
}
inline std::uintptr_t* record_word(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<std::uintptr_t*>(reinterpret_cast<char*>(m) + record_word_offset);
}
inline lock_record* record_of(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<lock_record*>(__atomic_load_n(record_word(m), __ATOMIC_ACQUIRE) & ~timing_hold);
}

// This thread's counters, on a cache line of their own; written by this thread only.
struct alignas(64) stripe {
    std::atomic<std::uint64_t> acquisitions{0};
    std::atomic<std::uint64_t> trylock_busy{0};
    // Acquisitions until this thread next times a hold (of a mutex that has a record).
    std::atomic<std::uint64_t> until_sample{0};
    bool shared = false;  // the stripe threads share once the table is full: added to atomically
};
stripe& claim_stripe() noexcept;
extern thread_local stripe* this_thread_stripe __attribute__((tls_model("initial-exec")));

inline stripe& this_stripe() noexcept {
    stripe* s = this_thread_stripe;
    if (s == nullptr) [[unlikely]]
        s = &claim_stripe();
    return *s;
}

inline void add_one(stripe& s, std::atomic<std::uint64_t>& c) noexcept {
    if (s.shared) [[unlikely]]
        c.fetch_add(1, std::memory_order_relaxed);
    else c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The slow parts, out of line.
void sample_hold(pthread_mutex_t* m, stripe& s) noexcept;
void end_hold_sample(pthread_mutex_t* m) noexcept;

// After every acquisition of a kind-0 mutex, by the thread that now holds it. The count in
// the mutex is the holder's to write: a relaxed load and store on the lock's own line.
inline void acquired(pthread_mutex_t* m) noexcept {
    stripe& s = this_stripe();
    add_one(s, s.acquisitions);
    std::uint64_t* count = count_word(m);
    __atomic_store_n(count, __atomic_load_n(count, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    const std::uint64_t left = s.until_sample.load(std::memory_order_relaxed);
    if (left <= 1) [[unlikely]]
        return sample_hold(m, s);
    s.until_sample.store(left - 1, std::memory_order_relaxed);
}

// Before the holder releases a kind-0 mutex.
inline void releasing(pthread_mutex_t* m) noexcept {
    if (__atomic_load_n(record_word(m), __ATOMIC_RELAXED) & timing_hold) [[unlikely]]
        end_hold_sample(m);
}

// A pthread_mutex_trylock that said EBUSY.
inline void trylock_busy() noexcept {
    stripe& s = this_stripe();
    add_one(s, s.trylock_busy);
}

// The record of a mutex found held (created at its first contention, with the caller's
// return address as its site). Never null: past the table's capacity, a shared record that
// counts the dropped locks' contentions in the totals only.
lock_record* record_for(pthread_mutex_t* m, const void* site) noexcept;
// A contended wait that ended holding the mutex (the caller calls acquired() first), or one
// that timed out. The mutex's count goes into its record then, so that a record never holds
// more contentions than acquisitions.
void contended(pthread_mutex_t* m, lock_record* r, std::uint64_t wait_ticks) noexcept;
void timed_out(lock_record* r, std::uint64_t wait_ticks) noexcept;

// pthread_mutex_init and _destroy: a record the mutex's bytes point to is given what the
// mutex still counts before the bytes are reset (init checks that the pointer is one of ours
// for this address: the memory may hold anything before init).
void retire(pthread_mutex_t* m) noexcept;

// Starts profiling if CONTEND_INTERPOSE_PROFILE is set; false otherwise. Called once, before
// the lock choice is published.
bool start_from_environment() noexcept;

}  // namespace contend::interpose::profile
