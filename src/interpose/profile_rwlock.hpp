// The lock profile's side of the rwlocks (profile.hpp has the mutexes'): a rwlock of the kind
// the interposer takes (rwlock_layout.hpp), whether contend's lock or glibc's
// (CONTEND_INTERPOSE_LOCK=glibc) runs it, is profiled beside the mutexes, its reads and writes
// apart.
//
// Costs and what is exact, as for a mutex (profile.hpp) but for three things:
//  - each acquisition counts in the thread's stripe (its acquisitions, and its rwlock reads or
//    writes) and in the rwlock's own bytes: a write with a plain load and store (the writer is
//    alone), a read with an atomic add (readers hold together), on the line the lock's word is
//    on. All exact;
//  - a contended acquisition's note goes to the record at once, while the lock is held, not
//    after the release as a mutex's: a few atomic adds on the record's lines, which lengthen
//    the critical section of a rwlock that is contended already;
//  - no hold is timed: a read's hold overlaps other reads', and a rwlock's row says "-".
#pragma once

#include <pthread.h>

#include <cstdint>

#include "interpose/profile.hpp"
#include "interpose/rwlock_layout.hpp"

namespace contend::interpose::profile {

inline std::uintptr_t* rwlock_record_word(pthread_rwlock_t* l) noexcept {
    return reinterpret_cast<std::uintptr_t*>(rwlock_u64(l, rwlock_at.record));
}
// The acquisitions the rwlock counted and its record does not have yet: reads or writes.
inline std::uint64_t* rwlock_count_word(pthread_rwlock_t* l, bool write) noexcept {
    return rwlock_u64(l, write ? rwlock_at.write_count : rwlock_at.read_count);
}

// After any acquisition of a profiled rwlock (a try, a wait, a timed wait that got it).
inline void rwlock_acquired(pthread_rwlock_t* l, bool write) noexcept {
    stripe& s = this_stripe();
    (void)count_acquisition(s);  // registers the stripe; no hold of a rwlock is timed
    add_one(write ? s.rwlock_writes : s.rwlock_reads);
    std::uint64_t* count = rwlock_count_word(l, write);
    if (write) __atomic_store_n(count, __atomic_load_n(count, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    else __atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
}

// The record of a rwlock whose acquisition waited (made at its first, with the caller's
// return address as its site; past the table's capacity, the shared record of the dropped).
lock_record* rwlock_record_for(pthread_rwlock_t* l, const void* site) noexcept;
// A wait that ended holding the rwlock (after rwlock_acquired), or that timed out.
void rwlock_contended(pthread_rwlock_t* l, lock_record* r, bool write, std::uint64_t wait_ticks) noexcept;
void rwlock_timed_out(lock_record* r, bool write, std::uint64_t wait_ticks) noexcept;
// pthread_rwlock_init and _destroy: what the rwlock still counts goes to its record, and the
// record word is cleared (init checks the word points to one of ours for this address).
void rwlock_retire(pthread_rwlock_t* l) noexcept;

}  // namespace contend::interpose::profile
