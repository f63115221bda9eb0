// glibc's own pthread_mutex_*, pthread_cond_* and pthread_rwlock_*: what every call we do not
// handle goes to.
#pragma once

#include <pthread.h>
#include <time.h>

namespace contend::interpose {

struct glibc_functions {
    int (*mutex_init)(pthread_mutex_t*, const pthread_mutexattr_t*);
    int (*mutex_destroy)(pthread_mutex_t*);
    int (*mutex_lock)(pthread_mutex_t*);
    int (*mutex_trylock)(pthread_mutex_t*);
    int (*mutex_timedlock)(pthread_mutex_t*, const timespec*);
    int (*mutex_clocklock)(pthread_mutex_t*, clockid_t, const timespec*);
    int (*mutex_unlock)(pthread_mutex_t*);
    int (*cond_init)(pthread_cond_t*, const pthread_condattr_t*);
    int (*cond_destroy)(pthread_cond_t*);
    int (*cond_wait)(pthread_cond_t*, pthread_mutex_t*);
    int (*cond_timedwait)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
    int (*cond_clockwait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
    int (*cond_signal)(pthread_cond_t*);
    int (*cond_broadcast)(pthread_cond_t*);
    // The rwlocks' typed from their declarations: a mismatch does not compile.
    decltype(&::pthread_rwlock_init) rwlock_init;
    decltype(&::pthread_rwlock_destroy) rwlock_destroy;
    decltype(&::pthread_rwlock_rdlock) rwlock_rdlock;
    decltype(&::pthread_rwlock_tryrdlock) rwlock_tryrdlock;
    decltype(&::pthread_rwlock_timedrdlock) rwlock_timedrdlock;
    decltype(&::pthread_rwlock_clockrdlock) rwlock_clockrdlock;
    decltype(&::pthread_rwlock_wrlock) rwlock_wrlock;
    decltype(&::pthread_rwlock_trywrlock) rwlock_trywrlock;
    decltype(&::pthread_rwlock_timedwrlock) rwlock_timedwrlock;
    decltype(&::pthread_rwlock_clockwrlock) rwlock_clockwrlock;
    decltype(&::pthread_rwlock_unlock) rwlock_unlock;
};

// Resolved with dlsym(RTLD_NEXT) on first use (the constructor resolves them all up front).
// A call that arrives while this thread is inside that resolution (dlsym itself taking a
// mutex that glibc runs, through an allocator for instance) gets stand-ins that fail with
// EAGAIN, or on x86-64 glibc's exported __pthread_mutex_* aliases for the basic five.
const glibc_functions& glibc() noexcept;

}  // namespace contend::interpose
