// What helgrind (valgrind's race detector) is told of the mutexes and conds the interposer
// runs on its own locks (docs/interpose.md). Helgrind models glibc's pthread functions by
// wrapping them in libc; ours come before libc and it never sees them, nor does it read
// contend's atomics as a lock, so without these notes every access a mutex of ours orders
// is a race to it. The notes are helgrind's client requests (<valgrind/helgrind.h>): the
// mutex's acquisitions and releases, as its own wrappers report glibc's, and the cond's
// signal-to-wake-up edge; the bytes of the mutex and the cond themselves, which our locks
// read and write with atomics helgrind cannot order, are left unchecked, as helgrind's
// default suppressions leave glibc's accesses to them.
//
// Cost: nothing outside helgrind. The notes are made only on the interposer's noted path,
// which the pthread functions take when a flag beside the lock choice is set
// (lock_choice.hpp: valgrind_flag, set at start-up when the process runs under helgrind),
// and the mutex functions test that flag in the instruction that already tested the
// profile's: their fast path gained no instruction (a cond's signal and broadcast, one test
// of the word they load anyway). Under helgrind each note is a request the tool handles.
// What the library's parking lot does inside a wait it tells helgrind itself
// (contend/internal/tsan.hpp). Built without valgrind's header, there are no notes and the flag
// is never set.
#pragma once

#include <pthread.h>

#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#define CONTEND_INTERPOSE_HELGRIND 1
#endif
#endif

namespace contend::interpose::helgrind {

#if defined(CONTEND_INTERPOSE_HELGRIND)
// The notes below running() are out of line: a request's argument block stays out of the
// frames of the profile's path, which shares the noted path.

// Whether this process runs under helgrind (any other tool, or none, answers -2). Compared as
// an int: outside valgrind the request's default comes back through a 32-bit move on x86-64
// (valgrind.h hands the int -2 to the asm, and the upper half of the register is zero), so the
// long reads 4294967294, and a compare with -2 as a long took every process for helgrind's:
// every mutex call went down the noted path.
inline bool running() noexcept {
    char probe = 0;
    return static_cast<int>(VALGRIND_HG_GET_ABITS(&probe, nullptr, 1)) != -2;
}
// Before our lock reads or writes the mutex: its bytes are the lock's, whose accesses only
// our atomics order. Again on every call: memory allocated anew is checked again.
[[gnu::noinline]] inline void unchecked(pthread_mutex_t* m) noexcept { VALGRIND_HG_DISABLE_CHECKING(m, sizeof *m); }
[[gnu::noinline]] inline void unchecked(pthread_cond_t* c) noexcept { VALGRIND_HG_DISABLE_CHECKING(c, sizeof *c); }
// Around each acquisition and release of a mutex our lock runs, as helgrind's wrappers of
// glibc's functions tell it (the acquisition's "after" only when it took the mutex).
[[gnu::noinline]] inline void acquiring(pthread_mutex_t* m, bool try_lock) noexcept {
    VALGRIND_HG_MUTEX_LOCK_PRE(m, try_lock ? 1 : 0);
}
[[gnu::noinline]] inline void acquired(pthread_mutex_t* m) noexcept { VALGRIND_HG_MUTEX_LOCK_POST(m); }
[[gnu::noinline]] inline void releasing(pthread_mutex_t* m) noexcept { VALGRIND_HG_MUTEX_UNLOCK_PRE(m); }
[[gnu::noinline]] inline void released(pthread_mutex_t* m) noexcept { VALGRIND_HG_MUTEX_UNLOCK_POST(m); }
[[gnu::noinline]] inline void initialized(pthread_mutex_t* m) noexcept { VALGRIND_HG_MUTEX_INIT_POST(m, 0); }
[[gnu::noinline]] inline void destroying(pthread_mutex_t* m) noexcept { VALGRIND_HG_MUTEX_DESTROY_PRE(m); }
// A signal or broadcast happens before the wake-ups it causes (helgrind's model of glibc's
// cond): everything the notifier did before it is ordered before what the woken waiter does.
[[gnu::noinline]] inline void notifying(pthread_cond_t* c) noexcept { ANNOTATE_HAPPENS_BEFORE(c); }
[[gnu::noinline]] inline void woken(pthread_cond_t* c) noexcept { ANNOTATE_HAPPENS_AFTER(c); }
#else
inline bool running() noexcept { return false; }
inline void unchecked(pthread_mutex_t*) noexcept {}
inline void unchecked(pthread_cond_t*) noexcept {}
inline void acquiring(pthread_mutex_t*, bool) noexcept {}
inline void acquired(pthread_mutex_t*) noexcept {}
inline void releasing(pthread_mutex_t*) noexcept {}
inline void released(pthread_mutex_t*) noexcept {}
inline void initialized(pthread_mutex_t*) noexcept {}
inline void destroying(pthread_mutex_t*) noexcept {}
inline void notifying(pthread_cond_t*) noexcept {}
inline void woken(pthread_cond_t*) noexcept {}
#endif

}  // namespace contend::interpose::helgrind
