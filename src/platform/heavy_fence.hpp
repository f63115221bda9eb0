// An asymmetric fence: one expensive call that acts as a full memory barrier on every
// thread of the process, so that hot paths elsewhere can get by with a compiler barrier.
// Linux: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (kernel 4.14+). Elsewhere, or when
// the build forces the portable backend, unavailable, and callers fall back to fences.
#pragma once

namespace contend::internal {

// Registers the process for expedited barriers. True if heavy_fence() may be used.
bool heavy_fence_init() noexcept;

// Precondition: heavy_fence_init() returned true.
void heavy_fence() noexcept;

}  // namespace contend::internal
