// An asymmetric fence: one expensive call that acts as a full memory barrier on every
// thread of the process, so that hot paths elsewhere can get by with a compiler barrier.
// Linux: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (kernel 4.14+); where a seccomp filter
// refuses membarrier, before the library starts or at any time after, on x86-64 a TLB
// shootdown (an mprotect of a locked page of ours), chosen once (heavy_fence.cpp says why it
// is a barrier). Elsewhere, or when the build forces the portable backend, unavailable, and
// callers fall back to fences. A process where membarrier worked at the start and is refused
// later, with no shootdown to fall back to (not x86-64, or mlock refused), stops with a
// message rather than lose a wake-up.
#pragma once

namespace contend::internal {

// Registers the process for expedited barriers. True if heavy_fence() may be used.
bool heavy_fence_init() noexcept;

// Precondition: heavy_fence_init() returned true.
void heavy_fence() noexcept;

// heavy_fence_init()'s answer, asked once per process.
inline bool heavy_fence_available() noexcept {
    static const bool available = heavy_fence_init();
    return available;
}

}  // namespace contend::internal
