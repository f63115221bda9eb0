// Gives the CPU to another runnable thread: sched_yield, or in the model-checking build a
// scheduling point where the strategies prefer another thread (docs/design/model-checking.md).
// Every yield of a spin or a crowd goes through it; a measurement of what sched_yield costs
// (spin_wait.cpp) calls sched_yield itself.
#pragma once

#include <sched.h>

#if CONTEND_MODEL_CHECK
#include "contend/internal/model_atomic.hpp"
#endif

namespace contend::internal {

inline void yield_cpu() noexcept {
#if CONTEND_MODEL_CHECK
    if (model::hooks::in_execution()) {
        model::hooks::point(model::step_kind::yield, nullptr);
        return;
    }
#endif
    sched_yield();
}

}  // namespace contend::internal
