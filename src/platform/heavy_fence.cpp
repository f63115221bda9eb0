#include "platform/heavy_fence.hpp"
#include "contend/internal/atomic.hpp"

#if defined(__linux__) && !defined(CONTEND_PORTABLE_WAIT) && !CONTEND_MODEL_CHECK
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CONTEND_HAVE_MEMBARRIER 1
#endif

#include <atomic>

namespace contend::internal {

#if CONTEND_MODEL_CHECK

// The model-checking build keeps the light unlock path (the registry in light mode) and models
// the process-wide barrier as the fence it stands for: one scheduling point. The model's steps
// are sequentially consistent anyway, so it cannot show what the barrier orders on hardware
// (docs/design/model-checking.md says what that leaves to argument).
bool heavy_fence_init() noexcept { return true; }
void heavy_fence() noexcept { internal::thread_fence(std::memory_order_seq_cst); }

#elif defined(CONTEND_HAVE_MEMBARRIER)

namespace {
long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }
}  // namespace

bool heavy_fence_init() noexcept {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void heavy_fence() noexcept {
    internal::thread_fence(std::memory_order_seq_cst);
    // Cannot fail once registered; if it somehow did, the caller's own seq_cst RMW still
    // orders this thread, and we would rather crash loudly than lose a wake-up silently.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) __builtin_trap();
}

#else

bool heavy_fence_init() noexcept { return false; }
void heavy_fence() noexcept { internal::thread_fence(std::memory_order_seq_cst); }

#endif

}  // namespace contend::internal
