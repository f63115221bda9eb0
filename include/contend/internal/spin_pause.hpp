// The body of contend::cpu_relax() (contend/cpu_relax.hpp) as this build needs it: the CPU's
// spin-wait pause on hardware, or in the model-checking build (docs/design/model-checking.md)
// a hint to the scheduler. The one place that knows which; the public header does not.
#pragma once

#if CONTEND_MODEL_CHECK
namespace contend::model::hooks {
void spin_hint() noexcept;
}  // namespace contend::model::hooks
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace contend::internal {

inline void spin_pause() noexcept {
#if CONTEND_MODEL_CHECK
    // A hint to the scheduler that this thread spins (its next scheduling point is treated as
    // a yield), and no pause, since no other thread can run until this one reaches a
    // scheduling point.
    model::hooks::spin_hint();
#elif defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("isb" ::: "memory");
#else
    asm volatile("" ::: "memory");
#endif
}

}  // namespace contend::internal
