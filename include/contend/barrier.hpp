// contend::barrier<Completion>: std::barrier's contract, its sleepers on one futex word. A
// reusable meeting point for a set of threads: each phase waits for `expected` arrivals,
// runs the completion once (on the last thread to arrive, before anyone is released), and
// starts the next phase.
//
//   contend::barrier sync(workers, [&]() noexcept { ++generation; });
//   ... each worker, each step: compute(); sync.arrive_and_wait();
//
// State, one word: bit 0 WAITERS (a thread sleeps in the current phase), bits 1-31 the
// arrivals still expected in this phase, bits 32-63 the phase number (wraps). Beside it, the
// count each new phase starts from (lowered by arrive_and_drop), and a 32-bit copy of the
// phase that sleepers wait on. 16 bytes with an empty completion. Costs: an arrival is a
// load and a CAS; the last one runs the completion, then one exchange starts the next phase,
// a store publishes it to the sleepers, and, if anyone sleeps, one system call wakes them
// all; a wait() on a finished phase is one acquire load. A waiter watches the word for the
// end of its phase before it sleeps (src/barrier.cpp), so a phase that ends within that
// costs it no sleep.
//
// Invariants: arrivals never take the count below zero; only the last arrival of a phase
// changes the phase, after the completion has returned, with the exchange that also clears
// WAITERS, and then writes the new phase to the sleep word (src/barrier.cpp says why no
// waiter sleeps through it). A token names the phase it arrived in; waiting on it returns
// once that phase is over.
//
// Misuse (an expected count out of range, an update that is not positive or exceeds the
// arrivals left in the phase) throws synchronization_error and leaves the barrier as it was;
// the standard makes it undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "contend/internal/atomic.hpp"

namespace contend {

namespace internal {

struct barrier_completion_none {
    void operator()() noexcept {}
};

// What every barrier shares; the completion is called through run_completion.
class barrier_base {
public:
    barrier_base(const barrier_base&) = delete;
    barrier_base& operator=(const barrier_base&) = delete;

    static constexpr std::ptrdiff_t limit = (std::ptrdiff_t{1} << 30) - 1;

protected:
    explicit barrier_base(std::ptrdiff_t expected);
    // Counts n arrivals; returns the phase arrived in, and whether this was the last arrival
    // (then the caller runs the completion and calls finish_phase).
    std::uint32_t arrive_counting(std::ptrdiff_t n, bool* last);
    void finish_phase() noexcept;
    void drop() noexcept { expected_.fetch_sub(1, std::memory_order_relaxed); }
    bool phase_over(std::uint32_t phase) const noexcept {
        return static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) >> 32) != phase;
    }
    void wait_slow(std::uint32_t phase) const noexcept;

private:
    static constexpr std::uint64_t waiters_bit = 1;
    mutable internal::atomic<std::uint64_t> state_;
    internal::atomic<std::int32_t> expected_;  // at most limit
    // The phase, once the last arrival has started it: the word sleepers wait on, so that the
    // end of a phase wakes them all with one call.
    mutable internal::atomic<std::uint32_t> sleep_word_;
};

}  // namespace internal

template <class Completion = internal::barrier_completion_none>
class barrier : private internal::barrier_base {
    static_assert(std::is_nothrow_invocable_v<Completion&>,
                  "contend::barrier: the completion must be callable with no argument and noexcept");

public:
    class arrival_token {
    public:
        arrival_token(arrival_token&&) noexcept = default;
        arrival_token& operator=(arrival_token&&) noexcept = default;

    private:
        friend class barrier;
        explicit arrival_token(std::uint32_t phase) noexcept : phase_(phase) {}
        std::uint32_t phase_;
    };

    // Throws synchronization_error unless 0 <= expected <= max().
    explicit barrier(std::ptrdiff_t expected, Completion completion = Completion())
        : barrier_base(expected), completion_(std::move(completion)) {}

    static constexpr std::ptrdiff_t max() noexcept { return limit; }

    // Counts n arrivals in the current phase (release); the last one runs the completion and
    // starts the next phase. Throws synchronization_error if n < 1 or n exceeds the arrivals
    // left in the phase.
    [[nodiscard]] arrival_token arrive(std::ptrdiff_t n = 1) {
        bool last = false;
        const std::uint32_t phase = arrive_counting(n, &last);
        if (last) {
            completion_();
            finish_phase();
        }
        return arrival_token(phase);
    }
    // Blocks until the token's phase is over (acquire: what every arrival of it did before
    // arriving, and the completion, happened before the return).
    void wait(arrival_token&& token) const noexcept {
        if (!phase_over(token.phase_)) wait_slow(token.phase_);
    }
    void arrive_and_wait() { wait(arrive()); }
    // Lowers the count every later phase expects by one, and arrives in this one.
    void arrive_and_drop() {
        drop();
        (void)arrive();
    }

private:
    [[no_unique_address]] Completion completion_;
};

}  // namespace contend
