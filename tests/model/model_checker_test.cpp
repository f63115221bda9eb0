// Tests of the model checker itself (src/model/): what it reports for each kind of failure,
// that the bounded search honours its bound, and that a printed spec replays the same schedule.
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <string>

#include "contend/cpu_relax.hpp"
#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;

internal::atomic<int> counter{0};

// Two threads increment by a load and a store: an update is lost only if one thread is
// preempted between its load and its store, so it takes exactly one preemption.
void racy_increments() {
    const auto increment = [] { counter.store(counter.load() + 1); };
    model::thread other(increment);
    increment();
    other.join();
    model::check(counter.load() == 2, "no increment is lost");
}

TEST(ModelChecker, TheBoundedSearchFindsAOnePreemptionBugWithOneAndNotWithNone) {
    const auto none = model::explore({.strategy = model::strategy_kind::bounded, .preemptions = 0}, racy_increments);
    EXPECT_FALSE(none.failed) << none.report;
    EXPECT_TRUE(none.complete) << none.report;
    const auto one = model::explore({.strategy = model::strategy_kind::bounded, .preemptions = 1}, racy_increments);
    EXPECT_TRUE(one.failed) << one.report;
    EXPECT_NE(one.message.find("no increment is lost"), std::string::npos) << one.message;
}

TEST(ModelChecker, RandomAndPctFindTheLostUpdate) {
    for (const auto s : {model::strategy_kind::random, model::strategy_kind::pct}) {
        const auto r = model::explore({.strategy = s, .executions = 200}, racy_increments);
        EXPECT_TRUE(r.failed) << r.report;
    }
}

TEST(ModelChecker, AWaitNobodyCanEndIsReportedAsADeadlockNamingTheBlockedThreads) {
    static manual_reset_event never;
    const auto r = model::explore({.strategy = model::strategy_kind::random, .executions = 5}, [] {
        model::thread waiter([] { never.wait(); });
        waiter.join();
    });
    ASSERT_TRUE(r.failed) << r.report;
    EXPECT_NE(r.message.find("deadlock"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("T1 waits on"), std::string::npos) << r.message;
    EXPECT_NE(r.report.find("CONTEND_MODEL_SEED='random:"), std::string::npos) << r.report;
}

TEST(ModelChecker, ASpinThatNeverEndsFailsAtTheStepBound) {
    static internal::atomic<bool> never{false};
    const auto r = model::explore({.strategy = model::strategy_kind::pct, .executions = 3, .max_steps = 2000}, [] {
        while (!never.load()) cpu_relax();
    });
    ASSERT_TRUE(r.failed) << r.report;
    EXPECT_NE(r.message.find("more than 2000 scheduling points"), std::string::npos) << r.message;
}

TEST(ModelChecker, AnUncaughtExceptionOrACrashInAModelThreadIsAFailureThatSaysSo) {
    const auto thrown = model::explore({.strategy = model::strategy_kind::random, .executions = 2},
                                       [] { model::thread t([] { throw std::runtime_error("broken on purpose"); }); });
    ASSERT_TRUE(thrown.failed);
    EXPECT_NE(thrown.message.find("T1 ended with an uncaught exception: broken on purpose"), std::string::npos)
        << thrown.message;
    const auto crashed = model::explore({.strategy = model::strategy_kind::random, .executions = 2},
                                        [] { model::thread t([] { std::abort(); }); });
    ASSERT_TRUE(crashed.failed);
    EXPECT_NE(crashed.message.find("signal 6"), std::string::npos) << crashed.message;
}

// The schedule without its addresses: heap addresses may differ between two children forked
// at different times from the test's process; the threads, operations and values may not.
std::string without_addresses(const std::string& schedule) {
    return std::regex_replace(schedule, std::regex("0x[0-9a-f]+"), "@");
}

TEST(ModelChecker, AFailingSpecReplaysTheSameScheduleFromTheEnvironment) {
    const auto first = model::explore({.strategy = model::strategy_kind::random, .executions = 200}, racy_increments);
    ASSERT_TRUE(first.failed) << first.report;
    ASSERT_EQ(setenv("CONTEND_MODEL_SEED", first.spec.c_str(), 1), 0);
    const auto again = model::explore({.strategy = model::strategy_kind::pct, .executions = 200}, racy_increments);
    unsetenv("CONTEND_MODEL_SEED");
    ASSERT_TRUE(again.failed) << again.report;
    EXPECT_EQ(again.executions, 1u);
    EXPECT_EQ(again.message, first.message);
    EXPECT_EQ(without_addresses(again.schedule), without_addresses(first.schedule));
}

TEST(ModelChecker, AMalformedSeedIsRefusedWithItsReason) {
    for (const char* bad : {"random", "random:12x", "pct0/10:1", "pct3:1", "sideways:1", "choices:1..2"}) {
        ASSERT_EQ(setenv("CONTEND_MODEL_SEED", bad, 1), 0);
        try {
            (void)model::explore({}, [] {});
            ADD_FAILURE() << bad << " was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
        }
    }
    unsetenv("CONTEND_MODEL_SEED");
}

TEST(ModelChecker, AModelThreadOutsideAnExplorationIsRefused) {
    EXPECT_THROW(model::thread([] {}), std::logic_error);
    EXPECT_THROW(model::check(false, "outside"), std::logic_error);
}

}  // namespace
