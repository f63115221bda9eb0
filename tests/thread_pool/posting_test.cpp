// contend::thread_pool: posting and running items (pool_core.cpp's posting paths and worker
// loop, through the public face): every item runs exactly once, from outside threads and
// from workers, locally and globally; submit's futures, coroutines resumed on workers, a
// throwing item, work_waiting and wait_idle's refusal on a worker.
#include "thread_pool_support.hpp"

#include <coroutine>
#include <exception>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

using namespace contend_test;
using namespace pool_test;

TEST(ThreadPool, AMillionItemsPostedFromEightOutsideThreadsEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t per_thread = 125'000;
    run_counts runs(8 * per_thread);
    {
        thread_pool pool(fixed(2));
        run_threads(8, [&](int t) {
            for (std::size_t i = 0; i < per_thread; ++i) {
                const std::size_t k = static_cast<std::size_t>(t) * per_thread + i;
                pool.post([&runs, k] { runs.hit(k); });
            }
        });
        pool.wait_idle();
        EXPECT_EQ(pool.stats().completed, 8 * per_thread);
    }
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

TEST(ThreadPool, AMillionItemsPostedLocallyByWorkersEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t roots = 100, per_root = 10'000;
    run_counts runs(roots * per_root);
    thread_pool pool(fixed(2));
    for (std::size_t r = 0; r < roots; ++r) {
        pool.post([&, r] {
            for (std::size_t i = 0; i < per_root; ++i) pool.post_local([&runs, k = r * per_root + i] { runs.hit(k); });
        });
    }
    pool.wait_idle();
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
    EXPECT_EQ(pool.stats().completed, roots + roots * per_root);
}

TEST(ThreadPool, AMillionItemsMixingGlobalLocalAndChainedPostsEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t outside = 4, chains_per_thread = 2'500, chain_length = 100;
    run_counts runs(outside * chains_per_thread * chain_length);
    thread_pool pool(fixed(3));
    // Each chain: an item posted from outside, which posts the next link alternately to the
    // local and the global queue, chain_length links in all.
    struct link {
        static void run(thread_pool& p, run_counts& r, std::size_t base, std::size_t i) {
            r.hit(base + i);
            if (i + 1 == chain_length) return;
            auto next = [&p, &r, base, i] { run(p, r, base, i + 1); };
            if (i % 2 == 0) p.post_local(next);
            else p.post(next);
        }
    };
    run_threads(static_cast<int>(outside), [&](int t) {
        for (std::size_t c = 0; c < chains_per_thread; ++c) {
            const std::size_t base = (static_cast<std::size_t>(t) * chains_per_thread + c) * chain_length;
            pool.post([&pool, &runs, base] { link::run(pool, runs, base, 0); });
        }
    });
    pool.wait_idle();
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

TEST(ThreadPool, AThrowingItemGoesToTheHandlerAndThePoolKeepsWorking) {
    watchdog dog(60s);
    std::atomic<int> handled{0};
    thread_pool_options o = fixed(2);
    o.on_exception = [&](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error&) {
            handled.fetch_add(1);
        }
    };
    thread_pool pool(o);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) {
        pool.post([] { throw std::runtime_error("boom"); });
        pool.post([&] { ran.fetch_add(1); });
    }
    pool.wait_idle();
    EXPECT_EQ(handled.load(), 100);
    EXPECT_EQ(ran.load(), 100);
    EXPECT_EQ(pool.stats().unhandled_exceptions, 100u);
    EXPECT_EQ(pool.stats().threads, 2u);
}

TEST(ThreadPool, SubmitCarriesTheResultAndTheException) {
    watchdog dog(60s);
    thread_pool pool(fixed(2));
    auto value = pool.submit([] { return 42; });
    auto failure = pool.submit([]() -> int { throw std::out_of_range("nope"); });
    auto move_only = pool.submit([p = std::make_unique<int>(7)] { return *p; });
    ASSERT_EQ(value.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(value.get(), 42);
    ASSERT_EQ(failure.wait_for(30s), std::future_status::ready);
    EXPECT_THROW(failure.get(), std::out_of_range);
    ASSERT_EQ(move_only.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(move_only.get(), 7);
    EXPECT_EQ(pool.stats().unhandled_exceptions, 0u);
}

namespace {

fire_and_forget hop(thread_pool& pool, int hops, bool local, std::atomic<int>& on_pool, std::atomic<bool>& done) {
    for (int i = 0; i < hops; ++i) {
        if (local) co_await pool.schedule_local();
        else co_await pool.schedule();
        if (thread_pool::current() == &pool) on_pool.fetch_add(1, std::memory_order_relaxed);
    }
    done.store(true);
}
}  // namespace

TEST(ThreadPool, AHundredThousandCoroutineHopsEachResumeOnAWorker) {
    watchdog dog(120s);
    thread_pool pool(fixed(2));
    std::atomic<int> on_pool{0};
    std::atomic<bool> done_global{false}, done_local{false};
    hop(pool, 50'000, false, on_pool, done_global);
    hop(pool, 50'000, true, on_pool, done_local);
    ASSERT_TRUE(eventually([&] { return done_global.load() && done_local.load(); }, 100s));
    EXPECT_EQ(on_pool.load(), 100'000);
    pool.wait_idle();
}

TEST(ThreadPool, WaitIdleFromAWorkerOfTheSamePoolThrows) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    auto f = pool.submit([&] { pool.wait_idle(); });
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    EXPECT_THROW(f.get(), std::logic_error);
}

TEST(ThreadPool, PostLocalFromOutsideAPoolGoesToTheGlobalQueue) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    std::atomic<int> ran{0};
    for (int i = 0; i < 1000; ++i) pool.post_local([&] { ran.fetch_add(1); });
    pool.wait_idle();
    EXPECT_EQ(ran.load(), 1000);
    EXPECT_EQ(thread_pool::current(), nullptr);
}

// What an event loop run as a pool item asks before it blocks in its poll.
TEST(ThreadPool, WorkWaitingSeesTheCallersDequeAndTheGlobalQueues) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    EXPECT_FALSE(pool.work_waiting());
    std::atomic<int> step{0};
    std::atomic<bool> alone{true}, after_local{false}, after_global{false};
    pool.post([&] {
        alone = pool.work_waiting();  // nothing queued anywhere
        pool.post_local([&] { step.fetch_add(1); });
        after_local = pool.work_waiting();  // its own deque
        pool.post([&] { step.fetch_add(1); });
        after_global = pool.work_waiting();
    });
    pool.wait_idle();
    EXPECT_EQ(step.load(), 2);
    EXPECT_FALSE(alone.load());
    EXPECT_TRUE(after_local.load());
    EXPECT_TRUE(after_global.load());

    // Off the pool: the global queue, here behind the one worker held busy. The second item
    // is posted once the worker runs the first: posted before, it could move with the first
    // into the worker's deque (a worker takes a batch from the global queue), which off the
    // pool is not looked at (thread_pool.hpp), and the check below failed so under ASan.
    std::atomic<bool> release{false}, running{false};
    pool.post([&] {
        running = true;
        while (!release.load()) std::this_thread::sleep_for(1ms);
    });
    while (!running.load()) std::this_thread::sleep_for(1ms);  // bounded by the watchdog
    pool.post([] {});
    EXPECT_TRUE(pool.work_waiting());
    release = true;
    pool.wait_idle();
    EXPECT_FALSE(pool.work_waiting());
}
