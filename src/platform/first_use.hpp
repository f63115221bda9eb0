// Values built on first use that no thread ever waits for: what the library's process-wide
// calibrations and pools use instead of a function-local static.
//
// Why: a function-local static's first callers wait in its guard (__cxa_guard_acquire) for
// the one thread that runs the initializer. If another thread calls fork() in that moment,
// the child gets the guard marked "being initialized" by a thread it does not have, and
// every caller there waits for good. The calibrations below time sched_yield() and pauses
// (tens of microseconds, milliseconds on a loaded machine), and lock() reaches them: a
// child of a program whose threads had just begun to contend hung in its first contended
// lock (seen in the interposer's fork test on a loaded 2-CPU VM).
//
// Here a thread that finds no value builds one itself and publishes it with a CAS; the first
// published wins, and a thread that lost uses the winner's (a calibration may run twice; a
// pool built twice is freed). Nobody waits, so a fork at any moment leaves the child a
// value or none, and its first caller builds one. Costs: a relaxed load and a branch once
// built, as a guarded static's acquire load and branch.
#pragma once

#include <atomic>
#include <concepts>
#include <memory>

#include "contend/internal/tsan.hpp"

namespace contend::internal {

// A number computed once per process by `compute`, which must never return T{} (the mark
// of "not yet"); every caller gets the same value. Declare at namespace scope (constant
// initialized: no guard): `first_use_value<double> cost; ... cost.get(measure)`.
template <class T>
requires std::is_arithmetic_v<T>
class first_use_value {
public:
    constexpr first_use_value() noexcept = default;

    template <std::invocable F>
    T get(F&& compute) noexcept {
        if (const T v = value_.load(std::memory_order_relaxed); v != T{}) [[likely]]
            return v;
        helgrind_unchecked(&value_, sizeof value_);  // a relaxed publication helgrind cannot see
        T expected{};
        const T mine = compute();
        return value_.compare_exchange_strong(expected, mine, std::memory_order_relaxed) ? mine : expected;
    }

private:
    std::atomic<T> value_{};
};

// One object of T per process, built by `new T` on first use and never destroyed (threads
// may use it during static destruction). Declare at namespace scope, as above.
template <class T>
class first_use_object {
public:
    constexpr first_use_object() noexcept = default;

    T& get() {
        if (T* p = object_.load(std::memory_order_acquire)) [[likely]]
            return *p;
        helgrind_unchecked(&object_, sizeof object_);
        auto mine = std::make_unique<T>();
        T* expected = nullptr;
        if (object_.compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel, std::memory_order_acquire))
            return *mine.release();
        return *expected;  // another thread's was published first: ours is freed
    }

    // The object, or null when none has been built yet.
    T* peek() const noexcept { return object_.load(std::memory_order_acquire); }

    // For a fork child handler (platform/fork_child.hpp) whose parent may have left the
    // object mid-update: points every later get() at `fresh`. The old one is never freed
    // (its state may be broken); `fresh` should keep a pointer to it, so that a leak checker
    // still finds it reachable.
    void replace_in_fork_child(T* fresh) noexcept { object_.store(fresh, std::memory_order_release); }

private:
    std::atomic<T*> object_{nullptr};
};

}  // namespace contend::internal
