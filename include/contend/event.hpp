// contend::manual_reset_event and contend::auto_reset_event, built on the parking lot.
//
// manual_reset_event: set() releases every current and future waiter until reset().
// auto_reset_event: set() releases exactly one waiter; if none is waiting, the event stays
// set until one thread's wait consumes it (so a set() is never lost, and two set()s with
// no waiter in between release one thread: it is a flag, not a counting semaphore).
//
// State word (both):
//   | bit          | meaning                                         | written by                  |
//   |--------------|-------------------------------------------------|-----------------------------|
//   | 0x1 SET      | signalled                                       | set, reset, a consuming wait|
//   | 0x2 WAITERS  | threads may be parked on the event's address    | park's validation, set      |
//   | 0x4 WATCHED  | a registered wait of a thread pool watches it:  | watch_event / unwatch_event,|
//   |              | set() notifies the watchers (src/event.cpp)     | under the watch table lock  |
// set() on an event nobody waits on is one locked instruction (manual: a fetch_or; auto: a
// load and a CAS); wait() on a set event is one load (manual) or a load and a CAS (auto).
// set() tests WAITERS and WATCHED together in the old value it already has, so watching
// costs an unwatched event nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"

namespace contend {

namespace internal {
struct event_access;
}

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
    friend struct internal::event_access;
    static constexpr std::uint32_t set_bit = 1;
    static constexpr std::uint32_t waiters_bit = 2;
    static constexpr std::uint32_t watched_bit = 4;
    bool wait_until_internal(internal::deadline until) noexcept;
    void set_slow(std::uint32_t before) noexcept;

    internal::atomic<std::uint32_t> state_;
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
    friend struct internal::event_access;
    static constexpr std::uint32_t set_bit = 1;
    static constexpr std::uint32_t waiters_bit = 2;
    static constexpr std::uint32_t watched_bit = 4;

    bool try_consume() noexcept {
        std::uint32_t s = state_.load(std::memory_order_relaxed);
        while (s & set_bit) {
            if (state_.compare_exchange_weak(s, s & ~set_bit, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        return false;
    }
    bool wait_until_internal(internal::deadline until) noexcept;

    internal::atomic<std::uint32_t> state_;
};

// Watching, for the thread pool's registered waits (src/pool/wait_thread.cpp): one service
// thread follows many events without parking on any of them. `event` is a
// manual_reset_event (auto_reset false) or an auto_reset_event (true) that outlives the watch.
namespace internal {

// Embedded in whatever watches; one watcher may watch one event at a time.
struct event_watcher {
    // Called by set(), on the setting thread, for every set() that finds WATCHED (on an
    // auto_reset_event: every set() that leaves the event set, not one handed to a parked
    // thread). It runs under the watch table's lock: it must be short, must not throw, and
    // must not set, watch or unwatch an event.
    void (*signalled)(event_watcher* self) noexcept = nullptr;
};

// Adds the watcher (and sets WATCHED); from the return on, every set() calls
// watcher->signalled. Returns whether the event was set when WATCHED went on: a set()
// before that point notified nobody, so the caller must treat `true` as a signal. Throws
// std::bad_alloc.
bool watch_event(void* event, bool auto_reset, event_watcher* watcher);
// Removes the watcher (and clears WATCHED with the last one). Once it returns, no
// signalled() call for this watcher is running or will start.
void unwatch_event(void* event, bool auto_reset, event_watcher* watcher) noexcept;
// What a waiting thread would get: manual, whether the event is set; auto, whether this
// call consumed a set (a parked thread or another consumer may have taken it first).
bool take_event(void* event, bool auto_reset) noexcept;

}  // namespace internal

}  // namespace contend
