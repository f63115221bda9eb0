// pthread_rwlock_*: a process-private rwlock of the default kind runs on contend::shared_mutex,
// kept in its own bytes (rwlock_layout.hpp), under every CONTEND_INTERPOSE_LOCK but glibc: the
// mutex choices are locks without a reader mode, and contend's one reader-writer lock serves
// them all. Every other rwlock, every rwlock under CONTEND_INTERPOSE_LOCK=glibc, and every
// rwlock under helgrind (which models glibc's rwlock and cannot see ours) goes to glibc. With
// the profile on, every rwlock of our kind is profiled, whichever side runs it
// (profile_rwlock.hpp).
//
// glibc's semantics that programs rely on, kept (glibc 2.36's nptl/pthread_rwlock_common.c):
//  - the timed forms check the clock and the timeout's nanoseconds first, before anything
//    else, even when the lock is free (EINVAL), unlike glibc's mutex, which checks the
//    timeout only when it has to wait;
//  - rdlock and wrlock (plain, timed and clock) by the thread holding the write lock: EDEADLK;
//    the try forms say EBUSY then;
//  - a thread that holds a read may read again while a writer waits (rwlock_thread.hpp);
//  - unlock releases the write lock when the caller is its writer, else a read.
// Where ours differs: unlocking a rwlock that is not held says EPERM (glibc's unlock returns
// 0 and corrupts the lock), and a new reader queues behind a parked writer (phase-fair) where
// glibc's default kind lets readers in ahead of waiting writers for ever.
#include <pthread.h>

#include <cerrno>

#include "interpose/exports.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/profile_rwlock.hpp"
#include "interpose/rwlock_layout.hpp"
#include "interpose/rwlock_sides.hpp"
#include "interpose/timespec.hpp"

using namespace contend::interpose;

namespace {

// Who runs this call. Neither input changes for the object's life: the choice and its flags
// are fixed once resolved, and the kind bytes are written by init only.
enum class side { ours, ours_profiled, glibc, glibc_profiled };
inline side side_of(const pthread_rwlock_t* l) noexcept {
    const int c = current_choice_and_flags();
    if (!rwlock_is_default_private(l)) return side::glibc;
    const bool profiled = (c & profile_flag) != 0;
    if (choice_of(c) == lock_choice::glibc || (c & valgrind_flag) != 0)
        return profiled ? side::glibc_profiled : side::glibc;
    return profiled ? side::ours_profiled : side::ours;
}

// rdlock and wrlock, plain or timed (abstime not null), in glibc's order of checks; with the
// profile, the acquisition counted and a wait timed (its record made only once it waited).
template <bool writing, bool profiled, class Rw>
int acquire(Rw rw, clockid_t clock, const timespec* abstime, const void* site) noexcept {
    if (abstime != nullptr && ((clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) || !valid_nanoseconds(abstime)))
        return EINVAL;
    if (rw.holds_write()) return EDEADLK;
    if (writing ? rw.try_write() : rw.try_read()) {
        if constexpr (profiled) profile::rwlock_acquired(rw.l, writing);
        return 0;
    }
    if constexpr (!profiled) {
        return writing ? rw.write(clock, abstime) : rw.read(clock, abstime);
    } else {
        const std::uint64_t start = profile::ticks();
        const int rc = writing ? rw.write(clock, abstime) : rw.read(clock, abstime);
        const std::uint64_t waited = profile::ticks() - start;
        if (rc == 0) {
            profile::rwlock_acquired(rw.l, writing);
            profile::rwlock_contended(rw.l, profile::rwlock_record_for(rw.l, site), writing, waited);
        } else if (rc == ETIMEDOUT) {
            profile::rwlock_timed_out(profile::rwlock_record_for(rw.l, site), writing, waited);
        }
        return rc;
    }
}

template <bool writing, class Rw>
int try_acquire(Rw rw, bool profiled) noexcept {
    if (writing ? rw.try_write() : rw.try_read()) {
        if (profiled) profile::rwlock_acquired(rw.l, writing);
        return 0;
    }
    if (profiled) profile::trylock_busy();
    return EBUSY;
}

// The blocking forms. Glibc's own function when glibc runs the rwlock unprofiled, so that its
// answers are glibc's exactly.
template <bool writing, class Glibc>
int lock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime, const void* site, Glibc&& plain) noexcept {
    switch (side_of(l)) {
        case side::ours:
            return acquire<writing, false>(our_rwlock{l}, clock, abstime, site);
        case side::ours_profiled:
            return acquire<writing, true>(our_rwlock{l}, clock, abstime, site);
        case side::glibc_profiled:
            return acquire<writing, true>(glibc_rwlock{l}, clock, abstime, site);
        case side::glibc:
            break;
    }
    return plain();
}

