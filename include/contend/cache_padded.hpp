// contend::cache_padded<T>: a value alone on its cache line(s), so that writes to it never
// invalidate a neighbour; contend::cache_line_size: the unit of coherence it pads to.
#pragma once

#include <cstddef>
#include <utility>

namespace contend {

// The unit of coherence. 64 bytes on x86-64 and on most arm64 parts; Apple M-series and
// some Neoverse parts prefetch pairs of lines, so padding to 128 would be safer there, at
// twice the memory. We pad to 64 and say so rather than guess per CPU at compile time
// (std::hardware_destructive_interference_size is ABI-unstable across GCC flags).
inline constexpr std::size_t cache_line_size = 64;

// Aligned to, and a whole number of, cache lines: two cache_padded objects never share one.
// Default construction default-initializes `value` (an atomic starts at zero);
// cache_padded(std::in_place, args...) constructs it from args.
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

}  // namespace contend
