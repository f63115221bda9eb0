// The pool's timer queue (src/pool/timer_queue.hpp) on its own: callbacks are dispatched
// inline, on the timer thread itself, so the order the thread hands them over is the order
// they run.
#include "pool/timer_queue.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "contend/event.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::internal::make_task;
using contend::internal::task_node;
using contend::internal::timer_queue;

namespace {

void run_inline(task_node* n) { n->run(n); }

// Counts its own destructions: a callback that captures one shows when the queue freed it.
struct destruction_counter {
    std::atomic<int>* count;
    explicit destruction_counter(std::atomic<int>* c) : count(c) {}
    destruction_counter(const destruction_counter&) = delete;
    ~destruction_counter() { count->fetch_add(1); }
};

// Holds the timer thread inside a callback until released, so that timers added meanwhile
// are all due together when it comes back: their order then depends on the queue alone.
struct thread_holder {
    contend::manual_reset_event entered;
    contend::manual_reset_event release;

    void hold(timer_queue& q) {
        q.add(steady::now(), make_task([this] {
                  entered.set();
                  release.wait_for(30s);
              }));
        ASSERT_TRUE(entered.wait_for(30s));
    }
};

}  // namespace

TEST(TimerQueue, NeverFiresBeforeItsDeadline) {
    watchdog dog(120s);
    const int n = static_cast<int>(scaled(4000));
    std::atomic<int> fired{0};
    std::atomic<int> early{0};
    timer_queue q("early", run_inline);
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> delay_us(0, 50'000);
    for (int i = 0; i < n; ++i) {
        const auto due = steady::now() + std::chrono::microseconds(delay_us(rng));
        q.add(due, make_task([&fired, &early, due] {
                  if (steady::now() < due) early.fetch_add(1);
                  fired.fetch_add(1);
              }));
    }
    ASSERT_TRUE(eventually([&] { return fired.load() == n; }, 60s));
    EXPECT_EQ(early.load(), 0);
    EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueue, FiresInDeadlineOrder) {
    watchdog dog(60s);
    std::mutex m;
    std::vector<int> order;
    thread_holder holder;
    timer_queue q("order", run_inline);
    holder.hold(q);
    // Distinct deadlines, added shuffled, all in the past already: every one is due when
    // the thread returns, so the queue alone orders them.
    const int n = 1000;
    std::vector<int> keys(n);
    std::iota(keys.begin(), keys.end(), 0);
    std::shuffle(keys.begin(), keys.end(), std::mt19937(7));
    const auto base = steady::now() - 1s;
    for (int k : keys) {
        q.add(base + std::chrono::microseconds(k), make_task([&, k] {
                  std::lock_guard lk(m);
                  order.push_back(k);
              }));
    }
    holder.release.set();
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(m);
        return order.size() == static_cast<std::size_t>(n);
    }));
    std::lock_guard lk(m);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(TimerQueue, EqualDeadlinesFireInInsertionOrder) {
    watchdog dog(60s);
    std::mutex m;
    std::vector<int> order;
    thread_holder holder;
    timer_queue q("ties", run_inline);
    holder.hold(q);
    const auto due = steady::now();
    const int n = 1000;
    for (int i = 0; i < n; ++i) {
        q.add(due, make_task([&, i] {
                  std::lock_guard lk(m);
                  order.push_back(i);
              }));
    }
    holder.release.set();
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(m);
        return order.size() == static_cast<std::size_t>(n);
    }));
    std::lock_guard lk(m);
    std::vector<int> expected(n);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(order, expected);
}

// Ids come from one counter for the process: never 0, never reused, and no two queues
// hand out the same one (so one pool's id cancels nothing in another).
TEST(TimerQueue, IdsAreNeverZeroNeverReusedAndUniqueAcrossQueues) {
    timer_queue q("ids", run_inline);
    timer_queue other("ids2", run_inline);
    std::uint64_t last = 0;
    for (int i = 0; i < 100; ++i) {
        const auto id = q.add(steady::now() + 1h, make_task([] {}));
        const auto other_id = other.add(steady::now() + 1h, make_task([] {}));
        EXPECT_GT(id, last);
        EXPECT_NE(id, other_id);
        EXPECT_FALSE(other.cancel(id)) << "another queue's id cancelled a timer here";
        if (i % 2 == 0) {
            EXPECT_TRUE(q.cancel(id));
        }
        last = std::max(id, other_id);
    }
    EXPECT_GE(last, 200u);
}

