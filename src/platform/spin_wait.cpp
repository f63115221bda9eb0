// Calibration and pacing for src/platform/spin_wait.hpp.
#include "platform/spin_wait.hpp"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "contend/cpu_relax.hpp"
#include "contend/internal/tsan.hpp"
#include "platform/first_use.hpp"
#include "platform/yield.hpp"
#include "pool/os_thread.hpp"

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

// This thread's context switches so far, voluntary and not, as the kernel counts them; -1
// where it does not count them per thread, and in the model-checking build, whose yields
// switch nothing real and whose schedules must not depend on what the OS did.
std::int64_t thread_switches() noexcept {
#if defined(RUSAGE_THREAD) && !CONTEND_MODEL_CHECK
    rusage ru{};
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nvcsw + ru.ru_nivcsw;
#endif
    return -1;
}

// The fastest yield known to have found nothing else to run here, in ns; `unknown` until
// one is seen. Timing alone cannot tell a quiet yield from a short switch: in a program whose
// threads keep every CPU busy from its first moments (a ring of 64 threads on 2 CPUs), each
// of the first yields switches to a thread that runs for a microsecond and yields back, and
// the fastest of them (0.9 us on the Intel Xeon VM, whose quiet yield takes 0.17) passed for
// the quiet figure: no later switch took twice that, no poll yielded at every step, the
// polls stopped paying and the ring ran at 11 to 13 us a turn instead of 2.5 to 3. So a yield
// counts as quiet only when the kernel's count of the thread's switches did not move across
// it (getrusage, about 0.14 us on that VM), and until one has, every judged yield asks the
// count. Once one is known, any faster timed yield lowers the figure: a yield cannot switch
// in less time than one that did not.
constexpr std::int64_t unknown = std::numeric_limits<std::int64_t>::max();
std::atomic<std::int64_t> quiet_yield_ns{unknown};

// The fastest yield whose thread's switch count moved across it: no switch takes less.
std::atomic<std::int64_t> fastest_switch_ns{unknown};

void note_switch(clock::duration took) noexcept {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    std::int64_t seen = fastest_switch_ns.load(std::memory_order_relaxed);
    while (ns < seen && !fastest_switch_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
    }
}

void note_quiet_yield(clock::duration took) noexcept {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    std::int64_t seen = quiet_yield_ns.load(std::memory_order_relaxed);
    while (ns < seen && !quiet_yield_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
    }
}

// At the first use: 32 yields, each between two reads of the switch count, the quiet ones
// noted. Returns the fastest read of the count, a system call that never switches: the
// figure used while no quiet yield is known (a quiet yield costs a system call and the
// scheduler's look for another thread, 0.14 against 0.17 us on the Intel VM), so the spacing
// of yields stays short while every yield switches.
double calibrate_yield() noexcept {
    double floor = 1e18;
    for (int i = 0; i < 32; ++i) {
        const auto t0 = clock::now();
        const std::int64_t before = thread_switches();
        const auto t1 = clock::now();
        sched_yield();
        const auto t2 = clock::now();
        floor = std::min(floor, std::chrono::duration<double, std::nano>(t1 - t0).count());
        // Without a count (-1 both times), the fastest timed yield stands for the quiet one.
        if (thread_switches() == before) note_quiet_yield(t2 - t1);
        else note_switch(t2 - t1);
    }
    return std::isfinite(floor) && floor > 0 ? floor : 100.0;
}

// Calibrated on first use, never behind a guard that a forked child could find held
// (platform/first_use.hpp).
first_use_value<double> relax_cost;
first_use_value<double> syscall_floor;

