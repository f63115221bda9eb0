// contend::cpu_relax(): the pause to put in every spin-wait loop.
#pragma once

#include "contend/internal/spin_pause.hpp"

namespace contend {

// Tells the core that this is a spin-wait loop. x86 `pause` stops the pipeline from
// speculating down the loop and gives the sibling hyperthread the core (about 10 cycles
// on Zen, up to 140 on Skylake-SP). arm64 `yield` is a no-op on most cores, so we use
// `isb`, which stalls for roughly the same few dozen cycles as x86 `pause`. Elsewhere, a
// compiler barrier only. Never blocks, never enters the kernel.
inline void cpu_relax() noexcept { internal::spin_pause(); }

}  // namespace contend
