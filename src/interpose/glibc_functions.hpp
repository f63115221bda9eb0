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
    int (*rwlock_init)(pthread_rwlock_t*, const pthread_rwlockattr_t*);
    int (*rwlock_destroy)(pthread_rwlock_t*);
    int (*rwlock_rdlock)(pthread_rwlock_t*);
    int (*rwlock_tryrdlock)(pthread_rwlock_t*);
    int (*rwlock_timedrdlock)(pthread_rwlock_t*, const timespec*);
    int (*rwlock_clockrdlock)(pthread_rwlock_t*, clockid_t, const timespec*);
    int (*rwlock_wrlock)(pthread_rwlock_t*);
    int (*rwlock_trywrlock)(pthread_rwlock_t*);
    int (*rwlock_timedwrlock)(pthread_rwlock_t*, const timespec*);
    int (*rwlock_clockwrlock)(pthread_rwlock_t*, clockid_t, const timespec*);
    int (*rwlock_unlock)(pthread_rwlock_t*);
};

// Resolved with dlsym(RTLD_NEXT) on first use (the constructor resolves them all up front).
// A call that arrives while this thread is inside that resolution (dlsym itself taking a
// mutex that glibc runs, through an allocator for instance) gets stand-ins that fail with
// EAGAIN, or on x86-64 glibc's exported __pthread_mutex_* aliases for the basic five.
const glibc_functions& glibc() noexcept;

}  // namespace contend::interpose
