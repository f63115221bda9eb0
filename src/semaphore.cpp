// contend::counting_semaphore slow paths.
//
// Why no permit is lost and no waiter sleeps past one: a waiter sets WAITERS in park's
// validation, under the bucket lock, only while the count is zero (one CAS reads the count
// and sets the bit). A release adds to the count without the bucket lock only with a CAS
// that finds WAITERS clear; one that finds it set takes the bucket lock (unpark_one) and
// there wakes the longest-parked thread for each permit. Usually the permit goes into the
// count, where the woken thread or a thread already running takes it (and a woken thread that
// finds it gone parks again, its validation seeing the count at zero); about once a
// millisecond (the bucket's fairness deadline) the woken thread is handed it (token
// permit_token: it returns holding it). Finding nobody parked (they timed out), it clears
// WAITERS and puts its permits into the count in one CAS. Either way the bucket lock orders
// it against every validation, so a thread parks only while the count is zero and every
// permit added while it is parked wakes one.
#include "contend/semaphore.hpp"

#include <string>

#include "contend/cpu_relax.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "mark_waiting.hpp"
#include "model/mutation.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"

namespace contend::internal {

namespace {
constexpr std::intptr_t permit_token = 1;  // the unparked thread was handed a permit

// How long a parked acquire watches for its permit before it sleeps (parking_lot's poll):
// where threads hand permits back and forth, the release usually comes within microseconds,
// and one that comes within the poll costs the waiter no sleep and the releaser no wake-up.
// Why 30 us on either CPU family: a poll that runs out costs at most the poll, and a sleep
// costs a wake-up, 40 to 150 us for an idle vCPU on both the AMD and the Intel VMs; polling
// for less than a wake-up costs, then sleeping, is at most twice what knowing the wait's
// length would cost (the spin-then-block bound), whichever family. The poll yields its CPU as
// it goes (internal spin_wait), so with more threads than CPUs it lets the releaser run. With
// 8 us (the condition variable's), a ring of 4 threads on 2 CPUs passing one permit ran out
// most polls and took 8.4 us a turn; with 30 us, 5.6 us (AMD EPYC VM; the sync suite's ring
// row, which also counts its turns, 11.0 us and 8.9 to 10.3 over three runs). The parking lot stops a thread's polls
// while they do not pay.
constexpr std::chrono::nanoseconds acquire_poll = std::chrono::microseconds(30);
}  // namespace

semaphore_base::semaphore_base(std::ptrdiff_t desired, std::ptrdiff_t max) : state_(0) {
    if (desired < 0 || desired > max)
        throw synchronization_error("contend::counting_semaphore: the initial count must be between 0 and max()");
    state_.store(static_cast<std::uint64_t>(desired) << 1, std::memory_order_relaxed);
}

void semaphore_base::release(std::ptrdiff_t n, std::ptrdiff_t max) {
    if (n < 0) throw synchronization_error("contend::counting_semaphore::release: a negative update");
    if (n == 0) return;
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    while (!(s & waiters_bit)) {
        if (n > max - static_cast<std::ptrdiff_t>(s >> 1))
            throw synchronization_error("contend::counting_semaphore::release: the count would exceed max()");
        if (state_.compare_exchange_weak(s, s + (static_cast<std::uint64_t>(n) << 1), std::memory_order_release,
                                         std::memory_order_relaxed))
            return;
    }
    // Threads may be parked, and then the count is zero.
    if (n > max) throw synchronization_error("contend::counting_semaphore::release: the count would exceed max()");
    hand_out(n, max);
}

// Each permit to one parked thread, while there are any; the rest into the count.
void semaphore_base::hand_out(std::ptrdiff_t n, std::ptrdiff_t max) {
    std::ptrdiff_t handed_total = 0;
    while (n > 0) {
        std::uint64_t s = state_.load(std::memory_order_relaxed);
        if (!(s & waiters_bit)) {
            // The waiters are gone and another release may have raised the count meanwhile:
            // only a misuse (releases racing past max() together) finds it full here.
            if (n > max - static_cast<std::ptrdiff_t>(s >> 1))
                throw synchronization_error(
                    "contend::counting_semaphore::release: the count would exceed max() (after " +
                    std::to_string(handed_total) + " permits went to waiting threads)");
            if (state_.compare_exchange_weak(s, s + (static_cast<std::uint64_t>(n) << 1), std::memory_order_release,
                                             std::memory_order_relaxed))
                return;
            continue;
        }
        bool handed = false;
        parking_lot::unpark_one(this, [&](parking_lot::unpark_result r) -> std::intptr_t {
            if (r.did_unpark_thread) {
                handed = true;
                if (r.time_to_be_fair) {
                    // Now and then (about once a millisecond) the longest-parked thread gets
                    // the permit itself, so that running threads cannot pass it over for ever.
                    if (!r.may_have_more_threads) state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
                    return permit_token;
                }
                // Otherwise the permit goes into the count, for the thread woken or one already
                // running: a running thread takes it without a context switch, which with more
                // threads than CPUs is most of what a hand-off costs.
                std::uint64_t v = state_.load(std::memory_order_relaxed);
                const std::uint64_t add = CONTEND_MUTATION(semaphore_release_wakes_without_a_permit) ? 0 : 2;
                while (!state_.compare_exchange_weak(v, (r.may_have_more_threads ? v : v & ~waiters_bit) + add,
                                                     std::memory_order_release, std::memory_order_relaxed)) {
                }
                return 0;
            }
            // The parked threads left (timed out) before we came: the permits go to the count.
            std::uint64_t v = state_.load(std::memory_order_relaxed);
            while (!state_.compare_exchange_weak(v, (v & ~waiters_bit) + (static_cast<std::uint64_t>(n) << 1),
                                                 std::memory_order_release, std::memory_order_relaxed)) {
            }
            return 0;
        });
        if (!handed) return;
        --n;
        ++handed_total;
    }
}

namespace {
// Before its first park, an acquire watches the count for about one system call's cost
// (syscall_cost(), 0.14 us on the Intel Xeon VM). Where threads on other CPUs are moving
// permits (a bounded buffer: a producer's release lands every few hundred nanoseconds), the
// permit usually comes within that, and a thread that takes it has no park to make and no
// one to wake. Without it, each such wait queued, polled by yielding on its busy CPU and
// switched: a buffer of 16 or 64 threads on 2 CPUs moved an item in 250 to 370 ns, against
// 94 to 134 with it and the standard's 140 to 230 (the standard's acquire spins 12 pauses
// first). Where the permit comes from a thread that is not running (a ring of threads passing
// one permit), the watch is wasted but costs no more than the park that follows: with 16
// threads, 2.2 to 2.3 us a turn with it against 2.3 to 2.5 without; with 64, 2.9 to 3.0
// against 2.8 to 2.9 (medians of three, two processes each). Seven times as long a watch
// (1 us) cost a 4-thread ring twice its time, holding the CPU that the thread it waited
// for needed: so the watch is one system call long, which the machine measures.
bool wait_for_a_permit(const internal::atomic<std::uint64_t>& state, std::chrono::nanoseconds budget) noexcept {
    if constexpr (every_pause_yields) return false;  // the model build: its polls explore the same states
    const std::uint32_t rounds = relaxes_for(budget) / 8 + 1;
    for (std::uint32_t i = 0; i < rounds; ++i) {
        if (state.load(std::memory_order_relaxed) >> 1 != 0) return true;
        for (int k = 0; k < 8; ++k) cpu_relax();
    }
    return false;
}
}  // namespace

bool semaphore_base::acquire_slow(deadline until) noexcept {
    count_contention();
    // A timed acquire whose deadline comes sooner (try_acquire_for(0)) does not watch. Added
    // to the clock, not subtracted from the deadline, which may be deadline::min().
    const auto watch = syscall_cost();
    if ((until == no_deadline || until > clock::now() + watch) && wait_for_a_permit(state_, watch) && try_acquire())
        return true;
    for (;;) {
        if (try_acquire()) return true;
        const auto r = parking_lot::detail::park(
            this,
            [this] {
                // A permit in the count: take it instead.
                return mark_waiting(state_, waiters_bit, [](std::uint64_t s) { return s >> 1 == 0; });
            },
            [] {}, until, nullptr, acquire_poll);
        if (r.was_unparked() && r.token == permit_token) return true;
        // Off the queue without a permit: a release finds us no more. One last look at the count.
        if (r.status == parking_lot::park_status::timed_out) return try_acquire();
    }
}

}  // namespace contend::internal
