#include "contend/condition_variable.hpp"

#include <deque>
#include <limits>
#include <string>

#include "contend/internal/waiter_slots.hpp"
#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "test_support.hpp"

using namespace contend_test;

TEST(ConditionVariable, ProducerConsumerOfAMillionItemsLosesNoWakeUp) {
    watchdog dog(300s);
    const long items = scaled(1'000'000);
    contend::mutex m;
    contend::condition_variable not_empty;
    contend::condition_variable not_full;
    std::deque<long> queue;
    constexpr std::size_t capacity = 64;  // small, so both sides really wait
    long sum = 0;
    long received = 0;
    std::thread consumer([&] {
        for (long i = 0; i < items; ++i) {
            std::unique_lock lk(m);
            // Bounded: a lost wake-up fails here instead of hanging.
            ASSERT_TRUE(not_empty.wait_for(lk, 60s, [&] { return !queue.empty(); })) << "lost wake-up at item " << i;
            sum += queue.front();
            queue.pop_front();
            ++received;
            lk.unlock();
            not_full.notify_one();
        }
    });
    for (long i = 1; i <= items; ++i) {
        std::unique_lock lk(m);
        ASSERT_TRUE(not_full.wait_for(lk, 60s, [&] { return queue.size() < capacity; }))
            << "lost wake-up at item " << i;
        queue.push_back(i);
        lk.unlock();
        not_empty.notify_one();
    }
    consumer.join();
    EXPECT_EQ(received, items);
    EXPECT_EQ(sum, items * (items + 1) / 2);
}

TEST(ConditionVariable, NotifyAllWakesEveryWaiter) {
    watchdog dog(120s);
    constexpr int n = 32;
    contend::mutex m;
    contend::condition_variable cv;
    bool go = false;
    int waiting = 0;
    std::atomic<int> released{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&] {
            std::unique_lock lk(m);
            ++waiting;
            if (cv.wait_for(lk, 60s, [&] { return go; })) released.fetch_add(1);
        });
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard g(m);
        return waiting == n;
    }));
    {
        std::lock_guard g(m);
        go = true;
    }
    cv.notify_all();  // outside the lock: must still reach everyone
    for (auto& t : threads) t.join();
    EXPECT_EQ(released.load(), n);
}

TEST(ConditionVariable, WaitForTimesOutNoEarlierThanItsDeadlineAndRelocks) {
    contend::mutex m;
    contend::condition_variable cv;
    std::unique_lock lk(m);
    const auto start = steady::now();
    EXPECT_EQ(cv.wait_for(lk, 30ms), std::cv_status::timeout);
    EXPECT_GE(steady::now() - start, 30ms);
    EXPECT_LT(steady::now() - start, 5s);
    EXPECT_TRUE(lk.owns_lock());
    EXPECT_EQ(lk.mutex(), &m);  // the wait releases a contend::mutex through the unique_lock's own pointer
    EXPECT_TRUE(m.is_locked());
    EXPECT_FALSE(cv.wait_until(lk, std::chrono::system_clock::now() + 10ms, [] { return false; }));
    EXPECT_TRUE(lk.owns_lock());
    EXPECT_EQ(lk.mutex(), &m);
}

// A far-past deadline on a non-steady clock and a NaN duration time out at once.
TEST(ConditionVariable, AFarPastDeadlineOrANanDurationTimesOutAtOnce) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    std::unique_lock lk(m);
    const auto start = steady::now();
    EXPECT_EQ(cv.wait_until(lk, std::chrono::system_clock::time_point::min()), std::cv_status::timeout);
    EXPECT_EQ(cv.wait_for(lk, std::chrono::duration<double, std::milli>(std::numeric_limits<double>::quiet_NaN())),
              std::cv_status::timeout);
    EXPECT_LT(steady::now() - start, 5s);
    EXPECT_TRUE(lk.owns_lock());
}

