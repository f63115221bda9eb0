// contend::mutex's unlock as an optimized build compiles it (CONTEND_CHECK_UNLOCK 0): the
// fast path does not read the state byte back, so an unlock of a free mutex is not always
// reported, and must still never change the mutex. mutex_test.cpp tests the checked unlock.
#define CONTEND_CHECK_UNLOCK 0
#include "contend/mutex.hpp"

#include <atomic>
#include <mutex>

#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

namespace contend_test {

// Misuse on a free mutex with nobody waiting: the release store writes the free byte again.
TEST(MutexUnchecked, UnlockingAFreeMutexLeavesItFreeAndUsable) {
    watchdog dog(60s);
    contend::mutex m;
    try {
        m.unlock();
    } catch (const contend::synchronization_error&) {
        // Reported when the unlock went the slow way (no plain-store barrier on this system).
    }
    EXPECT_FALSE(m.is_locked());
    ASSERT_TRUE(m.try_lock());
    EXPECT_TRUE(m.is_locked());
    m.unlock();
    EXPECT_FALSE(m.is_locked());
}

// The fast path's only assumption is that a held byte is exactly HELD when no waiter is
// registered: with threads contending (designees setting WAKING, handoff requests), every
// unlock must still leave the waiters served and exclusion intact.
TEST(MutexUnchecked, ContendedUnlocksKeepExclusionAndServeEveryWaiter) {
    watchdog dog(120s);
    contend::mutex m;
    long counter = 0;
    std::atomic<int> inside{0};
    std::atomic<int> broken{0};
    const int per = scaled(40000);
    run_threads(4, [&](int) {
        for (int i = 0; i < per; ++i) {
            std::lock_guard g(m);
            if (inside.fetch_add(1, std::memory_order_relaxed) != 0) broken.fetch_add(1);
            ++counter;
            inside.fetch_sub(1, std::memory_order_relaxed);
        }
    });
    EXPECT_EQ(broken.load(), 0);
    EXPECT_EQ(counter, 4L * per);
    EXPECT_FALSE(m.is_locked());
}

}  // namespace contend_test
