// Happens-before edges told to ThreadSanitizer by hand, beside the atomics that make them.
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
// otherwise see no edge at all. Outside TSan builds they are nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace contend::internal {

// After an acquire (load, RMW, or lock) of the atomic or mutex at `address`.
inline void tsan_acquired(const volatile void* address) noexcept {
#if defined(__SANITIZE_THREAD__)
    __tsan_acquire(const_cast<void*>(address));
#else
    (void)address;
#endif
}

// Before a release (store, RMW, or unlock) of the atomic or mutex at `address`.
inline void tsan_releasing(const volatile void* address) noexcept {
#if defined(__SANITIZE_THREAD__)
    __tsan_release(const_cast<void*>(address));
#else
    (void)address;
#endif
}

}  // namespace contend::internal