// A steady deadline or a duration too far off for nanoseconds (hours::max(), 1e30 s, +inf)
// means "no deadline": the wait lasts until a notify. The cast of such a steady time point to
// nanoseconds overflowed, and the wait timed out at once.
TEST(ConditionVariable, AWaitWithADeadlineTooFarForNanosecondsLastsUntilNotified) {
    watchdog dog(120s);
    contend::mutex m;
    contend::condition_variable cv;
    bool ready = false;
    const auto check = [&](auto wait_once, const char* what) {
        ready = false;
        EXPECT_TRUE(wait_outlasts_until_released(
            [&] {
                std::unique_lock lk(m);
                while (!ready)
                    if (wait_once(lk) == std::cv_status::timeout) return ready;
                return true;
            },
            [&] {
                std::lock_guard g(m);
                ready = true;
                cv.notify_all();
            }))
            << what;
    };
    for_each_far_future_time_point([&](auto t, const char* what) {
        check([&](std::unique_lock<contend::mutex>& lk) { return cv.wait_until(lk, t); }, what);
        ready = false;
        EXPECT_TRUE(wait_outlasts_until_released(
            [&] {
                std::unique_lock lk(m);
                return cv.wait_until(lk, t, [&] { return ready; });
            },
            [&] {
                std::lock_guard g(m);
                ready = true;
                cv.notify_all();
            }))
            << what << ", with a predicate";
    });
    for_each_far_future_duration([&](auto d, const char* what) {
        check([&](std::unique_lock<contend::mutex>& lk) { return cv.wait_for(lk, d); }, what);
    });
}

// A steady deadline or a duration below what nanoseconds hold, negative, -inf or NaN has
// passed: the wait times out without waiting (the watchdog bounds it).
TEST(ConditionVariable, AWaitWithAPassedDeadlineOfAnyRepresentationTimesOut) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    std::unique_lock lk(m);
    for_each_passed_time_point(
        [&](auto t, const char* what) { EXPECT_EQ(cv.wait_until(lk, t), std::cv_status::timeout) << what; });
    for_each_passed_duration(
        [&](auto d, const char* what) { EXPECT_EQ(cv.wait_for(lk, d), std::cv_status::timeout) << what; });
    EXPECT_TRUE(lk.owns_lock());
}

// Waiting with a mutex that is not held is refused, and the message names the wait, not
// the mutex's unlock (which the caller never called).
TEST(ConditionVariable, WaitingWithAnUnheldMutexIsRefusedAndTheMessageNamesTheWait) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    try {
        cv.wait(m);
        ADD_FAILURE() << "a wait with an unheld mutex returned";
    } catch (const contend::synchronization_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("condition_variable::wait"), std::string::npos) << what;
        EXPECT_EQ(what.find("mutex::unlock"), std::string::npos) << what;
    }
    EXPECT_FALSE(m.is_locked()) << "the refused wait changed the mutex";
}

TEST(ConditionVariable, NotifyOneWakesOneOfSeveral) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    int tickets = 0;
    int waiting = 0;
    std::atomic<int> served{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
        threads.emplace_back([&] {
            std::unique_lock lk(m);
            ++waiting;
            if (cv.wait_for(lk, 30s, [&] { return tickets > 0; })) {
                --tickets;
                served.fetch_add(1);
            }
        });
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard g(m);
        return waiting == 3;
    }));
    for (int i = 1; i <= 3; ++i) {
        {
            std::lock_guard g(m);
            ++tickets;
        }
        cv.notify_one();
        ASSERT_TRUE(eventually([&] { return served.load() == i; })) << "notify_one " << i << " woke nobody";
    }
    for (auto& t : threads) t.join();
}

TEST(ConditionVariable, WorksWithAnyBasicLockable) {
    watchdog dog(60s);
    contend::ttas_lock lock;
    contend::condition_variable cv;
    bool ready = false;
    const int waiter = kernel_thread_id();
    std::thread t([&] {
        // ttas_lock spins, so this thread blocked in the kernel is in the condition
        // variable's wait, with the lock released.
        EXPECT_TRUE(eventually([&] { return thread_blocked(waiter); }));
        std::lock_guard g(lock);
        ready = true;
        cv.notify_one();
    });
    {
        std::unique_lock lk(lock);
        EXPECT_TRUE(cv.wait_for(lk, 30s, [&] { return ready; }));
    }
    t.join();
}

