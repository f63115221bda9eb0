// POSIX absolute timeouts (a struct timespec on a named clock) as std::chrono time points.
#pragma once

#include <time.h>

#include <chrono>

namespace contend::interpose {

inline bool valid_nanoseconds(const timespec* t) noexcept { return t->tv_nsec >= 0 && t->tv_nsec < 1'000'000'000; }

template <class Clock>
typename Clock::time_point to_time_point(const timespec* t) noexcept {
    using namespace std::chrono;
    // Saturated: a tv_sec beyond what nanoseconds since the epoch hold (about year 2262) is
    // "never"; one before it, "already passed".
    constexpr auto max_s = duration_cast<seconds>(Clock::duration::max()).count() - 1;
    if (t->tv_sec >= max_s) return Clock::time_point::max();
    if (t->tv_sec <= -max_s) return Clock::time_point::min();
    return typename Clock::time_point(
        duration_cast<typename Clock::duration>(seconds(t->tv_sec) + nanoseconds(t->tv_nsec)));
}

// CLOCK_MONOTONIC is steady_clock's clock in libstdc++ and CLOCK_REALTIME system_clock's.
// Calls f(time_point) with the matching clock; returns EINVAL for other clocks, as glibc does.
template <class F>
int with_deadline(clockid_t clock, const timespec* t, F&& f) {
    if (clock == CLOCK_MONOTONIC) return f(to_time_point<std::chrono::steady_clock>(t));
    if (clock == CLOCK_REALTIME) return f(to_time_point<std::chrono::system_clock>(t));
    return EINVAL;
}

}  // namespace contend::interpose