// From 100 ns to 12.5 us.
double yield_ns() noexcept {
    const double floor = syscall_floor.get(calibrate_yield);
    const std::int64_t quiet = quiet_yield_ns.load(std::memory_order_relaxed);
    return std::clamp(quiet != unknown ? static_cast<double>(quiet) : floor, 100.0, 12'500.0);
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

std::chrono::nanoseconds syscall_cost() noexcept {
    return std::chrono::nanoseconds(
        static_cast<std::int64_t>(std::clamp(syscall_floor.get(calibrate_yield), 50.0, 2000.0)));
}

std::chrono::nanoseconds gave_cpu_away_after() noexcept {
    const double quiet = yield_ns();
    double after = 2 * quiet;
    // No switch is faster than the fastest the count saw: halfway from a quiet yield to it is
    // a switch too. Twice a quiet yield alone was not enough under ThreadSanitizer, whose
    // interceptors slow a quiet yield to 0.55 to 0.65 us: the bound came out at 1.1 to 1.3 us,
    // a switch to a partner that yields back took about 1.2, and 46 to 49 of 50 switches were
    // judged quiet. On the VMs measured natively (a quiet yield 0.17 to 0.4 us, a switch 0.6
    // or more) twice the quiet yield is the lower of the two, as before.
    const std::int64_t fastest = fastest_switch_ns.load(std::memory_order_relaxed);
    if (fastest != unknown) after = std::min(after, std::max(quiet, (quiet + static_cast<double>(fastest)) / 2));
    return std::chrono::nanoseconds(static_cast<std::int64_t>(after));
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

namespace {
// Until when this thread's polls do not yield on a shared CPU, because a yield of its gave
// the CPU away for a scheduler slice (stranger_yield): a thread that is not the partner (a
// co-tenant at normal priority on this CPU) ran before the partner did. Linux's EEVDF moves a
// yielder's deadline a slice later, so each further yield hands that thread another slice:
// a pipe's writer and reader on one CPU beside a nice-0 busy loop yielded to it at every
// wait and moved 44 MB/s, 92 us a 4 KiB chunk, where a mutex ring that sleeps moved 3.7 GB/s
// (Intel Xeon VM, docs/design/polling.md). A poll that would yield ends at once instead, and
// its caller sleeps: a futex wake-up then hands the CPU over, and the scheduler shares it
// fairly. The mark lasts twice the yield that set it: while the co-tenant stays, probing
// again costs at most a third of the time (the pipe then moved 2.2 GB/s, 0.05 without the
// mark); once it has moved to another CPU, the thread's waits sleep for at most two slices
// more. Sixty-four times as long kept the pipe beside a busy loop on 2 CPUs, whose threads
// meet the loop now and then as the kernel moves them, in sleep-and-wake hand-offs for a
// quarter of a second each time: 470 to 1,060 ns a chunk in 3 runs of 5, against 340 to 370.
thread_local clock::time_point no_yield_until{};
constexpr int stranger_memory_factor = 2;
// The CPU the mark was set on, or -1 where the platform cannot tell. The co-tenant shares
// that CPU, not the thread: a thread the kernel has moved since (a writer started beside a
// busy loop and then joined to its reader on the other CPU) yields again at once, where it
// slept at every wait until the mark ran out, its partner beside it: in the lab's pipe row
// beside a nice-0 loop, repetitions of 440 to 510 ns a chunk against 390 to 400, with 535 to
// 2,728 lock acquisitions (sleeps) against 19 (Intel Xeon VM).
thread_local int stranger_cpu = -1;
// A single slice-long yield does not mark the thread: the second on the same CPU within the
// time the first would have marked it does. What takes a CPU for a slice once and then leaves
// is not a co-tenant but a kernel thread's burst (on the Intel Xeon VM, kdamond.0 ran 0.5 to
// 3 ms about twice a second, rcu_preempt up to 1.8 ms), and a mark set by it made a pipe
// pinned to a CPU of its own sleep at every hand-off for twice as long: 12,449 to 19,605
// sleeps in 4 s, where the rule left 48 to 1,854 (docs/design/polling.md). A co-tenant takes
// a slice at every turn, so the mark waits one slice more for it.
thread_local clock::time_point suspect_until{};
thread_local int suspect_cpu = -1;
}  // namespace

bool this_thread_yields_to_a_stranger(clock::time_point now) noexcept {
    if (now >= no_yield_until) return false;
    if (stranger_cpu >= 0 && current_thread_cpu() != stranger_cpu) {
        no_yield_until = {};
        return false;
    }
    return true;
}

void note_yield_to_a_stranger(clock::time_point yield_start, clock::time_point yield_end) noexcept {
    const auto took = yield_end - yield_start;
    const int cpu = current_thread_cpu();
    if (yield_start > suspect_until || cpu != suspect_cpu) {  // the first: a suspect only
        suspect_until = yield_end + took * stranger_memory_factor;
        suspect_cpu = cpu;
        return;
    }
    no_yield_until = yield_end + took * stranger_memory_factor;
    stranger_cpu = cpu;
    // The co-tenant's next slice, once the mark has run out, marks again at once.
    suspect_until = no_yield_until + took * stranger_memory_factor;
}

ignore_cpu_sharing::ignore_cpu_sharing() noexcept : previous_(sharing_ignored) {
    sharing_ignored = true;
    cpu_shared = false;
}
ignore_cpu_sharing::~ignore_cpu_sharing() { sharing_ignored = previous_; }

namespace {
// Whether this thread has made a judged yield. A thread's first sched_yield is slow without
// switching: 432 ns on average against 196 for its next ones, and 124 of 200 new threads'
// first yields took over twice the quiet yield (Intel Xeon VM); judged by its time, a new
// thread's first watch of a held mutex found its CPU shared, gave up and slept.
thread_local bool yielded_before = false;
// While no quiet yield is known, a thread asks the count at every 16th judged yield, and
// judges the others by their time (gave_cpu_away_after). Only a yield the count found quiet
// is ever noted as the quiet one, so a short switch cannot pass for it. Asking at every yield cost two
// getrusage calls a yield where every yield switches, as on a CPU that a pipe's writer and
// reader share: a tenth of the one-CPU pipe's time at 4 KiB chunks (Intel Xeon VM,
// docs/design/polling.md).
constexpr std::uint32_t ask_count_every = 16;
thread_local std::uint32_t unknown_quiet_yields = 0;
thread_local std::uint64_t switch_count_reads = 0;

// Yields once and judges it: whether it gave the CPU to another thread (the switch count
// moved, for the thread's first yield and every 16th while no quiet yield is known;
// otherwise, it took longer than gave_cpu_away_after()), noting a quiet one's time.
// `t0`: the clock read just before, when the caller has one; `after` gets the clock after
// the yield. A poll's step reads the clock twice, not four times (about 20 ns a read here).
bool judged_yield(clock::time_point t0, clock::time_point& after) noexcept {
    const bool ask_count = !yielded_before || (quiet_yield_ns.load(std::memory_order_relaxed) == unknown &&
                                               unknown_quiet_yields++ % ask_count_every == 0);
    yielded_before = true;
    if (ask_count) ++switch_count_reads;
    const std::int64_t before = ask_count ? thread_switches() : -1;
    if (ask_count) t0 = clock::now();  // the count's system call is not the yield's time
    yield_cpu();
    after = clock::now();
    const auto took = after - t0;
    bool switched;
    if (before >= 0) {
        switched = thread_switches() != before;
        if (switched) note_switch(took);
        else note_quiet_yield(took);
    } else {
        switched = took > gave_cpu_away_after();
        if (quiet_yield_ns.load(std::memory_order_relaxed) != unknown) note_quiet_yield(took);
    }
    cpu_shared = !sharing_ignored && switched;
    return cpu_shared;
}
}  // namespace

bool yield_gave_cpu_away() noexcept {
    clock::time_point after;
    return judged_yield(clock::now(), after);
}

std::uint64_t this_thread_switch_count_reads() noexcept { return switch_count_reads; }

spin_wait::spin_wait(std::chrono::nanoseconds budget, std::chrono::nanoseconds step, awaits who) noexcept
    : budget_(budget),
      interval_(yield_interval()),
      relaxes_per_step_(relaxes_for(step)),
      start_(clock::now()),
      last_yield_(start_),
      spacing_(interval_ * (1 << idle_yields)),
      who_(who) {}

bool spin_wait::pause() noexcept {
    if constexpr (every_pause_yields) {
        // The model-checking build (platform/yield.hpp): every pause is a yield, as on a CPU
        // shared with the partner, and a poll ends after budget / 1 us of them.
        if (clock::now() - start_ >= budget_) return false;
        yield_cpu();
        ++yields_;
        return true;
    }
    if (who_ == awaits::partner_elsewhere) {
        // No yield: it could not run the partner, and it would give this CPU's other
        // runnable thread, if any, a slice (spin_wait.hpp).
        for (std::uint32_t i = 0; i < relaxes_per_step_; ++i) cpu_relax();
        return clock::now() - start_ < budget_;
    }
    if (!cpu_shared)
        for (std::uint32_t i = 0; i < relaxes_per_step_; ++i) cpu_relax();
    const auto now = clock::now();
    if (now - start_ >= budget_) {
        idle_yields = 0;
        return false;
    }
    if (cpu_shared || now - last_yield_ >= spacing_) {
        if (cpu_shared && this_thread_yields_to_a_stranger(now)) return false;  // sleep: see no_yield_until
        const bool switched = judged_yield(now, last_yield_);  // a partner runnable on this CPU runs now
        if (who_ == awaits::partner && switched && last_yield_ - now > stranger_yield(budget_))
            note_yield_to_a_stranger(now, last_yield_);
        ++yields_;
        if (switched) idle_yields = 0;
        else if (idle_yields < max_idle_yield_doublings) ++idle_yields;
        spacing_ = interval_ * (1 << idle_yields);
    }
    return true;
}

}  // namespace contend::internal
