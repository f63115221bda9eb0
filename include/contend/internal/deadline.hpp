// Every wait in contend is bounded by an absolute steady_clock deadline; time_point::max()
// means "no deadline". Callers may pass any clock: we convert once, at the edge.
#pragma once

#include <chrono>

namespace contend::internal {

using clock = std::chrono::steady_clock;
using deadline = clock::time_point;

inline constexpr deadline no_deadline = deadline::max();

template <class Rep, class Period>
deadline deadline_after(const std::chrono::duration<Rep, Period>& d) {
    const auto now = clock::now();
    if (d <= d.zero()) return now;
    // Saturate instead of overflowing for "wait for a very long time".
    const auto max_left = std::chrono::duration_cast<std::chrono::duration<double>>(deadline::max() - now);
    if (std::chrono::duration<double>(d) >= max_left) return no_deadline;
    return now + std::chrono::ceil<clock::duration>(d);
}

template <class Clock, class Duration>
deadline to_deadline(const std::chrono::time_point<Clock, Duration>& t) {
    if constexpr (std::is_same_v<Clock, clock>) {
        return std::chrono::time_point_cast<clock::duration>(t);
    } else {
        // A different clock: convert through "time remaining now". Waiting on the steady
        // clock means a wall-clock jump does not shorten or stretch the wait.
        const auto remaining = t - Clock::now();
        return deadline_after(remaining);
    }
}

}  // namespace contend::internal
