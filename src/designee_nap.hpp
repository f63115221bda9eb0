// How long a waiter that steps aside from a hammered lock sleeps, and for how long it keeps
// stepping aside: contend::mutex's designee (src/mutex.cpp) and contend::shared_mutex's
// writer at the gate (src/shared_mutex.cpp) share these, so the two locks make the same
// trade.
#pragma once

#include <chrono>

namespace contend::internal {

// One nap. The kernel rounds a timed futex wait up to the timer slack (50 us by default), so
// a nap lands near the 70 to 90 us a 1 ns nanosleep takes on both VMs measured (AMD EPYC and
// Intel Xeon; docs/design/mutex.md). Long against a critical section of a few cache lines,
// so the holder runs many sections with the line in its cache while the waiter sleeps.
inline constexpr auto designee_nap = std::chrono::microseconds(50);

// How long a waiter naps before it stops stepping aside and asks for its turn: WTF's and
// Rust parking_lot's fairness bound.
inline constexpr auto designee_patience = std::chrono::milliseconds(1);

}  // namespace contend::internal
