// Every wait in contend is bounded by an absolute steady_clock deadline; time_point::max()
// means "no deadline". Callers may pass any clock, duration and representation: we convert
// once, at the edge, and saturate: a deadline too far off for the steady clock's nanoseconds
// is no deadline, one too far back (or NaN) has passed.
#pragma once

#include <chrono>
#include <type_traits>

#if CONTEND_MODEL_CHECK
namespace contend::model::hooks {
// The model execution's clock (docs/design/model-checking.md); the steady clock outside one.
std::chrono::steady_clock::time_point now() noexcept;
}  // namespace contend::model::hooks
#endif

namespace contend::internal {

#if CONTEND_MODEL_CHECK
// The model-checking build's clock: steady_clock's time points, read from the scheduler, whose
// time moves only when a thread yields or a timed wait times out.
struct clock {
    using duration = std::chrono::steady_clock::duration;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::steady_clock::time_point;
    static constexpr bool is_steady = true;
    static time_point now() noexcept { return model::hooks::now(); }
};
#else
using clock = std::chrono::steady_clock;
#endif
using deadline = clock::time_point;

inline constexpr deadline no_deadline = deadline::max();

// now + d, saturated: "not positive" (NaN included) is now, too long to represent is
// no_deadline.
template <class Rep, class Period>
deadline deadline_after(const std::chrono::duration<Rep, Period>& d) {
    const auto now = clock::now();
    if (!(d > d.zero())) return now;
    // Saturate instead of overflowing for "wait for a very long time".
    const auto max_left = std::chrono::duration_cast<std::chrono::duration<double>>(deadline::max() - now);
    if (std::chrono::duration<double>(d) >= max_left) return no_deadline;
    return now + std::chrono::ceil<clock::duration>(d);
}

// A steady time since the clock's epoch as a deadline, saturated: past what the deadline's
// nanoseconds hold (a coarse Duration's max(), 1e30 s, +inf) is no_deadline, below it
// (-inf, NaN too) is deadline::min(), a time long passed. The range is checked in floating
// point, where no count overflows; 9.2e9 s is just inside the nanoseconds' 9.22e9 s, so a
// count that passes converts without overflow, rounded up as deadline_after does.
template <class Rep, class Period>
deadline steady_deadline(const std::chrono::duration<Rep, Period>& since_epoch) {
    if constexpr (std::is_same_v<std::chrono::duration<Rep, Period>, clock::duration>) {
        return deadline(since_epoch);
    } else {
        constexpr double range_seconds = 9.2e9;
        const double seconds = std::chrono::duration<double>(since_epoch).count();
        if (seconds >= range_seconds) return no_deadline;
        if (!(seconds > -range_seconds)) return deadline::min();
        return deadline(std::chrono::ceil<clock::duration>(since_epoch));
    }
}

template <class Clock, class Duration>
deadline to_deadline(const std::chrono::time_point<Clock, Duration>& t) {
    // (In the model-checking build a steady_clock time point is read as the model's time.)
    if constexpr (std::is_same_v<Clock, clock> || std::is_same_v<Clock, std::chrono::steady_clock>) {
        return steady_deadline(t.time_since_epoch());
    } else {
        // A different clock: convert through "time remaining now". Waiting on the steady
        // clock means a wall-clock jump does not shorten or stretch the wait. The distance is
        // first taken in floating point, where no t can overflow it (t - now overflowed for
        // a far-past t such as time_point::min(), and for a far-future t of a coarse
        // Duration); within a day of now it is taken again exactly, so that a near deadline
        // never comes early by a rounding.
        const auto now = Clock::now();
        using seconds = std::chrono::duration<double>;
        const seconds remaining = std::chrono::duration_cast<seconds>(t.time_since_epoch()) -
                                  std::chrono::duration_cast<seconds>(now.time_since_epoch());
        constexpr seconds near{24.0 * 3600.0};
        if (remaining < -near) return clock::now();
        if (remaining < near) return deadline_after(t - now);
        return deadline_after(remaining);
    }
}

// d as the clock's duration, saturated: "not positive" (NaN included) is zero, too long to
// represent (hours::max(), 1e30 s, +inf) is duration::max(), which the pool reads as never.
template <class Rep, class Period>
clock::duration saturated_duration(const std::chrono::duration<Rep, Period>& d) {
    if constexpr (std::is_same_v<std::chrono::duration<Rep, Period>, clock::duration>) {
        return d;
    } else {
        if (!(d > d.zero())) return clock::duration::zero();
        constexpr double range_seconds = 9.2e9;  // inside the nanoseconds' 9.22e9 s, as steady_deadline
        if (std::chrono::duration<double>(d).count() >= range_seconds) return clock::duration::max();
        return std::chrono::ceil<clock::duration>(d);
    }
}

// now + d on the steady clock, saturated at time_point::max() (a far-future timer never
// fires) and at now for a negative d.
inline deadline steady_after(clock::duration d) noexcept {
    const auto now = clock::now();
    if (d <= clock::duration::zero()) return now;
    if (d >= deadline::max() - now) return deadline::max();
    return now + d;
}

}  // namespace contend::internal
