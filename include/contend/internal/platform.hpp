// Platform layer: the few machine facts every primitive needs.
// Internal: users of contend should not include this directly.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace contend::internal {

// The unit of coherence. 64 bytes on x86-64 and on most arm64 parts; Apple M-series and
// some Neoverse parts prefetch pairs of lines, so padding to 128 would be safer there, at
// twice the memory. We pad to 64 and say so rather than guess per CPU at compile time
// (std::hardware_destructive_interference_size is ABI-unstable across GCC flags).
inline constexpr std::size_t cache_line_size = 64;

// Tells the core that this is a spin-wait loop. x86 `pause` stops the pipeline from
// speculating down the loop and gives the sibling hyperthread the core (about 10 cycles
// on Zen, up to 140 on Skylake-SP). arm64 `yield` is a no-op on most cores, so we use
// `isb`, which stalls for roughly the same few dozen cycles as x86 `pause`.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("isb" ::: "memory");
#else
    asm volatile("" ::: "memory");
#endif
}

// A value alone on its cache line(s), so that writes to it never invalidate a neighbour.
template <class T>
struct alignas(cache_line_size) cache_padded {
    T value;

    cache_padded() = default;
    template <class... Args>
    explicit cache_padded(std::in_place_t, Args&&... args) : value(std::forward<Args>(args)...) {}

    T& operator*() noexcept { return value; }
    const T& operator*() const noexcept { return value; }
    T* operator->() noexcept { return &value; }
    const T* operator->() const noexcept { return &value; }
};

}  // namespace contend::internal
