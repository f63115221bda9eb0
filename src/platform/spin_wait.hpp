// Polling before sleeping, in time rather than in pauses, and without starving a partner
// that shares the CPU. Internal: every "poll, then sleep" of the library goes through here
// (the pipe's waits, the pool's idle spin, contend::mutex's spin).
//
// Two facts this answers, both measured (docs/design/polling.md):
//   - A pause is not a unit of time: its length differs severalfold between CPUs
//     (docs/design/polling.md has the figures), so a budget written as a pause count means
//     another wait on every CPU. Budgets here are nanoseconds:
//     a poll checks the clock, and a pause count is derived from the cost of a pause
//     measured once per process (relax_ns).
//   - A poll cannot succeed while the thread it waits for is not running, and when both
//     share a CPU (a busy machine, a taskset, more threads than CPUs) the poller holds the
//     very CPU its partner needs: on the Intel VM the pipe's poll burnt its whole budget
//     every 64 KiB window and ran at 1 GB/s instead of 8. So a poll yields the CPU every
//     yield_interval() of polling: when nothing else is runnable here, sched_yield returns
//     at once and the poll goes on; when the partner is runnable here, it runs now.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "contend/internal/deadline.hpp"

namespace contend::internal {

// The cost of one cpu_relax() on this machine, in nanoseconds (at least 1), measured at the
// first call (the fastest of a few short timed runs, about 20 us in all) and kept.
double relax_ns() noexcept;

// How many cpu_relax() calls last about `d` here (at least 1).
std::uint32_t relaxes_for(std::chrono::nanoseconds d) noexcept;

// Pauses for about `d` (cpu_relax() relaxes_for(d) times). Never enters the kernel.
void relax_for(std::chrono::nanoseconds d) noexcept;

// How long a poll goes between two yields: four times what a sched_yield() with nothing
// else to run costs here, and at least 1 us, so that the yields take at most about a fifth
// of a poll on a quiet machine. That cost is the fastest yield the process has timed whose
// thread's context-switch count (getrusage) did not move across it: 32 at first use, then
// those of spin_wait and yield_gave_cpu_away, which ask the count now and then until a quiet
// one is known and afterwards lower the figure by any faster yield. Until then, a plain system call's cost
// stands for it.
std::chrono::nanoseconds yield_interval() noexcept;

// What a system call that never switches costs here (getrusage: the fastest of 32 at the
// first use, between 50 ns and 2 us): the least that parking costs, whose validation, queue
// and wake-up or yield each take at least one. A spin before a park that lasts no longer
// costs a thread whose wait is long at most that much again.
std::chrono::nanoseconds syscall_cost() noexcept;

// How long a yield takes, at least, when it gave the CPU to another thread: twice one with
// nothing else to run (as yield_interval measures it), or halfway from that to the fastest
// yield the switch count saw switch, if that is less. A yield that switches runs the other
// thread and switches back, two context switches, each at least a yield's system call; on a
// quiet machine 0.2 to 0.5 % of yields take that long without switching (AMD EPYC VM).
// The judge of a yield uses it, and the switch count too now and then until a quiet yield is
// known.
std::chrono::nanoseconds gave_cpu_away_after() noexcept;

// Whether this thread's last yield in a poll gave its CPU to another thread (spin_wait::pause
// below, yield_gave_cpu_away): the CPU is shared, so a poll here holds a CPU that another
// runnable thread wants.
bool this_thread_cpu_shared() noexcept;

// For tests whose assertions must not depend on the load of the machine: while one lives,
// this thread's yields never mark its CPU as shared.
class ignore_cpu_sharing {
public:
    ignore_cpu_sharing() noexcept;
    ~ignore_cpu_sharing();
    ignore_cpu_sharing(const ignore_cpu_sharing&) = delete;
    ignore_cpu_sharing& operator=(const ignore_cpu_sharing&) = delete;

private:
    bool previous_;
};

// Yields the CPU once; true if that gave it to another thread, as this_thread_cpu_shared()
// then says too. Judged by the kernel's count of the thread's context switches (two
// getrusage calls more) for its first yield and, while no quiet yield is known, for every
// 16th; by the time it took (over gave_cpu_away_after()) otherwise.
bool yield_gave_cpu_away() noexcept;

// How many of this thread's judged yields read the switch count (for tests).
std::uint64_t this_thread_switch_count_reads() noexcept;

// Whether this thread's yields on a shared CPU lately went to a thread other than its
// partner for longer than a poll's budget (a co-tenant's scheduler slice), so that its polls
// there end instead of yielding, until a time set by the last such yield (spin_wait.cpp,
// no_yield_until). note_yield_to_a_stranger records one such yield; the second one on the
// same CPU within the time the first would have lasted sets the mark (one alone is a
// kernel thread's burst more often than a co-tenant).
bool this_thread_yields_to_a_stranger(clock::time_point now) noexcept;
// How long a yield must have given the CPU away to count as a stranger's scheduler slice:
// the poll's budget, and at least half of the shortest slice Linux gives a thread at normal
// priority (its base slice, 0.75 ms by default). A partner's hand-off takes microseconds; a
// yield that falls to a co-tenant waits out the co-tenant's slice (4 ms measured on the
// Intel Xeon VM). A partner that really runs that long per hand-off loses nothing when its
// waiter sleeps instead: the sleep and wake-up cost tens of microseconds.
constexpr std::chrono::nanoseconds stranger_yield(std::chrono::nanoseconds budget) noexcept {
    return std::max<std::chrono::nanoseconds>(budget, std::chrono::microseconds(375));
}
void note_yield_to_a_stranger(clock::time_point yield_start, clock::time_point yield_end) noexcept;

// One poll's pacing:
//     spin_wait poll(budget);
//     while (!ready()) if (!poll.pause()) { /* budget spent: sleep */ }
// pause() relaxes for about `step` (default 250 ns: short against a wake-up, long against a
// check of a shared line), yields the CPU when the thread's yield spacing has passed since
// the last yield (or the start), and returns false once `budget` has passed since
// construction. The spacing is per thread: yield_interval(), doubled by each yield that came
// back at once (nothing else wanted the CPU), up to 8x, and back to yield_interval() when a
// poll of the thread runs out its budget. A yield that gave the CPU away (as
// yield_gave_cpu_away judges it) marks the thread's CPU as shared: until one of its yields
// comes back at once, its polls yield at every step instead of pausing, which on one CPU
// makes each hand-off a direct switch. In a poll for one partner, a yield there that gave
// the CPU away for a scheduler slice (stranger_yield) went to a thread that is not the
// partner, a co-tenant: then this thread's polls on a shared CPU, of any kind, end at their
// first yield for a while, so that the caller sleeps (this_thread_yields_to_a_stranger).
// A poll for a partner last seen on another CPU never yields: it relaxes for `step` at a
// time until the budget is spent (awaits::partner_elsewhere below).
class spin_wait {
public:
    static constexpr std::chrono::nanoseconds default_step{250};

