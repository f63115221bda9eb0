// contend::cpu_relax(): the pause to put in every spin-wait loop.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if CONTEND_MODEL_CHECK
namespace contend::model::hooks {
void spin_hint() noexcept;
}  // namespace contend::model::hooks
#endif

namespace contend {

// Tells the core that this is a spin-wait loop. x86 `pause` stops the pipeline from
// speculating down the loop and gives the sibling hyperthread the core (about 10 cycles
// on Zen, up to 140 on Skylake-SP). arm64 `yield` is a no-op on most cores, so we use
// `isb`, which stalls for roughly the same few dozen cycles as x86 `pause`. Elsewhere, a
// compiler barrier only. Never blocks, never enters the kernel.
inline void cpu_relax() noexcept {
#if CONTEND_MODEL_CHECK
    // The model-checking build: a hint to the scheduler that this thread spins (its next
    // scheduling point is treated as a yield), and no pause, since no other thread can run
    // until this one reaches a scheduling point.
    model::hooks::spin_hint();
#elif defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("isb" ::: "memory");
#else
    asm volatile("" ::: "memory");
#endif
}

}  // namespace contend