// After close() (the pool's destructor has begun), add() refuses: 0, the callback destroyed
// without running; cancel() is false; pending callbacks were discarded.
TEST(TimerQueue, AfterCloseAddRefusesAndDestroysTheCallbackAndCancelIsFalse) {
    std::atomic<int> freed{0};
    std::atomic<int> ran{0};
    timer_queue q("closed", run_inline);
    const auto pending =
        q.add(steady::now() + 1h, make_task([c = std::make_shared<destruction_counter>(&freed), &ran] { ran++; }));
    q.close();
    EXPECT_EQ(freed.load(), 1) << "the pending callback was not discarded";
    EXPECT_FALSE(q.cancel(pending));
    EXPECT_EQ(q.add(steady::now(), make_task([c = std::make_shared<destruction_counter>(&freed), &ran] { ran++; })),
              0u);
    EXPECT_EQ(freed.load(), 2) << "the refused callback was not destroyed";
    EXPECT_EQ(q.size(), 0u);
    q.close();  // idempotent
    EXPECT_EQ(ran.load(), 0);
}

TEST(TimerQueue, CancelReturnsTrueOnceAndTheCallbackNeverRunsButIsFreed) {
    std::atomic<int> ran{0};
    std::atomic<int> freed{0};
    timer_queue q("cancel", run_inline);
    auto guard = std::make_shared<destruction_counter>(&freed);
    const auto id = q.add(steady::now() + 1h, make_task([&ran, guard] { ran.fetch_add(1); }));
    guard.reset();
    EXPECT_EQ(q.size(), 1u);
    EXPECT_TRUE(q.cancel(id));
    EXPECT_EQ(freed.load(), 1) << "cancel discards the node at once";
    EXPECT_FALSE(q.cancel(id));
    EXPECT_EQ(q.size(), 0u);
    EXPECT_EQ(ran.load(), 0);
}

TEST(TimerQueue, CancelledTimersAmongDueOnesNeverRun) {
    watchdog dog(60s);
    const int n = 200;
    std::vector<std::atomic<int>> ran(n);
    std::atomic<bool> sentinel{false};
    thread_holder holder;
    timer_queue q("cancel-mix", run_inline);
    // The thread is held while the timers are added and half cancelled: all are due, none
    // can fire before its cancel, however slowly this thread runs.
    holder.hold(q);
    const auto due = steady::now();
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(q.add(due, make_task([&ran, i] { ran[i].fetch_add(1); })));
    for (int i = 1; i < n; i += 2) EXPECT_TRUE(q.cancel(ids[i]));
    EXPECT_EQ(q.size(), static_cast<std::size_t>(n / 2));
    // Due with the others and added last (ties fire in the order added): once it ran, all
    // the others had their turn.
    q.add(due, make_task([&sentinel] { sentinel.store(true); }));
    holder.release.set();
    ASSERT_TRUE(eventually([&] { return sentinel.load(); }));
    for (int i = 0; i < n; ++i) EXPECT_EQ(ran[i].load(), i % 2 == 0 ? 1 : 0) << "timer " << i;
}

TEST(TimerQueue, CancelAfterDispatchReturnsFalse) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    timer_queue q("late-cancel", run_inline);
    const auto id = q.add(steady::now(), make_task([&ran] { ran.fetch_add(1); }));
    ASSERT_TRUE(eventually([&] { return ran.load() == 1; }));
    EXPECT_FALSE(q.cancel(id));
    EXPECT_EQ(ran.load(), 1);
}

TEST(TimerQueue, CancelOfAnIdNeverIssuedReturnsFalse) {
    timer_queue q("bad-id", run_inline);
    EXPECT_FALSE(q.cancel(0));
    EXPECT_FALSE(q.cancel(12345));
    const auto id = q.add(steady::now() + 1h, make_task([] {}));
    EXPECT_FALSE(q.cancel(id + 1));
    EXPECT_EQ(q.size(), 1u);
}

TEST(TimerQueue, SizeCountsTimersAddedAndNotYetDispatchedOrCancelled) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    timer_queue q("size", run_inline);
    EXPECT_EQ(q.size(), 0u);
    std::vector<std::uint64_t> far;
    for (int i = 0; i < 10; ++i) far.push_back(q.add(steady::now() + 1h, make_task([] {})));
    for (int i = 0; i < 5; ++i) q.add(steady::now(), make_task([&ran] { ran.fetch_add(1); }));
    ASSERT_TRUE(eventually([&] { return ran.load() == 5; }));
    EXPECT_EQ(q.size(), 10u);
    for (int i = 0; i < 4; ++i) q.cancel(far[i]);
    EXPECT_EQ(q.size(), 6u);
}

