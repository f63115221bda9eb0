#include "contend/once.hpp"

#include <stdexcept>

#include "contend/event.hpp"
#include "test_support.hpp"

using namespace contend_test;

static_assert(sizeof(contend::once_flag) == 1, "one byte");

TEST(CallOnce, ManyCallersRunTheCallOnceAndAllSeeWhatItWrote) {
    watchdog dog(60s);
    for (int round = 0; round < static_cast<int>(scaled(200)); ++round) {
        contend::once_flag flag;
        int value = 0;  // plain: call_once orders the write before every caller's return
        std::atomic<int> calls{0}, saw{0};
        run_threads(4, [&](int) {
            contend::call_once(flag, [&] {
                calls.fetch_add(1);
                value = 42;
            });
            if (value == 42) saw.fetch_add(1);
        });
        ASSERT_EQ(calls.load(), 1);
        ASSERT_EQ(saw.load(), 4);
    }
}

TEST(CallOnce, ArgumentsAreForwardedAndACallThatReturnedIsNeverMadeAgain) {
    contend::once_flag flag;
    int target = 0;
    contend::call_once(
        flag, [](int& into, int v) { into = v; }, std::ref(target), 7);
    EXPECT_EQ(target, 7);
    contend::call_once(
        flag, [](int& into, int v) { into = v; }, std::ref(target), 8);
    EXPECT_EQ(target, 7);
}

TEST(CallOnce, AThrowingCallReachesItsCallerAndTheNextCallerMakesTheCall) {
    contend::once_flag flag;
    int made = 0;
    EXPECT_THROW(contend::call_once(flag, [] { throw std::runtime_error("first"); }), std::runtime_error);
    contend::call_once(flag, [&] { ++made; });
    contend::call_once(flag, [&] { ++made; });
    EXPECT_EQ(made, 1);
}

// The call throws while others wait for it: one of them makes it again, and no one sleeps on.
TEST(CallOnce, ThreadsWaitingOnACallThatThrowsRetryAndOneMakesIt) {
    watchdog dog(60s);
    contend::once_flag flag;
    contend::manual_reset_event go;
    std::atomic<bool> first_in{false};
    std::atomic<int> made{0};
    std::thread first([&] {
        EXPECT_THROW(contend::call_once(flag,
                                        [&] {
                                            first_in.store(true);
                                            go.wait();
                                            throw std::runtime_error("no");
                                        }),
                     std::runtime_error);
    });
    while (!first_in.load()) std::this_thread::yield();
    constexpr int n = 3;
    std::vector<std::thread> waiters;
    std::vector<tid_box> tids(n);
    for (int i = 0; i < n; ++i) {
        waiters.emplace_back([&, i] {
            tids[static_cast<std::size_t>(i)].publish();
            contend::call_once(flag, [&] { made.fetch_add(1); });
        });
    }
    std::vector<int> ids;
    for (const auto& t : tids) ids.push_back(t.get());
    EXPECT_TRUE(eventually_blocked(ids)) << "the waiters never all blocked";
    go.set();
    first.join();
    for (auto& w : waiters) w.join();
    EXPECT_EQ(made.load(), 1);
}
