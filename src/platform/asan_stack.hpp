// After a POSIX cancellation's asynchronous unwind, for AddressSanitizer builds.
//
// The unwind starts in glibc's cancellation signal handler, inside a futex wait, and passes
// frames without returning from them: the redzones they poisoned can stay poisoned below the
// frames it reaches. ASan's own __asan_handle_no_return, at a later rethrow or cleanup,
// then places a local there and fails a CHECK (asan_thread.cpp: no frame owns that poison;
// interpose/cancel_in_cond_wait failed so under ASan once the condition variable's wait had
// a catch of its own). The interposer's outermost frame of a wait (dispatch_wait) clears the
// stack below itself, which no live frame uses, before the unwind goes on into the program.
// Elsewhere this is nothing.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/asan_interface.h>

#include <cstdint>
#endif

namespace contend::internal {

[[gnu::noinline]] inline void unpoison_stack_below_here() noexcept {
#if defined(__SANITIZE_ADDRESS__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* low = nullptr;
    std::size_t size = 0;
    const bool got = pthread_attr_getstack(&attr, &low, &size) == 0;
    pthread_attr_destroy(&attr);
    if (!got) return;
    const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    const auto bottom = reinterpret_cast<std::uintptr_t>(low);
    if (here > bottom) __asan_unpoison_memory_region(low, here - bottom);
#endif
}

}  // namespace contend::internal