TEST(TimerQueue, DestructorDiscardsPendingCallbacksWithoutRunningThem) {
    std::atomic<int> ran{0};
    std::atomic<int> freed{0};
    {
        timer_queue q("teardown", run_inline);
        for (int i = 0; i < 100; ++i) {
            auto guard = std::make_shared<destruction_counter>(&freed);
            q.add(steady::now() + 1h, make_task([&ran, guard] { ran.fetch_add(1); }));
        }
        EXPECT_EQ(freed.load(), 0);
    }
    EXPECT_EQ(freed.load(), 100);
    EXPECT_EQ(ran.load(), 0);
}

TEST(TimerQueue, AnUnusedQueueStartsNoThreadAndIsDestroyedCleanly) {
    timer_queue q("tq8", run_inline);
    EXPECT_EQ(q.size(), 0u);
    EXPECT_FALSE(q.cancel(1));
    EXPECT_FALSE(thread_named("tq8-timer"));
}

TEST(TimerQueue, ServiceThreadStartsWithTheFirstTimerAndIsNamed) {
    timer_queue q("tq9", run_inline);
    EXPECT_FALSE(thread_named("tq9-timer"));
    q.add(steady::now() + 1h, make_task([] {}));
    EXPECT_TRUE(eventually([] { return thread_named("tq9-timer"); }));  // the thread names itself
}

TEST(TimerQueue, AnEarlierTimerWakesTheSleepingThread) {
    watchdog dog(60s);
    std::atomic<bool> ran{false};
    timer_queue q("earlier", run_inline);
    q.add(steady::now() + 1h, make_task([] {}));
    // Once it has named itself, the thread blocks nowhere but in its wait for the hour.
    ASSERT_TRUE(eventually([] { return thread_named_blocked("earlier-timer"); }, 30s));
    q.add(steady::now() + 10ms, make_task([&ran] { ran.store(true); }));
    EXPECT_TRUE(eventually([&] { return ran.load(); }, 30s));
}

