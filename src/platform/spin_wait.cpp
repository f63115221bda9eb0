// Calibration and pacing for src/platform/spin_wait.hpp.
#include "platform/spin_wait.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "contend/cpu_relax.hpp"
#include "contend/internal/tsan.hpp"
#include "platform/first_use.hpp"
#include "platform/yield.hpp"

namespace contend::internal {
namespace {

// The fastest of several short runs: a run the hypervisor or the scheduler interrupted is
// slower, never faster, so the minimum is the machine's own figure.
template <class F>
double fastest_ns_per_call(int runs, int calls, F f) noexcept {
    double best = 1e18;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = clock::now();
        for (int i = 0; i < calls; ++i) f();
        const auto t1 = clock::now();
        best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
    }
    return best;
}

double measure_relax_ns() noexcept {
    const double ns = fastest_ns_per_call(8, 96, [] { cpu_relax(); });
    // A clock that did not move (or a compiler that removed nothing) still leaves a sane figure.
    return std::isfinite(ns) && ns >= 1.0 ? std::min(ns, 1000.0) : 1.0;
}

// A sched_yield() with nothing else to run here, in ns: the fastest single call of 32. A
// yield that found another thread to run took longer, never shorter. Per call, not per run
// of calls: where other threads keep this CPU busy (a program that contends from its first
// moments), a run of 8 yields held at least one switch, and the fastest run of four was
// inflated: 3.4 us on a VM whose quiet yield takes 1.3 (AMD EPYC), after which no yield ever
// looked like a switch and polls yielded once in 110 us.
double measure_yield_ns() noexcept {
    double best = 1e18;
    for (int i = 0; i < 32; ++i) {
        const auto t0 = clock::now();
        sched_yield();
        best = std::min(best, std::chrono::duration<double, std::nano>(clock::now() - t0).count());
    }
    return std::isfinite(best) && best > 0 ? best : 250.0;
}

// Calibrated on first use, never behind a guard that a forked child could find held
// (platform/first_use.hpp).
first_use_value<double> relax_cost;
first_use_value<double> yield_cost;

// The fastest yield this process has timed since (spin_wait and yield_gave_cpu_away time
// each of theirs): even 32 yields at start-up can all find another thread to run, and the
// first later one that does not corrects the figure.
std::atomic<std::int64_t> fastest_yield_seen_ns{std::numeric_limits<std::int64_t>::max()};

void note_yield(clock::duration took) noexcept {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    std::int64_t seen = fastest_yield_seen_ns.load(std::memory_order_relaxed);
    while (ns < seen && !fastest_yield_seen_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
    }
}

// From 100 ns to 12.5 us.
double yield_ns() noexcept {
    const double calibrated = yield_cost.get(measure_yield_ns);
    const double seen = static_cast<double>(fastest_yield_seen_ns.load(std::memory_order_relaxed));
    return std::clamp(std::min(calibrated, seen), 100.0, 12'500.0);
}

}  // namespace

double relax_ns() noexcept { return relax_cost.get(measure_relax_ns); }

std::uint32_t relaxes_for(std::chrono::nanoseconds d) noexcept {
    const double n = static_cast<double>(d.count()) / relax_ns();
    if (!(n >= 1.0)) return 1;
    return n >= 1e9 ? 1'000'000'000u : static_cast<std::uint32_t>(n);
}

void relax_for(std::chrono::nanoseconds d) noexcept {
    for (std::uint32_t i = 0, n = relaxes_for(d); i < n; ++i) cpu_relax();
}

std::chrono::nanoseconds yield_interval() noexcept {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::max(4 * yield_ns(), 1000.0)));
}

std::chrono::nanoseconds gave_cpu_away_after() noexcept {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(2 * yield_ns()));
}

namespace {
// Whether this thread's last yield gave its CPU to another thread (gave_cpu_away_after).
// Then the CPU is shared, most likely with the partner the poll waits for, and a pause there
// only delays it: the next polls of this thread yield at every step, until a yield comes
// back at once again.
thread_local bool cpu_shared = false;
thread_local bool sharing_ignored = false;  // ignore_cpu_sharing
// How many yields in a row came back at once (nothing else to run here), up to
// max_idle_yield_doublings: each one doubles the thread's interval between yields, up to 8
// intervals (36 us on the AMD VM, about 10 us on the Intel one), so that a poll of the usual
// 40 to 50 us still yields once. A yield is a system call, 0.2 to 1.2 us on the VMs
// measured, and a hand-off that lands during one waits for it to return: on a quiet machine
// that cost the AMD VM's pipe a tenth of its throughput. So a thread whose yields find
// nothing to run yields less and less often, and one whose poll ran out (returned false: the
// partner did not come, which is what a partner kept off the CPU looks like) starts again
// from yield_interval().
thread_local std::uint8_t idle_yields = 0;
constexpr std::uint8_t max_idle_yield_doublings = 3;
}  // namespace

bool this_thread_cpu_shared() noexcept { return cpu_shared; }

ignore_cpu_sharing::ignore_cpu_sharing() noexcept : previous_(sharing_ignored) {
    sharing_ignored = true;
    cpu_shared = false;
}
ignore_cpu_sharing::~ignore_cpu_sharing() { sharing_ignored = previous_; }

namespace {
// What a yield that took `took` says: a faster quiet yield than any seen, or a CPU shared.
bool judge_yield(clock::duration took) noexcept {
    note_yield(took);
    cpu_shared = !sharing_ignored && took > gave_cpu_away_after();
    return cpu_shared;
}
}  // namespace

bool yield_gave_cpu_away() noexcept {
    const auto before = clock::now();
    yield_cpu();
    return judge_yield(clock::now() - before);
}

spin_wait::spin_wait(std::chrono::nanoseconds budget, std::chrono::nanoseconds step) noexcept
    : budget_(budget),
      interval_(yield_interval()),
      relaxes_per_step_(relaxes_for(step)),
      start_(clock::now()),
      last_yield_(start_),
      spacing_(interval_ * (1 << idle_yields)) {}

bool spin_wait::pause() noexcept {
    if constexpr (every_pause_yields) {
        // The model-checking build (platform/yield.hpp): every pause is a yield, as on a CPU
        // shared with the partner, and a poll ends after budget / 1 us of them.
        if (clock::now() - start_ >= budget_) return false;
        yield_cpu();
        ++yields_;
        return true;
    }
    if (!cpu_shared)
        for (std::uint32_t i = 0; i < relaxes_per_step_; ++i) cpu_relax();
    const auto now = clock::now();
    if (now - start_ >= budget_) {
        idle_yields = 0;
        return false;
    }
    if (cpu_shared || now - last_yield_ >= spacing_) {
        yield_cpu();  // a partner runnable on this CPU runs now; otherwise back at once
        ++yields_;
        last_yield_ = clock::now();
        if (judge_yield(last_yield_ - now)) idle_yields = 0;
        else if (idle_yields < max_idle_yield_doublings) ++idle_yields;
        spacing_ = interval_ * (1 << idle_yields);
    }
    return true;
}

}  // namespace contend::internal
