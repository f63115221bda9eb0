// The two sides a rwlock call can run on, with one interface, so that rwlock_interpose.cpp
// checks, dispatches and profiles each call once for both:
//   our_rwlock    contend::shared_mutex in the rwlock's bytes (rwlock_layout.hpp), with the
//                 thread's id and read table (rwlock_thread.hpp) for glibc's semantics;
//   glibc_rwlock  glibc's own functions, for a rwlock of our kind that glibc runs
//                 (CONTEND_INTERPOSE_LOCK=glibc, or helgrind) while the profile is on.
// Each has try_read and try_write (true: taken), read and write (the blocking forms after a
// failed try; abstime null waits for ever: 0, ETIMEDOUT or an error), holds_write (the
// caller's EDEADLK; glibc's side leaves it to glibc's functions) and release.
#pragma once

#include <pthread.h>

#include <cerrno>

#include "contend/shared_mutex.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/no_throw.hpp"
#include "interpose/rwlock_layout.hpp"
#include "interpose/rwlock_thread.hpp"
#include "interpose/timespec.hpp"

namespace contend::interpose {

struct our_rwlock {
    pthread_rwlock_t* l;

    bool holds_write() const noexcept { return rwlock_writer(l) == rwlock_thread_id(); }

    // A read is recursive when this thread may hold one already (rwlock_thread.hpp).
    bool try_read() noexcept {
        contend::shared_mutex& m = as_shared_mutex(l);
        read_holds& reads = this_thread_reads();
        if (!(reads.may_hold(l) ? m.try_lock_shared_recursive() : m.try_lock_shared())) return false;
        reads.add(l);
        return true;
    }
    bool try_write() noexcept {
        if (!as_shared_mutex(l).try_lock()) return false;
        set_rwlock_writer(l, rwlock_thread_id());
        return true;
    }
    int read(clockid_t clock, const timespec* abstime) noexcept {
        contend::shared_mutex& m = as_shared_mutex(l);
        read_holds& reads = this_thread_reads();
        const bool recursive = reads.may_hold(l);
        return no_throw(EAGAIN, [&] {
            if (abstime == nullptr) {
                if (recursive) m.lock_shared_recursive();
                else m.lock_shared();
            } else {
                const int rc = with_deadline(clock, abstime, [&](auto t) {
                    return (recursive ? m.try_lock_shared_recursive_until(t) : m.try_lock_shared_until(t)) ? 0
                                                                                                           : ETIMEDOUT;
                });
                if (rc != 0) return rc;
            }
            reads.add(l);
            return 0;
        });
    }
    int write(clockid_t clock, const timespec* abstime) noexcept {
        contend::shared_mutex& m = as_shared_mutex(l);
        return no_throw(EAGAIN, [&] {
            if (abstime == nullptr) {
                m.lock();
            } else {
                const int rc =
                    with_deadline(clock, abstime, [&](auto t) { return m.try_lock_until(t) ? 0 : ETIMEDOUT; });
                if (rc != 0) return rc;
            }
            set_rwlock_writer(l, rwlock_thread_id());
            return 0;
        });
    }
    // A write when the caller is the writer, else a read (as glibc's unlock decides).
    int release() noexcept {
        contend::shared_mutex& m = as_shared_mutex(l);
        if (holds_write()) {
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
};

struct glibc_rwlock {
    pthread_rwlock_t* l;

    static bool holds_write() noexcept { return false; }
    bool try_read() noexcept { return glibc().rwlock_tryrdlock(l) == 0; }
    bool try_write() noexcept { return glibc().rwlock_trywrlock(l) == 0; }
    // The clock forms take CLOCK_REALTIME as the timed forms do.
    int read(clockid_t clock, const timespec* abstime) noexcept {
        return abstime ? glibc().rwlock_clockrdlock(l, clock, abstime) : glibc().rwlock_rdlock(l);
    }
    int write(clockid_t clock, const timespec* abstime) noexcept {
        return abstime ? glibc().rwlock_clockwrlock(l, clock, abstime) : glibc().rwlock_wrlock(l);
    }
    int release() noexcept { return glibc().rwlock_unlock(l); }
};

}  // namespace contend::interpose