template <bool writing, class Glibc>
int try_lock(pthread_rwlock_t* l, Glibc&& plain) noexcept {
    switch (side_of(l)) {
        case side::ours:
            return try_acquire<writing>(our_rwlock{l}, false);
        case side::ours_profiled:
            return try_acquire<writing>(our_rwlock{l}, true);
        case side::glibc_profiled:
            return try_acquire<writing>(glibc_rwlock{l}, true);
        case side::glibc:
            break;
    }
    return plain();
}

}  // namespace

extern "C" {

// glibc's init writes the kind and pshared bytes from the attributes (and validates them) and
// zeroes the rest: a free shared_mutex, no writer, no profile record. A record the old bytes
// pointed to first takes what they still counted.
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_init(pthread_rwlock_t* l, const pthread_rwlockattr_t* attr) {
    if (profiling() && rwlocks_supported) profile::rwlock_retire(l);
    return glibc().rwlock_init(l, attr);
}

// glibc's destroy checks nothing and always says 0; so does ours (a rwlock destroyed while
// held is undefined behaviour, and a program that re-inits it gets all-zero bytes again).
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t* l) {
    const side s = side_of(l);
    if (s == side::ours_profiled || s == side::glibc_profiled) profile::rwlock_retire(l);
    return s == side::ours || s == side::ours_profiled ? 0 : glibc().rwlock_destroy(l);
}

// Each read form beside its write form.
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
    return lock<false>(l, CLOCK_REALTIME, nullptr, __builtin_return_address(0),
                       [l] { return glibc().rwlock_rdlock(l); });
}
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
    return lock<true>(l, CLOCK_REALTIME, nullptr, __builtin_return_address(0),
                      [l] { return glibc().rwlock_wrlock(l); });
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t* l) {
    return try_lock<false>(l, [l] { return glibc().rwlock_tryrdlock(l); });
}
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t* l) {
    return try_lock<true>(l, [l] { return glibc().rwlock_trywrlock(l); });
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* abstime) {
    return lock<false>(l, CLOCK_REALTIME, abstime, __builtin_return_address(0),
                       [=] { return glibc().rwlock_timedrdlock(l, abstime); });
}
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* abstime) {
    return lock<true>(l, CLOCK_REALTIME, abstime, __builtin_return_address(0),
                      [=] { return glibc().rwlock_timedwrlock(l, abstime); });
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
    return lock<false>(l, clock, abstime, __builtin_return_address(0),
                       [=] { return glibc().rwlock_clockrdlock(l, clock, abstime); });
}
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
    return lock<true>(l, clock, abstime, __builtin_return_address(0),
                      [=] { return glibc().rwlock_clockwrlock(l, clock, abstime); });
}

// No hold is timed for a rwlock (profile_rwlock.hpp): the release needs no note.
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* l) {
    const side s = side_of(l);
    if (s == side::ours || s == side::ours_profiled) return our_rwlock{l}.release();
    return glibc().rwlock_unlock(l);
}

}  // extern "C"
