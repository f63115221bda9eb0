// Conformance tests every lock in contend must pass: mutual exclusion checked by a plain
// counter, try_lock semantics, misuse. Instantiated by spin_lock_test.cpp and mutex_test.cpp.
#pragma once

#include <mutex>

#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

namespace contend_test {

template <class Lock>
class LockConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(LockConformance);

// Each worker increments a plain, non-atomic counter under the lock. A lost update (two
// holders at once) makes the final count short; TSan additionally reports the race.
template <class Lock>
void check_mutual_exclusion(int threads, long total) {
    watchdog dog(std::chrono::seconds(240), "mutual exclusion");
    Lock lock;
    long counter = 0;
    const long per_thread = total / threads;
    run_threads(threads, [&](int) {
        for (long i = 0; i < per_thread; ++i) {
            std::lock_guard guard(lock);
            counter = counter + 1;
        }
    });
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
