// The one place that talks to ThreadSanitizer (and helgrind) by hand: the library's, the
// interposer's and the lab's annotations all come from here. Internal: under include/ only
// so that the lab, which sees no src/, can use it.
//
// tsan_acquired / tsan_releasing: happens-before edges, beside the atomics that make them.
//
// In an ordinary TSan build these calls repeat what TSan already learns from the atomic they
// stand next to (the same address, the same direction), so they add no edge and hide no race.
// They matter where TSan stops learning from atomics: a thread inside one of TSan's blocking
// interceptors (a program's pthread_cond_wait that reaches contend's interposer, the only such
// path) runs with thr->ignore_interceptors set, and TSan's atomics then record no
// synchronization, while __tsan_acquire and __tsan_release still do (they check only
// ignore_sync). Without them a parking-lot slot or bucket handed over through such a thread
// loses the order its atomics gave it, and TSan reports races that are not there
// (docs/interpose.md). The interposer also calls them around the glibc mutexes its own
// objects lock past TSan's interceptors (src/interpose/internal_locks.cpp), where TSan would
// otherwise see no edge at all.
//
// Outside TSan builds they tell helgrind (valgrind) the same edges, when the process runs
// under helgrind and the library was built with valgrind's <valgrind/helgrind.h>: helgrind
// learns nothing from atomics, and without them it reports the parking lot's queues and
// slots as raced when the LD_PRELOAD interposer runs a program's mutexes (docs/interpose.md).
// Natively each is a load of a flag set at start-up and a branch never taken; the client
// requests are out of line (helgrind_edges.cpp). Every call site is on a slow path (the
// parking lot's bucket lock, a park, an unpark; the interposer's own locks and its profile's
// stripes lock), never on a lock's fast path. Built without the header they are nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#elif defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#define CONTEND_HELGRIND_EDGES 1
#endif
#endif

namespace contend::internal {

#if defined(CONTEND_HELGRIND_EDGES)
// Whether this process runs under helgrind: set before any dynamic initialization of the
// library (helgrind_edges.cpp), read on the slow paths that tell it their edges.
extern bool helgrind_running;
void helgrind_happens_after(const volatile void* address) noexcept;
void helgrind_happens_before(const volatile void* address) noexcept;
void helgrind_disable_checking(const volatile void* address, std::size_t size) noexcept;
#endif

// TSan alone, nothing elsewhere (not even helgrind's flag test): the edges of a lock that
// synchronizes where TSan cannot see it (the lab's peers: Debian's absl, a shared library built
// without TSan; Concurrency Kit's inline assembly; glibc's C11 mtx_t, which calls the internal
// pthread functions TSan does not intercept). Without them TSan reports the counter such a lock
// protects as a race. Their adapters are measured, so natively these are nothing.
#if defined(__SANITIZE_THREAD__)
inline void tsan_only_acquired(const volatile void* address) noexcept { __tsan_acquire(const_cast<void*>(address)); }
inline void tsan_only_releasing(const volatile void* address) noexcept { __tsan_release(const_cast<void*>(address)); }
#else
inline void tsan_only_acquired(const volatile void*) noexcept {}
inline void tsan_only_releasing(const volatile void*) noexcept {}
#endif

// After an acquire (load, RMW, or lock) of the atomic or mutex at `address`.
inline void tsan_acquired(const volatile void* address) noexcept {
#if defined(CONTEND_HELGRIND_EDGES)
    if (helgrind_running) [[unlikely]]
        helgrind_happens_after(address);
#endif
    tsan_only_acquired(address);
}

// Before a release (store, RMW, or unlock) of the atomic or mutex at `address`.
inline void tsan_releasing(const volatile void* address) noexcept {
#if defined(CONTEND_HELGRIND_EDGES)
    if (helgrind_running) [[unlikely]]
        helgrind_happens_before(address);
#endif
    tsan_only_releasing(address);
}

// Memory helgrind must not check: an atomic that is stored to with a plain store (helgrind
// takes every access that is not a locked instruction for a plain one, and orders nothing
// by it), or a static whose one write C++'s guarded initialization orders before its reads
// (a protocol helgrind does not follow). Called once per object, where it is made.
inline void helgrind_unchecked(const volatile void* address, std::size_t size) noexcept {
#if defined(CONTEND_HELGRIND_EDGES)
    if (helgrind_running) [[unlikely]]
        helgrind_disable_checking(address, size);
#else
    (void)address;
    (void)size;
#endif
}

// For its lifetime TSan ignores the calling thread's accesses and synchronization (TSan
// builds; nothing elsewhere). The interposer's cond wait holds one (cond_interpose.cpp says
// why).
struct tsan_ignored_thread {
#if defined(__SANITIZE_THREAD__)
    tsan_ignored_thread() noexcept { __tsan_ignore_thread_begin(); }
    ~tsan_ignored_thread() { __tsan_ignore_thread_end(); }
#else
    tsan_ignored_thread() noexcept = default;
#endif
    tsan_ignored_thread(const tsan_ignored_thread&) = delete;
    tsan_ignored_thread& operator=(const tsan_ignored_thread&) = delete;
};

// The initializer of the function-local static at `address`: `value`, with the static left
// unchecked by helgrind (above). `static T* p = helgrind_static(&p, new T);`
template <class T>
T helgrind_static(const T* address, T value) noexcept {
    helgrind_unchecked(address, sizeof(T));
    return value;
}

}  // namespace contend::internal
