// pthread_mutex_*: a mutex whose kind is 0 runs on the contend::mutex in its first byte;
// every other mutex, and every mutex when CONTEND_INTERPOSE_LOCK=glibc, goes to glibc.
#include <pthread.h>

#include <cerrno>
#include <cstring>

#include "interpose/exports.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/glibc_layout.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/timespec.hpp"

using namespace contend::interpose;

namespace {

inline bool ours(const pthread_mutex_t* m) noexcept {
    return current_lock() == lock_choice::contend_mutex && mutex_kind(m) == 0;
}

// contend reports errors by exceptions; none may cross into C. A lock can only fail to get
// memory for its first park (EAGAIN); an unlock of a mutex that is not held, where contend
// notices it, is EPERM, as an error-checking mutex would say.
template <class F>
int no_throw(int error, F&& f) noexcept {
    try {
        return f();
    } catch (...) {
        return error;
    }
}

int timed_lock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime) noexcept {
    // As glibc: the clock is checked first, the timeout only when the call has to wait.
    if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return EINVAL;
    contend::mutex& cm = as_contend_mutex(m);
    if (cm.try_lock()) return 0;
    if (!valid_nanoseconds(abstime)) return EINVAL;
    return no_throw(EAGAIN, [&] {
        return with_deadline(clock, abstime, [&](auto t) { return cm.try_lock_until(t) ? 0 : ETIMEDOUT; });
    });
}

}  // namespace

extern "C" {

CONTEND_INTERPOSE_EXPORT int pthread_mutex_init(pthread_mutex_t* m, const pthread_mutexattr_t* attr) {
    if (current_lock() == lock_choice::glibc) return glibc().mutex_init(m, attr);
    if (attr == nullptr) {
        // What glibc's init does for no attributes, without the call.
        std::memset(static_cast<void*>(m), 0, sizeof *m);
        return 0;
    }
    // glibc validates the attributes and writes __kind; a kind-0 result is then ours, and
    // glibc has zeroed __lock (our byte) already. Cleared again, so that does not depend on it.
    const int rc = glibc().mutex_init(m, attr);
    if (rc == 0 && mutex_kind(m) == 0) __atomic_store_n(&m->__data.__lock, 0, __ATOMIC_RELEASE);
    return rc;
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_destroy(pthread_mutex_t* m) {
    if (!ours(m)) return glibc().mutex_destroy(m);
    if (as_contend_mutex(m).is_locked()) return EBUSY;  // glibc says EBUSY for a held mutex too
    // glibc marks a destroyed mutex with kind -1, so that later use fails with EINVAL; with
    // kind -1 it is no longer ours, and glibc's functions give exactly that answer.
    __atomic_store_n(&m->__data.__kind, -1, __ATOMIC_RELEASE);
    return 0;
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
    if (!ours(m)) return glibc().mutex_lock(m);
    return no_throw(EAGAIN, [m] {
        as_contend_mutex(m).lock();
        return 0;
    });
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_trylock(pthread_mutex_t* m) {
    if (!ours(m)) return glibc().mutex_trylock(m);
    return as_contend_mutex(m).try_lock() ? 0 : EBUSY;
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* abstime) {
    if (!ours(m)) return glibc().mutex_timedlock(m, abstime);
    return timed_lock(m, CLOCK_REALTIME, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
    if (!ours(m)) return glibc().mutex_clocklock(m, clock, abstime);
    return timed_lock(m, clock, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) {
    if (!ours(m)) return glibc().mutex_unlock(m);
    return no_throw(EPERM, [m] {
        as_contend_mutex(m).unlock();
        return 0;
    });
}

}  // extern "C"