TEST(ConditionVariable, WaitingWithoutHoldingTheLockThrows) {
    contend::mutex m;
    contend::condition_variable cv;
    std::unique_lock lk(m, std::defer_lock);
    EXPECT_THROW(cv.wait_for(lk, 1ms), contend::synchronization_error);
    EXPECT_FALSE(m.is_locked());
}

namespace {
// A lock that records how a waiter retakes it once `counting` is set.
struct retake_recording_lock {
    contend::mutex m;
    std::atomic<bool> counting{false};
    std::atomic<int> try_locks{0};
    std::atomic<int> locks{0};
    std::atomic<int> first{0};  // 1: a try_lock came first, 2: a lock()
    void note(int which, std::atomic<int>& count) {
        if (!counting.load()) return;
        ++count;
        int none = 0;
        first.compare_exchange_strong(none, which);
    }
    void lock() {
        note(2, locks);
        m.lock();
    }
    bool try_lock() {
        note(1, try_locks);
        return m.try_lock();
    }
    void unlock() { m.unlock(); }
};

// One thread waits on `lock` (whose mutex is lock.m) until notified; this thread notifies it
// under the mutex once it waits, calling before_notify there first. after_wake runs in the
// waiter once its wait has returned.
template <class Lock, class BeforeNotify, class AfterWake>
void notify_a_waiter(Lock& lock, BeforeNotify before_notify, AfterWake after_wake) {
    contend::condition_variable cv;
    bool waiting = false, ready = false;
    std::thread waiter([&] {
        std::unique_lock lk(lock);
        waiting = true;
        EXPECT_TRUE(cv.wait_for(lk, 30s, [&] { return ready; }));
        after_wake();
    });
    EXPECT_TRUE(eventually([&] {
        std::lock_guard g(lock.m);
        return waiting;  // the waiter holds the lock until it waits, so it is waiting now
    }));
    {
        std::lock_guard g(lock.m);
        before_notify();
        ready = true;
        cv.notify_one();
    }
    waiter.join();
}
}  // namespace

// The notifier holds the lock when it notifies and releases it a moment later: a waiter that
// called lock() right after its wake-up found it held, parked on the mutex and needed a second
// wake-up from the notifier's unlock (a two-thread ping-pong ran 3x glibc's time). The woken
// waiter polls try_lock first. Whether the poll wins depends on the timing, so only the order
// of the calls is asserted.
TEST(ConditionVariable, AWokenWaiterRetakesTheLockWithTryLockBeforeQueueingForIt) {
    watchdog dog(60s);
    retake_recording_lock lock;
    notify_a_waiter(
        lock, [&] { lock.counting = true; }, [] {});
    EXPECT_GE(lock.try_locks.load(), 1);
    EXPECT_EQ(lock.first.load(), 1) << "the woken waiter went to lock() first";
}

// A BasicLockable without try_lock is retaken with lock(), as before.
TEST(ConditionVariable, ALockWithoutTryLockIsRetakenWithLock) {
    watchdog dog(60s);
    struct basic_lock {
        contend::mutex m;
        void lock() { m.lock(); }
        void unlock() { m.unlock(); }
    } lock;
    notify_a_waiter(
        lock, [] {}, [&] { EXPECT_TRUE(lock.m.is_locked()); });
    EXPECT_FALSE(lock.m.is_locked());
}