    // Whom the caller waits for, which decides what a yield of the poll can do.
    enum class awaits {
        // Any of the program's threads, perhaps many: a poll yields behind its siblings.
        threads,
        // One thread whose hand-offs take microseconds (a pipe's other side), on this CPU or
        // where the caller cannot tell. Only such a poll takes a slice-long yield for a
        // stranger's: a waiter among many threads of its own program (a semaphore's ring or
        // buffer, 64 threads on 2 CPUs) yields behind its siblings for as long, and marked,
        // it parked at every wait: the bounded buffer at 16 and 64 workers went from 88 to
        // 111 ns an item to 300 to 519.
        partner,
        // That one thread, last seen on another CPU (it publishes where it runs). A yield
        // cannot run it: it runs or waits for its own CPU there. Here a yield only hands the
        // CPU to whatever else is runnable, and beside a co-tenant that is the co-tenant's
        // whole slice, after which the mark above makes every later wait sleep, so that the
        // partner pays a wake-up for each of its hand-offs: a pipe's reader sharing a CPU with
        // a busy loop, its writer alone on the other, moved a 4 KiB chunk in 15.6 to 16.3 us
        // instead of 2.2 (docs/design/polling.md, "A partner on another CPU").
        partner_elsewhere,
    };

    explicit spin_wait(std::chrono::nanoseconds budget, std::chrono::nanoseconds step = default_step,
                       awaits who = awaits::threads) noexcept;
    bool pause() noexcept;
    // Yields this poll has made so far (for tests and statistics).
    std::uint32_t yields() const noexcept { return yields_; }
    // The time between this poll's yields now (for tests).
    std::chrono::nanoseconds spacing() const noexcept { return spacing_; }

private:
    // In this order: the first poll of a process measures the pause and the yield (about
    // 20 us) while these are computed, and the budget starts only after that.
    std::chrono::nanoseconds budget_;
    std::chrono::nanoseconds interval_;
    std::uint32_t relaxes_per_step_;
    clock::time_point start_;
    clock::time_point last_yield_;
    std::chrono::nanoseconds spacing_;  // interval_, doubled per yield that found nothing to run
    std::uint32_t yields_ = 0;
    awaits who_;
};

// The outcome of poll_until: ready() came true; the poll ran out on a CPU of its own; or it
// ran out after shared_poll_yields yields on a shared CPU.
enum class poll_outcome { ready, missed, missed_shared };

// How many times a poll yields, at most, once its CPU is shared. A count of turns given to
// the threads that want the CPU, not a time: the same on every CPU. libstdc++'s atomic waits
// yield 4 times before they sleep. A ring of 4 threads on 2 CPUs passing one semaphore
// permit (AMD EPYC VM, threads pinned two to a CPU, in either order), whose parks polled 12
// pauses and then this many yields: 2.5 to 3.4 us a turn with 4, 1.7 to 2.7 with 8, against
// std::counting_semaphore's 2.0 to 3.3.
inline constexpr int shared_poll_yields = 8;

// The part of poll_until for a shared CPU, also on its own for a waiter that knows a spin
// cannot pay (the barrier's, with many arrivals to come): ready(), or a yield, up to
// shared_poll_yields times or until `deadline`.
// While this thread's yields go to a stranger (this_thread_yields_to_a_stranger) it does
// not start yielding.
template <class Ready>
poll_outcome poll_by_yielding(Ready&& ready, clock::time_point deadline) noexcept {
    for (int i = 0; i < shared_poll_yields; ++i) {
        if (ready()) return poll_outcome::ready;
        const auto now = clock::now();
        if (deadline != no_deadline && now >= deadline) break;
        if (this_thread_yields_to_a_stranger(now)) break;
        yield_gave_cpu_away();
    }
    return ready() ? poll_outcome::ready : poll_outcome::missed_shared;
}

// A poll for ready() before a sleep, up to `budget` or `deadline`. While this thread's CPU
// is its own: a spin_wait, whose pauses spin and now and then yield. Once a yield gives the
// CPU away (now, or in an earlier poll of this thread, until a yield comes back at once): it
// yields at every step, shared_poll_yields times at most, and then gives up. On a shared CPU
// a poll is useful only while the thread it waits for gets to run, and a yield is what lets
// it run; spinning there only delays it, and a sleep frees the CPU for longer. A scheduler's
// yield need not switch (Linux's EEVDF moves the yielder's deadline; a woken thread that is
// not yet eligible still waits), so the count bounds what a poll can take from a thread
// that the yields do not let in.
template <class Ready>
poll_outcome poll_until(Ready&& ready, std::chrono::nanoseconds budget, clock::time_point deadline) noexcept {
    if (this_thread_cpu_shared()) return poll_by_yielding(ready, deadline);
    spin_wait wait{budget};
    while (!ready()) {
        if (!wait.pause()) return ready() ? poll_outcome::ready : poll_outcome::missed;
        if (deadline != no_deadline && clock::now() >= deadline)
            return ready() ? poll_outcome::ready : poll_outcome::missed;
        if (this_thread_cpu_shared()) return poll_by_yielding(ready, deadline);
    }
    return poll_outcome::ready;
}

}  // namespace contend::internal
