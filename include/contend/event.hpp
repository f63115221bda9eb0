// contend::manual_reset_event and contend::auto_reset_event, built on the parking lot.
//
// manual_reset_event: set() releases every current and future waiter until reset().
// auto_reset_event: set() releases exactly one waiter; if none is waiting, the event stays
// set until one thread's wait consumes it (so a set() is never lost, and two set()s with
// no waiter in between release one thread: it is a flag, not a counting semaphore).
//
// State word (both):
//   | bit          | meaning                                      |
//   |--------------|----------------------------------------------|
//   | 0x1 SET      | signalled                                    |
//   | 0x2 WAITERS  | threads may be parked on the event's address |
// set() on an event nobody waits on is one locked instruction (manual: a fetch_or; auto: a
// load and a CAS); wait() on a set event is one load (manual) or a load and a CAS (auto).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "contend/internal/deadline.hpp"

namespace contend {

class manual_reset_event {
public:
    explicit manual_reset_event(bool initially_set = false) noexcept : state_(initially_set ? set_bit : 0) {}
    manual_reset_event(const manual_reset_event&) = delete;
    manual_reset_event& operator=(const manual_reset_event&) = delete;

    void set() noexcept;
    void reset() noexcept { state_.fetch_and(~set_bit, std::memory_order_relaxed); }
    bool is_set() const noexcept { return state_.load(std::memory_order_acquire) & set_bit; }

    void wait() noexcept {
        if (!is_set()) wait_until_internal(internal::no_deadline);
    }
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period>& d) noexcept {
        return is_set() || wait_until_internal(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool wait_until(const std::chrono::time_point<Clock, Duration>& t) noexcept {
        return is_set() || wait_until_internal(internal::to_deadline(t));
    }

private:
    static constexpr std::uint32_t set_bit = 1;
    static constexpr std::uint32_t waiters_bit = 2;
    bool wait_until_internal(internal::deadline until) noexcept;

    std::atomic<std::uint32_t> state_;
};

class auto_reset_event {
public:
    explicit auto_reset_event(bool initially_set = false) noexcept : state_(initially_set ? set_bit : 0) {}
    auto_reset_event(const auto_reset_event&) = delete;
    auto_reset_event& operator=(const auto_reset_event&) = delete;

    void set() noexcept;
    void reset() noexcept { state_.fetch_and(~set_bit, std::memory_order_relaxed); }
    bool is_set() const noexcept { return state_.load(std::memory_order_acquire) & set_bit; }

    void wait() noexcept {
        if (!try_consume()) wait_until_internal(internal::no_deadline);
    }
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period>& d) noexcept {
        return try_consume() || wait_until_internal(internal::deadline_after(d));
    }
    template <class Clock, class Duration>
    bool wait_until(const std::chrono::time_point<Clock, Duration>& t) noexcept {
        return try_consume() || wait_until_internal(internal::to_deadline(t));
    }

private:
    static constexpr std::uint32_t set_bit = 1;
    static constexpr std::uint32_t waiters_bit = 2;

    bool try_consume() noexcept {
        std::uint32_t s = state_.load(std::memory_order_relaxed);
        while (s & set_bit) {
            if (state_.compare_exchange_weak(s, s & ~set_bit, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }
    bool wait_until_internal(internal::deadline until) noexcept;

    std::atomic<std::uint32_t> state_;
};

}  // namespace contend