TEST(TimerQueue, CallbacksMayAddAndCancelTimers) {
    watchdog dog(60s);
    std::atomic<int> chain{0};
    std::atomic<bool> cancelled{false};
    timer_queue q("reentrant", run_inline);
    const auto victim = q.add(steady::now() + 1h, make_task([] {}));
    std::function<void()> step;
    step = [&] {
        if (chain.fetch_add(1) + 1 < 10) q.add(steady::now() + 1ms, make_task([&] { step(); }));
        else cancelled.store(q.cancel(victim));
    };
    q.add(steady::now(), make_task([&] { step(); }));
    ASSERT_TRUE(eventually([&] { return chain.load() == 10; }));
    ASSERT_TRUE(eventually([&] { return cancelled.load(); }));
    EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueue, HundredThousandTimersEachFireOnceNeverEarlyAndCancelsAreExact) {
    watchdog dog(240s);
    const int n = static_cast<int>(scaled(100'000));
    std::vector<std::atomic<int>> ran(n);
    std::atomic<int> fired{0};
    std::atomic<int> early{0};
    timer_queue q("many", run_inline);
    std::mt19937 rng(99);
    std::uniform_int_distribution<int> delay_us(50'000, 250'000);
    std::vector<std::uint64_t> ids;
    ids.reserve(n);
    for (int i = 0; i < n; ++i) {
        const auto due = steady::now() + std::chrono::microseconds(delay_us(rng));
        ids.push_back(q.add(due, make_task([&, i, due] {
                                if (steady::now() < due) early.fetch_add(1);
                                ran[i].fetch_add(1);
                                fired.fetch_add(1);
                            })));
    }
    // Cancel every third; the ones that fired meanwhile report false.
    std::vector<char> was_cancelled(n, 0);
    int cancelled = 0;
    for (int i = 0; i < n; i += 3) {
        was_cancelled[i] = q.cancel(ids[i]) ? 1 : 0;
        cancelled += was_cancelled[i];
    }
    const int expected = n - cancelled;
    ASSERT_TRUE(eventually([&] { return fired.load() == expected; }, 120s)) << fired.load() << " of " << expected;
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(fired.load(), expected);
    EXPECT_EQ(q.size(), 0u);
    EXPECT_EQ(early.load(), 0);
    for (int i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), was_cancelled[i] ? 0 : 1) << "timer " << i;
}

TEST(TimerQueue, CancellingMostTimersKeepsSizeExactAndTheRestStillFire) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    timer_queue q("compact", run_inline);
    const int n = static_cast<int>(scaled(20'000));
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(q.add(steady::now() + 1h, make_task([] {})));
    for (int i = 0; i < n; ++i) {
        if (i % 10 == 0) continue;
        ASSERT_TRUE(q.cancel(ids[i]));
    }
    EXPECT_EQ(q.size(), static_cast<std::size_t>(n / 10));
    for (int i = 0; i < n; i += 10) ASSERT_TRUE(q.cancel(ids[i]));
    EXPECT_EQ(q.size(), 0u);
    q.add(steady::now() + 1ms, make_task([&ran] { ran.fetch_add(1); }));
    ASSERT_TRUE(eventually([&] { return ran.load() == 1; }));
}

// close() (the pool's destructor) races the thread while it dispatches timers falling due:
// each callback either ran, once, or was discarded, and is freed exactly once either way.
TEST(TimerQueue, ClosingWhileTimersFallDueRunsOrDiscardsEachCallbackAndFreesItOnce) {
    watchdog dog(120s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE("seed " + std::to_string(seed) + " (CONTEND_TEST_SEED replays it)");
    std::mt19937 rng(seed);
    const int rounds = static_cast<int>(scaled(200));
    constexpr int n = 16;
    int wrong = 0, ran_in_all = 0;
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::atomic<int>> ran(n), freed(n);
        {
            timer_queue q("close-race", run_inline);
            const auto now = steady::now();
            for (int i = 0; i < n; ++i) {
                q.add(now + std::chrono::microseconds(rng() % 200),
                      make_task(
                          [&ran, i, c = std::make_shared<destruction_counter>(&freed[i])] { ran[i].fetch_add(1); }));
                if (rng() % 4 == 0) std::this_thread::yield();
            }
            for (auto k = rng() % 4; k > 0; --k) std::this_thread::yield();
            if (rng() % 2 == 0) q.close();  // else the destructor closes it
        }
        for (int i = 0; i < n; ++i) {
            wrong += ran[i].load() > 1 || freed[i].load() != 1;
            ran_in_all += ran[i].load();
        }
    }
    EXPECT_EQ(wrong, 0) << "callbacks run twice, or not freed exactly once";
    RecordProperty("ran", std::to_string(ran_in_all));
    RecordProperty("discarded", std::to_string(rounds * n - ran_in_all));
}

// A worker going to sleep may watch the earliest deadline and fire it itself
// (timer_queue::watch, fire_watch): the callback runs once, never before its deadline, on
// whichever thread took it, and fire_watch says whether that was the watcher.
TEST(TimerQueueWatch, AWatcherFiresTheDeadlineOnceNeverEarlyAndSaysWhetherItTookIt) {
    watchdog dog(60s);
    timer_queue q("watched", run_inline);
    int watched = 0;
    for (int round = 0; round < 20; ++round) {
        std::atomic<int> fired{0}, early{0};
        std::atomic<std::thread::id> ran_on{};
        const auto due = steady::now() + 2ms;
        q.add(due, make_task([&, due] {
                  if (steady::now() < due) early.fetch_add(1);
                  ran_on = std::this_thread::get_id();
                  fired.fetch_add(1);
              }));
        std::thread watcher([&, due] {
            const auto plan = q.watch(1s);
            if (!plan) return;  // a loaded machine: the deadline passed and the timer thread took it
            ++watched;
            EXPECT_EQ(plan->deadline, due);
            EXPECT_LE(plan->wake_at, plan->deadline);
            std::this_thread::sleep_until(plan->wake_at);
            const bool took = q.fire_watch(*plan, steady::now());
            if (took) EXPECT_EQ(ran_on.load(), std::this_thread::get_id()) << "fire_watch ran it here";
            else EXPECT_TRUE(eventually([&] { return fired.load() == 1; }, 10s)) << "the timer thread took it";
        });
        watcher.join();
        ASSERT_TRUE(eventually([&] { return fired.load() == 1; }, 10s));
        EXPECT_EQ(fired.load(), 1);
        EXPECT_EQ(early.load(), 0);
    }
    EXPECT_GT(watched, 0) << "no round found its deadline 2 ms away";
}

TEST(TimerQueueWatch, OneWatcherAtATimeOnlyWithinTheHorizonAndNoneAfterClose) {
    timer_queue q("watchers", run_inline);
    EXPECT_FALSE(q.watch(1s).has_value()) << "no timer, nothing to watch";
    std::atomic<int> fired{0};
    q.add(steady::now() + 10s, make_task([&] { fired.fetch_add(1); }));
    EXPECT_FALSE(q.watch(1s).has_value()) << "a deadline 10 s away is past a 1 s horizon";
    const auto plan = q.watch(30s);
    ASSERT_TRUE(plan.has_value());
    EXPECT_FALSE(q.watch(30s).has_value()) << "one watcher at a time";
    q.abandon_watch();
    EXPECT_TRUE(q.watch(30s).has_value()) << "an abandoned watch lets another start";
    q.abandon_watch();
    q.close();
    EXPECT_FALSE(q.watch(30s).has_value()) << "closed";
    EXPECT_EQ(fired.load(), 0);
}

// How late a watcher's timed wake came sets how early the next one wakes (lead()): a wake
// 20 ms late, a preempted watcher on a loaded machine, must not make watchers spin for
// milliseconds. And a watch that ends after close() dispatches nothing.
TEST(TimerQueueWatch, TheLeadIsBoundedAndAWatchEndedAfterCloseDispatchesNothing) {
    timer_queue q("lead", run_inline);
    std::atomic<int> fired{0};
    for (int i = 0; i < 16; ++i) {
        q.add(steady::now() + 1ms, make_task([&] { fired.fetch_add(1); }));
        const auto plan = q.watch(1s);
        ASSERT_TRUE(plan.has_value());
        (void)q.fire_watch(*plan, plan->wake_at + 20ms);  // reported 20 ms late
        EXPECT_LE(q.lead(), timer_queue::max_lead);
    }
    EXPECT_GT(q.lead(), timer_queue::clock::duration::zero());
    ASSERT_TRUE(eventually([&] { return fired.load() == 16; }, 10s));
    q.add(steady::now() + 1ms, make_task([&] { fired.fetch_add(1); }));
    const auto plan = q.watch(1s);
    ASSERT_TRUE(plan.has_value());
    q.close();  // discards the pending timer
    EXPECT_FALSE(q.fire_watch(*plan, steady::now()));
    EXPECT_EQ(fired.load(), 16);
}

// A watched timer cancelled before the watcher's wake: the watch ends at once, without
// spinning out a deadline 10 s away, and nothing fires.
TEST(TimerQueueWatch, AWatchWhoseTimerWasCancelledEndsWithoutWaitingOutTheDeadline) {
    timer_queue q("cancelled", run_inline);
    std::atomic<int> fired{0};
    const auto due = steady::now() + 10s;
    const auto id = q.add(due, make_task([&] { fired.fetch_add(1); }));
    const auto plan = q.watch(30s);
    ASSERT_TRUE(plan.has_value());
    ASSERT_TRUE(q.cancel(id));
    EXPECT_FALSE(q.fire_watch(*plan, steady::now()));
    EXPECT_LT(steady::now(), due) << "the watch waited out a cancelled timer's deadline";
    EXPECT_EQ(fired.load(), 0);
    EXPECT_FALSE(q.watch(30s).has_value()) << "nothing left to watch";
}

// A deadline due already is not watched, and one as far back as time_point::min() (a post_at
// of the distant past) did not overflow the arithmetic of a watch (UBSan: -2^63 less the
// clock's reading, in the pool's tests).
TEST(TimerQueueWatch, ADeadlineDueAlreadyOrAtTheMinimumIsNotWatched) {
    timer_queue q("past", run_inline);
    contend::manual_reset_event hold_thread, thread_held;
    // Keep the timer thread busy so that the past timers stay in the heap while watch() looks.
    q.add(steady::now(), make_task([&] {
              thread_held.set();
              hold_thread.wait_for(30s);
          }));
    ASSERT_TRUE(thread_held.wait_for(30s));
    std::atomic<int> fired{0};
    q.add(timer_queue::clock::time_point::min(), make_task([&] { fired.fetch_add(1); }));
    EXPECT_FALSE(q.watch(1s).has_value());
    q.add(steady::now() - 1ms, make_task([&] { fired.fetch_add(1); }));
    EXPECT_FALSE(q.watch(1s).has_value());
    hold_thread.set();
    EXPECT_TRUE(eventually([&] { return fired.load() == 2; }, 10s));
}
