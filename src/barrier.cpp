// contend::barrier slow paths.
//
// Why no waiter sleeps through the end of its phase: a waiter sets WAITERS in the state word
// only while the phase is still its own (one CAS reads the phase and sets the bit), and then
// sleeps on the sleep word only while that word still holds its phase (the futex compares it
// in the kernel). The last arrival starts the next phase with an exchange of the whole state
// word, which reads WAITERS in the same step, then writes the new phase to the sleep word, and
// only then, if WAITERS was set, wakes every sleeper on it. A waiter whose CAS came first
// either finds the sleep word changed or is asleep before the wake; one whose CAS came after
// the exchange finds the new phase and does not sleep. A waiter that finds the sleep word
// still at the phase before its own (the last arrival of that phase has not written it yet)
// yields until it has.
#include "contend/barrier.hpp"

#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"
#include "platform/first_use.hpp"
#include "platform/spin_wait.hpp"
#include "platform/wait.hpp"
#include "platform/yield.hpp"

namespace contend::internal {

namespace {
// How long a waiter watches the state word for the end of its phase before it sleeps
// (internal::poll_until): where workers meet phase after phase, the last arrival usually
// comes within microseconds, and an end of phase seen within the watch costs the waiter no
// sleep and the last arrival no wake-up. 30 us on a CPU of its own, as the semaphore's
// acquire (src/semaphore.cpp says why that length holds on both CPU families); on a shared
// CPU (more workers than CPUs) a few yields, which let the arrivals run.
constexpr std::chrono::nanoseconds phase_poll = std::chrono::microseconds(30);

// A waiter watches the word (poll_until: a spin on a CPU of its own) only while at most this
// many arrivals per CPU are still to come; with more, it only yields, shared_poll_yields
// times, and then sleeps. Each arrival to come needs a thread to run: a spin holds a CPU one
// of them wants, and a yield lets it in. Per arrival on 2 CPUs (AMD EPYC VM, fresh threads
// every 200 to 5,000 phases), every waiter watching, then this bound with no yields for the
// others, then with them, then std::barrier's:
//   64 workers: 20-22 us, 3.6-4.7, 2.4-3.7, 2.9-5.0;
//   16 workers: 18-20, 3.7-4.4, 1.9-2.8, 2.1-3.1;
//   4 workers: 1.0-1.6, 1.0-1.6, 0.86-1.35, 1.2-1.9.
// A count of arrivals and CPUs, not a time: the same on every CPU.
constexpr std::uint64_t poll_arrivals_per_cpu = 2;
first_use_value<unsigned> cpus;  // the CPUs this process may run on
}  // namespace

barrier_base::barrier_base(std::ptrdiff_t expected)
    : state_(0), expected_(static_cast<std::int32_t>(expected)), sleep_word_(0) {
    if (expected < 0 || expected > limit)
        throw synchronization_error("contend::barrier: the expected count must be between 0 and barrier::max()");
    state_.store(static_cast<std::uint64_t>(expected) << 1, std::memory_order_relaxed);
}

std::uint32_t barrier_base::arrive_counting(std::ptrdiff_t n, bool* last) {
    if (n < 1) throw synchronization_error("contend::barrier::arrive: the update must be at least 1");
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        const auto left = static_cast<std::ptrdiff_t>((s & 0xFFFF'FFFFu) >> 1);
        if (n > left) throw synchronization_error("contend::barrier::arrive: more arrivals than the phase has left");
        if (state_.compare_exchange_weak(s, s - (static_cast<std::uint64_t>(n) << 1), std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
            *last = left == n;
            return static_cast<std::uint32_t>(s >> 32);
        }
    }
}

// The last arrival, after the completion: the next phase, with the count after the drops.
void barrier_base::finish_phase() noexcept {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    const auto next_phase = static_cast<std::uint32_t>(static_cast<std::uint32_t>(s >> 32) + 1);
    const auto expected = static_cast<std::uint64_t>(expected_.load(std::memory_order_relaxed));
    const std::uint64_t before =
        state_.exchange(std::uint64_t{next_phase} << 32 | expected << 1, std::memory_order_acq_rel);
    sleep_word_.store(next_phase, std::memory_order_release);
    if ((before & waiters_bit) && !CONTEND_MUTATION(barrier_last_arrival_wakes_nobody)) wake_all(sleep_word_);
}

void barrier_base::wait_slow(std::uint32_t phase) const noexcept {
    count_contention();
    const auto left = (state_.load(std::memory_order_relaxed) & 0xFFFF'FFFFu) >> 1;
    const auto over = [&] { return phase_over(phase); };
    const bool few_to_come = left <= poll_arrivals_per_cpu * cpus.get([] { return allowed_cpu_count(); });
    // With many arrivals to come, yield to them a few times, and never spin.
    if ((few_to_come ? poll_until(over, phase_poll, no_deadline) : poll_by_yielding(over, no_deadline)) ==
        poll_outcome::ready)
        return;
    while (!phase_over(phase)) {
        if (!mark_waiting(state_, waiters_bit,
                          [phase](std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32) == phase; }))
            return;
        const std::uint32_t published = sleep_word_.load(std::memory_order_acquire);
        if (published == phase) wait_on_address(sleep_word_, phase, no_deadline);
        else if (published == phase - 1) yield_cpu();  // the previous phase's end is being published
    }
}

}  // namespace contend::internal