namespace {
// Waiters the waiter registry counts in the slot of `m` (the notifier moves a waiter there).
std::uint32_t registered_on(const contend::mutex& m) {
    return contend::internal::waiter_slots[contend::internal::waiter_slot_index(&m)].load() &
           contend::internal::waiter_slot_count_mask;
}

// A thread that takes `m`, runs wait(lock) and checks that it returns holding the lock;
// constructed once the thread waits (it holds `m` until then).
struct waiter_on {
    contend::mutex& m;
    bool waiting = false;
    std::atomic<bool> returned{false};
    std::thread thread;
    template <class Wait>
    waiter_on(contend::mutex& mutex, Wait wait) : m(mutex) {
        thread = std::thread([this, wait] {
            std::unique_lock lk(m);
            waiting = true;
            wait(lk);
            EXPECT_TRUE(lk.owns_lock());
            returned = true;
        });
        EXPECT_TRUE(eventually([&] {
            std::lock_guard g(m);
            return waiting;
        }));
    }
    ~waiter_on() {
        if (thread.joinable()) thread.join();
    }
};

// One wait and notify under `m`. A notify that finds the mutex's waiter slot idle wakes its
// waiter and arms the slot after the parking lot's locks (a move would need the slot's heavy
// barrier under them): after this round, a notify under `m` moves its waiter.
void arm_by_a_first_round(contend::mutex& m, contend::condition_variable& cv) {
    bool ready = false;
    waiter_on first(
        m, [&](std::unique_lock<contend::mutex>& lk) { EXPECT_TRUE(cv.wait_for(lk, 30s, [&] { return ready; })); });
    std::lock_guard g(m);
    ready = true;
    cv.notify_one();
}
}  // namespace

// The notifier holds the mutex when it notifies: the waiter is not woken to find it held but
// moved to the mutex's queue, counted as its waiter, and the unlock wakes it with the mutex.
TEST(ConditionVariable, ANotifyUnderTheMutexMovesTheWaiterToTheMutexQueueAndItsUnlockWakesIt) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    arm_by_a_first_round(m, cv);
    bool ready = false;
    waiter_on waiter(
        m, [&](std::unique_lock<contend::mutex>& lk) { EXPECT_TRUE(cv.wait_for(lk, 30s, [&] { return ready; })); });
    {
        std::lock_guard g(m);
        ready = true;
        cv.notify_one();
        EXPECT_EQ(registered_on(m), 1u) << "the waiter was woken, not moved to the mutex's queue";
        EXPECT_FALSE(waiter.returned.load());
    }
    waiter.thread.join();
    EXPECT_EQ(registered_on(m), 0u) << "the registration made for the moved waiter is released";
    EXPECT_FALSE(m.is_locked());
}

// A waiter moved to the mutex's queue whose deadline passes there still returns holding the
// mutex, and leaves the registry as it found it. The notifier keeps the mutex past the deadline.
TEST(ConditionVariable, AWaiterMovedToTheMutexQueueThatTimesOutThereReturnsHoldingTheMutex) {
    watchdog dog(60s);
    contend::mutex m;
    contend::condition_variable cv;
    arm_by_a_first_round(m, cv);
    const auto deadline = steady::now() + 1s;
    waiter_on waiter(m, [&](std::unique_lock<contend::mutex>& lk) {
        EXPECT_EQ(cv.wait_until(lk, deadline), std::cv_status::no_timeout) << "it was notified first";
    });
    {
        std::lock_guard g(m);
        cv.notify_one();
        EXPECT_EQ(registered_on(m), 1u) << "the waiter was woken, not moved to the mutex's queue";
        while (steady::now() < deadline + 50ms) std::this_thread::sleep_for(10ms);
        EXPECT_FALSE(waiter.returned.load());
    }
    waiter.thread.join();
    EXPECT_EQ(registered_on(m), 0u);
}

// A std::unique_lock that the moved waiter returns with owns the mutex (the wait adopts it),
// under a ping-pong of many turns between two threads that notify under the mutex.
TEST(ConditionVariable, TwoThreadsTakingTurnsUnderTheMutexLoseNoTurn) {
    watchdog dog(120s);
    contend::mutex m;
    contend::condition_variable cv;
    long turn = 0;
    constexpr long turns = 20000;
    const auto player = [&](long me) {
        std::unique_lock lk(m);
        for (;;) {
            while (turn < turns && turn % 2 != me) cv.wait(lk);
            if (turn >= turns) break;
            ++turn;
            cv.notify_one();
        }
        cv.notify_one();
    };
    std::thread a(player, 0), b(player, 1);
    a.join();
    b.join();
    EXPECT_EQ(turn, turns);
    EXPECT_EQ(registered_on(m), 0u);
}
