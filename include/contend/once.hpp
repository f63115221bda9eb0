// contend::once_flag and contend::call_once: std::call_once's contract on the parking lot.
//
//   contend::once_flag ready;
//   contend::call_once(ready, [] { build_the_table(); });  // every caller returns after it ran
//
// One byte: DONE (the call returned), RUNNING (a thread is in it), WAITERS (threads park until
// it ends). Costs: call_once on a done flag is one acquire load and a branch (a plain load on
// x86 and arm64's ldar); the first call is one CAS, and its end one exchange, plus one
// parking-lot call if anyone parked.
//
// As the standard says: if the call throws, the exception goes to its caller, the flag is
// not done, and one thread that waited (or the next caller) makes the call again; the
// callable of a call that returned is never called again. Invariants: DONE, once set, is
// never cleared; RUNNING is set by one thread at a time (the CAS from "neither") and cleared
// by it; WAITERS is set only while RUNNING is, under the bucket lock (src/once.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "contend/internal/atomic.hpp"

namespace contend {

class once_flag {
public:
    constexpr once_flag() noexcept = default;
    once_flag(const once_flag&) = delete;
    once_flag& operator=(const once_flag&) = delete;

private:
    template <class Callable, class... Args>
    friend void call_once(once_flag& flag, Callable&& f, Args&&... args);

    static constexpr std::uint8_t done = 1, running = 2, waiters = 4;
    // Whether the caller is to make the call (the flag is now RUNNING for it); false once DONE.
    bool begin() noexcept;
    // The call returned (DONE) or threw (back to neither): wakes the threads that waited.
    void end(bool returned) noexcept;

    internal::atomic<std::uint8_t> state_{0};
};

template <class Callable, class... Args>
void call_once(once_flag& flag, Callable&& f, Args&&... args) {
    if (flag.state_.load(std::memory_order_acquire) == once_flag::done) [[likely]]
        return;
    if (!flag.begin()) return;
    try {
        std::invoke(std::forward<Callable>(f), std::forward<Args>(args)...);
    } catch (...) {
        flag.end(false);
        throw;
    }
    flag.end(true);
}

}  // namespace contend
