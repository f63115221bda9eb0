#include "contend/async_semaphore.hpp"

#include <mutex>
#include <random>
#include <stop_token>
#include <vector>

#include "contend/synchronization_error.hpp"
#include "contend/thread_pool.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::async_semaphore) == 32);

namespace {

fire_and_forget acquire_one(contend::async_semaphore& s, std::atomic<int>& through) {
    co_await s.acquire();
    through.fetch_add(1);
}

}  // namespace

TEST(AsyncSemaphore, AReleaseOfOneResumesExactlyOneWaiterHoldingItsPermit) {
    watchdog dog(60s);
    contend::async_semaphore s(0);
    std::atomic<int> through{0};
    for (int i = 0; i < 3; ++i) acquire_one(s, through);
    EXPECT_EQ(through.load(), 0);
    s.release();
    EXPECT_EQ(through.load(), 1);
    EXPECT_FALSE(s.try_acquire()) << "the permit was both handed over and left in the count";
    EXPECT_EQ(s.available(), 0);
    s.release(4);  // two to the waiters, two to the count
    EXPECT_EQ(through.load(), 3);
    EXPECT_EQ(s.available(), 2);
    EXPECT_TRUE(s.try_acquire());
    EXPECT_TRUE(s.try_acquire());
    EXPECT_FALSE(s.try_acquire());
}

TEST(AsyncSemaphore, MisuseThrowsAndChangesNothing) {
    EXPECT_THROW(contend::async_semaphore(-1), contend::synchronization_error);
    EXPECT_THROW(contend::async_semaphore(contend::async_semaphore::max() + 1), contend::synchronization_error);
    contend::async_semaphore s(1);
    EXPECT_THROW(s.release(-1), contend::synchronization_error);
    EXPECT_THROW(s.release(contend::async_semaphore::max()), contend::synchronization_error);
    EXPECT_EQ(s.available(), 1);
    EXPECT_THROW((void)s.acquire_for(1ms), contend::synchronization_error) << "a timed acquire off every pool";
}

// Coroutines on a pool, some acquiring plainly, some with a stop token a thread stops at
// random, some with a timeout, and two threads blocking: never more than 3 permits out, every
// one of them back at the end, and every waiter resumed.
TEST(AsyncSemaphore, StopsTimeoutsAndReleasesRacingLoseNoPermitAndLetNoMoreThanTheCountIn) {
    watchdog dog(120s);
    constexpr int permits = 3, coroutines = 32;
    const int rounds = static_cast<int>(scaled(2000));
    contend::async_semaphore s(permits);
    std::atomic<int> out{0}, most{0}, done{0}, stopped{0}, timed_out{0};
    auto enter = [&] {
        const int now = out.fetch_add(1) + 1;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
    };
    std::mutex stops_lock;  // the coroutines' current stop sources, which a thread stops at random
    std::vector<std::stop_source> stops(coroutines);
    std::atomic<bool> stopping{true};
    {
        contend::thread_pool pool([] {
            contend::thread_pool_options o;
            o.min_threads = o.max_threads = 2;
            o.hill_climbing = false;
            return o;
        }());
        auto worker = [&](int id) -> fire_and_forget {
            co_await pool.schedule();
            for (int r = 0; r < rounds; ++r) {
                bool got = true;
                switch ((r + id) % 3) {
                    case 0:
                        co_await s.acquire();
                        break;
                    case 1: {
                        std::stop_token token;
                        {
                            std::lock_guard g(stops_lock);
                            stops[static_cast<std::size_t>(id)] = std::stop_source();
                            token = stops[static_cast<std::size_t>(id)].get_token();
                        }
                        got = co_await s.acquire(token);
                        if (!got) stopped.fetch_add(1);
                        break;
                    }
                    default:
                        got = co_await s.acquire_for(std::chrono::microseconds(50 + r % 200));
                        if (!got) timed_out.fetch_add(1);
                }
                if (!got) continue;
                enter();
                if (r % 8 == 0) co_await pool.schedule();  // hold it across a suspension
                out.fetch_sub(1);
                s.release();
            }
            done.fetch_add(1);
        };
        std::thread stopper([&] {
            std::mt19937 rng(7);
            while (stopping.load()) {
                std::stop_source victim;
                {
                    std::lock_guard g(stops_lock);
                    victim = stops[rng() % stops.size()];
                }
                victim.request_stop();  // racing a release, a grant, or nothing (already done)
                std::this_thread::sleep_for(50us);
            }
        });
        std::vector<std::thread> blockers;
        for (int b = 0; b < 2; ++b) {
            blockers.emplace_back([&] {
                for (int r = 0; r < rounds / 4; ++r) {
                    if (r % 2 == 0) {
                        s.blocking_acquire();
                    } else if (!s.blocking_try_acquire_for(std::chrono::microseconds(100))) {
                        continue;
                    }
                    enter();
                    out.fetch_sub(1);
                    s.release();
                }
            });
        }
        for (int i = 0; i < coroutines; ++i) worker(i);
        for (auto& b : blockers) b.join();
        ASSERT_TRUE(eventually([&] { return done.load() == coroutines; }, 60s)) << done.load() << " finished";
        stopping = false;
        stopper.join();
    }
    EXPECT_LE(most.load(), permits) << "more holders than permits";
    EXPECT_EQ(s.available(), permits) << "a permit was lost or made";
    std::printf("stopped %d, timed out %d\n", stopped.load(), timed_out.load());
}
