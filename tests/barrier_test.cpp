#include "contend/barrier.hpp"

#include "contend/synchronization_error.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::barrier<>) == 16, "a word and the count, with an empty completion");

// Workers take turns in phases: the completion runs once per phase, before anyone leaves it,
// and nobody leaves a phase before every worker has arrived in it.
TEST(Barrier, EveryPhaseWaitsForEveryArrivalAndRunsItsCompletionOnceBeforeReleasing) {
    watchdog dog(120s);
    constexpr int n = 4;
    const long phases = scaled(4000);
    std::atomic<long> arrivals{0};
    long completions = 0;  // plain: written by the completion only, read after the waits
    std::atomic<long> early{0}, stale{0};
    contend::barrier sync(n, [&]() noexcept { ++completions; });
    run_threads(n, [&](int) {
        for (long p = 0; p < phases; ++p) {
            arrivals.fetch_add(1, std::memory_order_relaxed);
            sync.arrive_and_wait();
            if (arrivals.load(std::memory_order_relaxed) < (p + 1) * n) early.fetch_add(1);
            if (completions != 2 * p + 1) stale.fetch_add(1);  // this phase's, not the next one's yet
            sync.arrive_and_wait();  // nobody starts the next phase's arrivals before all checked
        }
    });
    EXPECT_EQ(early.load(), 0) << "a thread left a phase before every arrival";
    EXPECT_EQ(stale.load(), 0) << "a thread left a phase before its completion ran";
    EXPECT_EQ(completions, 2 * phases);
}

TEST(Barrier, ADroppedThreadIsNoLongerAwaitedFromTheNextPhaseOn) {
    watchdog dog(60s);
    constexpr int n = 3;
    std::atomic<int> completions{0};
    contend::barrier sync(n, [&]() noexcept { completions.fetch_add(1); });
    run_threads(n, [&](int t) {
        const int rounds = t == 0 ? 5 : 50;
        for (int r = 0; r < rounds; ++r) {
            if (t == 0 && r == rounds - 1) {
                sync.arrive_and_drop();
            } else {
                sync.arrive_and_wait();
            }
        }
    });
    EXPECT_EQ(completions.load(), 50);
}

TEST(Barrier, ATokenWaitsForItsPhaseOnlyAndALoneArrivalCompletesAtOnce) {
    watchdog dog(60s);
    contend::barrier two(2);
    auto token = two.arrive();
    std::thread other([&] { two.arrive_and_wait(); });
    two.wait(std::move(token));
    other.join();
    int ran = 0;
    contend::barrier one(1, [&]() noexcept { ++ran; });
    one.wait(one.arrive());
    one.arrive_and_wait();
    EXPECT_EQ(ran, 2);
    contend::barrier by_two(3);
    auto t2 = by_two.arrive(2);
    std::thread third([&] { by_two.arrive_and_wait(); });
    by_two.wait(std::move(t2));
    third.join();
}

TEST(Barrier, MisuseThrowsAndLeavesTheBarrierAsItWas) {
    EXPECT_THROW(contend::barrier<>(-1), contend::synchronization_error);
    EXPECT_THROW(contend::barrier<>(contend::barrier<>::max() + 1), contend::synchronization_error);
    // The count is kept in 32 bits: one whose low 32 bits are a valid count is still refused.
    EXPECT_THROW(contend::barrier<>((std::ptrdiff_t{1} << 32) + 2), contend::synchronization_error);
    int ran = 0;
    contend::barrier b(2, [&]() noexcept { ++ran; });
    EXPECT_THROW((void)b.arrive(0), contend::synchronization_error);
    EXPECT_THROW((void)b.arrive(3), contend::synchronization_error);
    auto t = b.arrive();
    EXPECT_THROW((void)b.arrive(2), contend::synchronization_error);  // one arrival left
    auto t2 = b.arrive();
    b.wait(std::move(t));
    b.wait(std::move(t2));
    EXPECT_EQ(ran, 1);
}
