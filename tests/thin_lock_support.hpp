// Test helper: a thin_lock inflated the way a program inflates one, by contention.
#pragma once

#include <thread>

#include "contend/internal/waiter_slots.hpp"
#include "contend/thin_lock.hpp"
#include "test_support.hpp"

namespace contend_test {

// Holds `l` while a second thread waits for it; a thread that had to park inflates the lock
// it then gets. Seeing the waiter registered is not seeing it parked: a release before its
// next look at the word lets it take the thin lock without parking or inflating (3 runs in
// 200 beside 6 busy loops on 2 CPUs, once in CI under ASan). So the waiter is given time to
// park, and the whole is tried again if it did not. Returns whether `l` ended up inflated.
inline bool inflate_by_contention(contend::thin_lock& l) {
    for (int attempt = 0; attempt < 20 && !l.is_inflated(); ++attempt) {
        l.lock();
        std::thread waiter([&] {
            l.lock();
            l.unlock();
        });
        const auto& slot = contend::internal::waiter_slot_for(&l);
        const bool registered =
            eventually([&] { return (slot.load() & contend::internal::waiter_slot_count_mask) != 0; });
        if (registered) std::this_thread::sleep_for(5ms);
        l.unlock();
        waiter.join();
        if (!registered) return false;  // it never waited: something else is wrong
    }
    return l.is_inflated();
}

}  // namespace contend_test
