// Locks that synchronize where ThreadSanitizer cannot see it: Debian's absl (a shared
// library built without TSan), Concurrency Kit (inline assembly) and glibc's C11 mtx_t
// (it calls the internal pthread functions, which TSan does not intercept). Without help
// TSan reports the counter such a lock protects as a race; their adapters tell it about
// the acquire and the release. Elsewhere these are no-ops.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define CONTEND_TSAN_ACQUIRE(p) __tsan_acquire(const_cast<void*>(static_cast<const volatile void*>(p)))
#define CONTEND_TSAN_RELEASE(p) __tsan_release(const_cast<void*>(static_cast<const volatile void*>(p)))
#else
#define CONTEND_TSAN_ACQUIRE(p) ((void)(p))
#define CONTEND_TSAN_RELEASE(p) ((void)(p))
#endif
