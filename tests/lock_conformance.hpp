// Conformance tests every lock in contend must pass: mutual exclusion checked by an `inside`
// flag and a plain counter, try_lock semantics, misuse. Instantiated by spin_lock_test.cpp and mutex_test.cpp.
#pragma once

#include <atomic>
#include <mutex>

#include "contend/cpu_relax.hpp"
#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

namespace contend_test {

template <class Lock>
class LockConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(LockConformance);

// Each worker enters the lock, marks itself inside with a plain flag, works a little, then
// leaves. A second holder at once finds the flag set (counted as `broken`) or loses an update
// to the plain counter; TSan additionally reports the race. The work inside (a few pauses on
// one entry in eight, more on some) keeps a holder inside long enough for an overlapping
// holder to meet it, which a one-increment section rarely does.
template <class Lock>
void check_mutual_exclusion(int threads, long total) {
    watchdog dog(std::chrono::seconds(240), "mutual exclusion");
    Lock lock;
    long counter = 0;
    bool inside = false;
    std::atomic<long> broken{0};
    const long per_thread = total / threads;
    run_threads(threads, [&](int) {
        for (long i = 0; i < per_thread; ++i) {
            std::lock_guard guard(lock);
            if (inside) broken.fetch_add(1, std::memory_order_relaxed);
            inside = true;
            counter = counter + 1;
            if (i % 8 == 0) {
                for (long w = 0, n = (i / 8) % 4 * 8; w < n; ++w) contend::cpu_relax();
            }
            inside = false;
        }
    });
    EXPECT_EQ(broken.load(), 0) << "two threads held the lock at once";
    EXPECT_EQ(counter, per_thread * threads);
}

// A lock that hands over strictly in arrival order (a ticket lock) waits, when there are
// more threads than cores, for the next ticket's thread to be scheduled: a hand-over can cost
// a timeslice (8 threads on the 2-CPU AMD EPYC VM: about 165 µs each, 33 s for the 200,000
// of the eight-thread test). A test file declares such a lock, and its tests with more
// threads than a small machine's cores take a tenth of the operations; what they check is
// the same.
template <class Lock>
inline constexpr bool hands_over_in_arrival_order = false;

template <class Lock>
constexpr long many_thread_operations(long n) {
    return hands_over_in_arrival_order<Lock> ? n / 10 : n;
}

TYPED_TEST_P(LockConformance, MutualExclusionTwoThreads) { check_mutual_exclusion<TypeParam>(2, scaled(400000)); }
TYPED_TEST_P(LockConformance, MutualExclusionEightThreads) {
    check_mutual_exclusion<TypeParam>(8, scaled(many_thread_operations<TypeParam>(200000)));
}
TYPED_TEST_P(LockConformance, MutualExclusionSixtyFourThreads) {
    check_mutual_exclusion<TypeParam>(64, scaled(many_thread_operations<TypeParam>(64 * 1000)));
}

TYPED_TEST_P(LockConformance, TryLockFailsWhenHeldAndSucceedsWhenFree) {
    TypeParam lock;
    ASSERT_TRUE(lock.try_lock());
    bool other_got_it = true;
    std::thread([&] { other_got_it = lock.try_lock(); }).join();
    EXPECT_FALSE(other_got_it);
    lock.unlock();
    std::thread([&] {
        other_got_it = lock.try_lock();
        if (other_got_it) lock.unlock();
    }).join();
    EXPECT_TRUE(other_got_it);
}

TYPED_TEST_P(LockConformance, UnlockingAnUnlockedLockThrowsAndTheLockStillWorks) {
    TypeParam lock;
    EXPECT_THROW(lock.unlock(), contend::synchronization_error);
    lock.lock();
    lock.unlock();
    EXPECT_THROW(lock.unlock(), contend::synchronization_error);
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
}

TYPED_TEST_P(LockConformance, WorksWithUniqueLock) {
    TypeParam lock;
    {
        std::unique_lock guard(lock);
        EXPECT_TRUE(guard.owns_lock());
        guard.unlock();
        EXPECT_TRUE(guard.try_lock());
    }
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
}

REGISTER_TYPED_TEST_SUITE_P(LockConformance, MutualExclusionTwoThreads, MutualExclusionEightThreads,
                            MutualExclusionSixtyFourThreads, TryLockFailsWhenHeldAndSucceedsWhenFree,
                            UnlockingAnUnlockedLockThrowsAndTheLockStillWorks, WorksWithUniqueLock);

}  // namespace contend_test
