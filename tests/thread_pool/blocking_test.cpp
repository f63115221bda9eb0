// contend::thread_pool and blocked items: the gate thread's starvation injections
// (gate_thread.cpp) and blocking_scope, which starts or wakes a worker at once
// (pool_core::begin_blocking) and ends with its item.
#include "thread_pool_support.hpp"

#include <memory>
#include <thread>

#include "contend/event.hpp"

using namespace contend_test;
using namespace pool_test;

TEST(ThreadPool, TheGateThreadUnblocksItemsThatWaitForEachOther) {
    watchdog dog(120s);
    thread_pool pool(between(2, 32));
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    // 8 items, not more: each injection past the 2 threads takes the gate's 500 ms, and this
    // test runs in six builds of the test command.
    for (int i = 0; i < 8; ++i) {
        pool.post([&] {
            started.fetch_add(1);
            // Blocks until all 8 have started: impossible with 2 threads unless the gate
            // thread adds 6 (one per 500 ms when no progress is made).
            eventually([&] { return started.load() == 8; }, 100s);
            finished.fetch_add(1);
        });
    }
    EXPECT_TRUE(eventually([&] { return finished.load() == 8; }, 90s));
    EXPECT_GE(pool.stats().starvation_injections, 6u);
    pool.wait_idle();
}

// One worker, whose item posts another and opens a scope: the second thread is there (alive,
// counted) when the scope's constructor returns, not after the gate's next tick. The gate
// injects a thread only after 500 ms without a completion, and counts the injection before it
// starts the thread; so in a round whose count is still 0 after the look, the thread came
// from the scope. A round the gate did step into (this thread stalled for 500 ms) proves
// nothing either way and is run again.
TEST(ThreadPool, BlockingScopeAddsAThreadAtOnceWithoutTheGateThread) {
    watchdog dog(120s);
    int conclusive = 0;
    for (int round = 0; round < 3 && conclusive == 0; ++round) {
        thread_pool pool(between(1, 2));
        std::atomic<std::size_t> threads_in_scope{0};
        std::atomic<std::uint64_t> injections_after{1};
        contend::manual_reset_event second_ran;
        pool.post([&] {
            pool.post([&] { second_ran.set(); });
            contend::blocking_scope blocking;
            threads_in_scope = pool.stats().threads;
            injections_after = pool.stats().starvation_injections;
            second_ran.wait_for(20s);
        });
        pool.wait_idle();
        EXPECT_TRUE(second_ran.is_set());
        if (injections_after.load() != 0) continue;
        ++conclusive;
        EXPECT_EQ(threads_in_scope.load(), 2u);
    }
    EXPECT_EQ(conclusive, 1) << "the gate thread stepped in, three rounds running";
}

// Sixteen items that wait for each other, each inside a scope: the scopes start the threads
// they need (the gate's injections, one per 500 ms, would need 7 s for the 14 extra), and
// the extra threads retire once the scopes end.
TEST(ThreadPool, SixteenItemsThatWaitForEachOtherInBlockingScopesFinishAndTheExtraThreadsRetire) {
    watchdog dog(120s);
    thread_pool pool(between(2, 32));
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    for (int i = 0; i < 16; ++i) {
        pool.post([&] {
            started.fetch_add(1);
            contend::blocking_scope blocking;
            eventually([&] { return started.load() == 16; }, 100s);
            finished.fetch_add(1);
        });
    }
    EXPECT_TRUE(eventually([&] { return finished.load() == 16; }, 90s));
    // A loose bound: the gate alone would have injected all 14.
    EXPECT_LT(pool.stats().starvation_injections, 14u);
    pool.wait_idle();
    // The extra threads retire once the scopes end and there is no work for them.
    EXPECT_TRUE(eventually([&] { return pool.stats().threads <= 2; }, 30s)) << pool.stats().threads;
}

TEST(ThreadPool, ABlockingScopeThatOutlivesItsItemStopsCountingWhenTheItemReturns) {
    watchdog dog(60s);
    thread_pool pool(between(2, 8));
    // As a coroutine that suspends inside a scope and resumes elsewhere: the scope leaves
    // its item alive and is destroyed later, once on a plain thread, once on another worker.
    std::unique_ptr<contend::blocking_scope> on_plain_thread, on_a_worker;
    pool.post([&] { on_plain_thread = std::make_unique<contend::blocking_scope>(); });
    pool.post([&] { on_a_worker = std::make_unique<contend::blocking_scope>(); });
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
    std::thread([&] { on_plain_thread.reset(); }).join();
    pool.post([&] { on_a_worker.reset(); });
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
    EXPECT_EQ(pool.stats().thread_goal, 2u);
    // A scope used as documented still counts while it is open.
    contend::manual_reset_event inside, leave;
    pool.post([&] {
        contend::blocking_scope s;
        inside.set();
        leave.wait_for(20s);
    });
    ASSERT_TRUE(inside.wait_for(20s));
    EXPECT_EQ(pool.stats().blocked, 1u);
    leave.set();
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
}
