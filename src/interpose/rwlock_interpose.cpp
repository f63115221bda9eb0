// pthread_rwlock_*: a process-private rwlock of the default kind runs on contend::shared_mutex,
// kept in its own bytes (rwlock_layout.hpp), under every CONTEND_INTERPOSE_LOCK but glibc: the
// mutex choices are locks without a reader mode, and contend's one reader-writer lock serves
// them all. Every other rwlock, every rwlock under CONTEND_INTERPOSE_LOCK=glibc, and every
// rwlock under helgrind (which models glibc's rwlock and cannot see ours) goes to glibc.
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

#include "contend/shared_mutex.hpp"
#include "interpose/exports.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/rwlock_layout.hpp"
#include "interpose/rwlock_thread.hpp"
#include "interpose/timespec.hpp"

using namespace contend::interpose;

namespace {

// As the mutexes' (mutex_interpose.cpp): no exception crosses into C. A lock fails only to
// get memory for its first park (EAGAIN); an unlock of a mode not held throws, EPERM.
template <class F>
int no_throw(int error, F&& f) noexcept {
    try {
        return f();
    } catch (...) {
        return error;
    }
}

// Whether this call runs the rwlock on contend::shared_mutex (else glibc's functions do).
// Neither input changes for the object's life: the choice is fixed once resolved, and the kind
// bytes are written by init only.
inline bool ours(pthread_rwlock_t* l) noexcept {
    const int c = current_choice_and_flags();
    return choice_of(c) != lock_choice::glibc && (c & valgrind_flag) == 0 && rwlock_is_default_private(l);
}

inline bool holds_write(const pthread_rwlock_t* l) noexcept { return rwlock_writer(l) == rwlock_thread_id(); }

// A read taken: recursive when this thread may hold one already (rwlock_thread.hpp).
bool try_read(pthread_rwlock_t* l) noexcept {
    contend::shared_mutex& m = as_shared_mutex(l);
    read_holds& reads = this_thread_reads();
    if (!(reads.may_hold(l) ? m.try_lock_shared_recursive() : m.try_lock_shared())) return false;
    reads.add(l);
    return true;
}

bool try_write(pthread_rwlock_t* l) noexcept {
    if (!as_shared_mutex(l).try_lock()) return false;
    set_rwlock_writer(l, rwlock_thread_id());
    return true;
}

// The blocking forms after their checks: 0, ETIMEDOUT or EAGAIN. abstime null: no deadline.
int read(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) noexcept {
    contend::shared_mutex& m = as_shared_mutex(l);
    read_holds& reads = this_thread_reads();
    const bool recursive = reads.may_hold(l);
    return no_throw(EAGAIN, [&] {
        if (abstime == nullptr) {
            if (recursive) m.lock_shared_recursive();
            else m.lock_shared();
        } else {
            const int rc = with_deadline(clock, abstime, [&](auto t) {
                return (recursive ? m.try_lock_shared_recursive_until(t) : m.try_lock_shared_until(t)) ? 0 : ETIMEDOUT;
            });
            if (rc != 0) return rc;
        }
        reads.add(l);
        return 0;
    });
}

int write(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) noexcept {
    contend::shared_mutex& m = as_shared_mutex(l);
    return no_throw(EAGAIN, [&] {
        if (abstime == nullptr) {
            m.lock();
        } else {
            const int rc = with_deadline(clock, abstime, [&](auto t) { return m.try_lock_until(t) ? 0 : ETIMEDOUT; });
            if (rc != 0) return rc;
        }
        set_rwlock_writer(l, rwlock_thread_id());
        return 0;
    });
}

// rdlock and wrlock, plain or timed (timed: abstime not null), in glibc's order of checks.
template <bool writing>
int acquire(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) noexcept {
    if (abstime != nullptr && ((clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) || !valid_nanoseconds(abstime)))
        return EINVAL;
    if (holds_write(l)) return EDEADLK;
    if (writing ? try_write(l) : try_read(l)) return 0;
    return writing ? write(l, clock, abstime) : read(l, clock, abstime);
}

int release(pthread_rwlock_t* l) noexcept {
    contend::shared_mutex& m = as_shared_mutex(l);
    if (holds_write(l)) {
        // Cleared before the release: once released, another writer may write its own id.
        set_rwlock_writer(l, 0);
        return no_throw(EPERM, [&] {
            m.unlock();
            return 0;
        });
    }
    const int rc = no_throw(EPERM, [&] {
        m.unlock_shared();
        return 0;
    });
    if (rc == 0) this_thread_reads().remove(l);
    return rc;
}

}  // namespace

extern "C" {

// glibc's init writes the kind and pshared bytes from the attributes (and validates them) and
// zeroes the rest, which is a free shared_mutex and no writer: nothing of ours to add.
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_init(pthread_rwlock_t* l, const pthread_rwlockattr_t* attr) {
    return glibc().rwlock_init(l, attr);
}

// glibc's destroy checks nothing and always says 0; so does ours (a rwlock destroyed while
// held is undefined behaviour, and a program that re-inits it gets all-zero bytes again).
CONTEND_INTERPOSE_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_destroy(l);
    return 0;
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_rdlock(l);
    return acquire<false>(l, CLOCK_REALTIME, nullptr);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_tryrdlock(l);
    return try_read(l) ? 0 : EBUSY;
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* abstime) {
    if (!ours(l)) return glibc().rwlock_timedrdlock(l, abstime);
    return acquire<false>(l, CLOCK_REALTIME, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
    if (!ours(l)) return glibc().rwlock_clockrdlock(l, clock, abstime);
    return acquire<false>(l, clock, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_wrlock(l);
    return acquire<true>(l, CLOCK_REALTIME, nullptr);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_trywrlock(l);
    return try_write(l) ? 0 : EBUSY;
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* abstime) {
    if (!ours(l)) return glibc().rwlock_timedwrlock(l, abstime);
    return acquire<true>(l, CLOCK_REALTIME, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
    if (!ours(l)) return glibc().rwlock_clockwrlock(l, clock, abstime);
    return acquire<true>(l, clock, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* l) {
    if (!ours(l)) return glibc().rwlock_unlock(l);
    return release(l);
}

}  // extern "C"
