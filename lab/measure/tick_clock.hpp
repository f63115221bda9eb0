// A clock cheap enough to read twice per operation inside a hot loop: the CPU's time-stamp
// counter, turned into nanoseconds against the steady clock over an interval the caller
// marks (a repetition). The rw suite times write acquisitions with it: on the 2-CPU AMD EPYC
// VM (kvm-clock) a steady-clock read cost 60 to 80 ns and a TSC read about 25 (a loop of a
// million reads), and one read of each pair lies inside a critical section of a few ns. The
// TSC there advances in steps of 21 ticks (about 7 ns): the resolution of a timed wait.
// Internal to the lab.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace contend::lab {

// Ticks of the CPU's counter: the TSC on x86-64 (invariant on the machines the lab runs on:
// `constant_tsc` and `nonstop_tsc` in /proc/cpuinfo); elsewhere the steady clock's
// nanoseconds, slower to read but correct, so that the lab builds on any target.
inline std::uint64_t read_ticks() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch() /
                                      std::chrono::nanoseconds(1));
#endif
}

// Ticks per nanosecond over an interval: start() at its beginning, per_ns() at its end.
// Measured, not read from the CPU's nominal frequency, which a VM may not report.
class tick_rate {
public:
    void start() noexcept {
        steady_ = std::chrono::steady_clock::now();
        ticks_ = read_ticks();
    }
    // 0 when the interval is too short to say (under a microsecond).
    double per_ns() const noexcept {
        const auto ticks = read_ticks() - ticks_;
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - steady_).count();
        return ns < 1e3 ? 0 : static_cast<double>(ticks) / ns;
    }

private:
    std::chrono::steady_clock::time_point steady_{};
    std::uint64_t ticks_ = 0;
};

}  // namespace contend::lab
