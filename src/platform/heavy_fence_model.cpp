// The model-checking build's process-wide barrier, in place of heavy_fence.cpp (CMakeLists.txt
// chooses). The build keeps the light unlock path (the registry in light mode) and models the
// barrier as the fence it stands for: one scheduling point. The model's steps are sequentially
// consistent anyway, so it cannot show what the barrier orders on hardware
// (docs/design/model-checking.md says what that leaves to argument).
#include <atomic>

#include "contend/internal/atomic.hpp"
#include "platform/heavy_fence.hpp"

namespace contend::internal {

bool heavy_fence_init() noexcept { return true; }
void heavy_fence() noexcept { internal::thread_fence(std::memory_order_seq_cst); }

}  // namespace contend::internal
