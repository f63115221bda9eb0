// The suites, their registry and the --contenders glob. Every contender of every listed
// suite keeps an exact count: the harness checks the final shared value against the
// workers' completed operations, so a contender whose primitive loses an update, or whose
// expected total is computed wrongly, fails here. No timing is asserted.
//
// Here: every counting suite's contenders at two workers, and the striped, tax and sharing
// suites' own counts.
#include "suites/suites.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "measure/harness.hpp"

namespace lab = contend::lab;

namespace {
const lab::contender& find(const std::string& suite, const std::string& id) {
    const auto* s = lab::find_suite(suite);
    if (!s) throw std::runtime_error("no suite " + suite);
    for (const auto& c : s->contenders)
        if (c.id() == id) return c;
    throw std::runtime_error("no contender " + id + " in " + suite);
}
// A contender's workload under the shared-counter contract.
std::unique_ptr<lab::counting_workload> counting(const std::string& suite, const std::string& id) {
    auto w = find(suite, id).make();
    auto* c = dynamic_cast<lab::counting_workload*>(w.get());
    if (!c) throw std::runtime_error(id + " is not a counting workload");
    w.release();
    return std::unique_ptr<lab::counting_workload>(c);
}
}  // namespace

class EverySuiteContender : public testing::TestWithParam<std::string> {};

TEST_P(EverySuiteContender, KeepsAnExactCountAtTwoWorkers) {
    const auto* s = lab::find_suite(GetParam());
    ASSERT_NE(s, nullptr);
    ASSERT_FALSE(s->contenders.empty());
    lab::harness_options o;
    o.min_time_s = 0.001;
    o.repetitions = 1;
    o.deadline_s = 20;
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell_in_process(c, s->name, 2, o);
        EXPECT_TRUE(cell.valid()) << s->name << "/" << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_EQ(cell.has_fairness, c.is_lock);
    }
}

INSTANTIATE_TEST_SUITE_P(Listed, EverySuiteContender,
                         testing::Values("counter", "hold", "striped", "wait-policy", "probes", "sharing", "tax",
                                         "monitor", "cond", "sync"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (auto& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

TEST(StripedSuite, TheStripeCountIsAPowerOfTwoSoAMaskPicksTheStripe) {
    // A `%` would put a 64-bit division into every operation of every contender.
    EXPECT_THROW(lab::striped_counters<std::mutex>(3), std::invalid_argument);
    EXPECT_THROW(lab::striped_counters<std::mutex>(0), std::invalid_argument);
    auto w = counting("striped", "std_mutex/locks:16");
    lab::progress_counters progress(2);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 1000, stop, progress), 1000u);
    EXPECT_EQ(w->run(1, 500, stop, progress), 500u);
    EXPECT_EQ(w->observed_total(), 1500u);
}

namespace {
// A lock with a destructor (as the spin rows' wrapper and most peers have), which makes an
// array new put a cookie before the elements; it can also fail its n-th construction.
struct lock_with_destructor {
    static inline int live = 0;
    static inline int fail_at = -1;
    lock_with_destructor() {
        if (fail_at == live) throw std::runtime_error("lock construction failed");
        ++live;
    }
    ~lock_with_destructor() { --live; }
    void lock() {}
    void unlock() {}
};
}  // namespace

TEST(StripedSuite, TheTableStartsOnACacheLineWhateverTheLocksDestructor) {
    // An 8-byte array cookie before the stripes split one stripe in four across two lines
    // for locks with a destructor only, and made the same lock measure up to 25 % slower.
    lab::striped_counters<lock_with_destructor> with(64);
    lab::striped_counters<std::mutex> without(64);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(with.table()) % contend::cache_line_size, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(without.table()) % contend::cache_line_size, 0u);
    EXPECT_EQ(lock_with_destructor::live, 64);
}

TEST(StripedSuite, AStripeThatFailsToConstructUndoesTheOthers) {
    lock_with_destructor::fail_at = 10;
    EXPECT_THROW(lab::striped_counters<lock_with_destructor>(16), std::runtime_error);
    lock_with_destructor::fail_at = -1;
    EXPECT_EQ(lock_with_destructor::live, 0);
}

TEST(StripedSuite, ACountWhoseTableSizeWrapsAroundIsRefusedNotAllocatedShort) {
    EXPECT_THROW(lab::striped_counters<std::mutex>(std::size_t{1} << 63), std::bad_array_new_length);
}

TEST(TaxSuite, ExpectsOneIncrementPerFullRunOfItemsPerWorker) {
    // Ratio 10: worker 0 completes 25 items (2 increments), worker 1 nine (none).
    auto w = counting("tax", "fetch_add_relaxed/items_per_inc:10");
    lab::progress_counters progress(2);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 25, stop, progress), 25u);
    EXPECT_EQ(w->run(1, 9, stop, progress), 9u);
    EXPECT_EQ(w->observed_total(), 2u);
    EXPECT_EQ(w->expected_total({25, 9}), 2u);
}

TEST(TaxSuite, BelowOneItemPerIncrementEachItemMakesSeveral) {
    auto w = counting("tax", "contend_mutex/items_per_inc:0.01");
    lab::progress_counters progress(1);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 3, stop, progress), 3u);
    EXPECT_EQ(w->observed_total(), 300u);
    EXPECT_EQ(w->expected_total({3}), 300u);
}

TEST(SharingSuite, PrivateCountersSumToTheWorkersOperations) {
    for (const char* id : {"packed", "padded"}) {
        auto w = counting("sharing", id);
        lab::progress_counters progress(3);
        std::atomic<bool> stop{false};
        w->reset();
        w->run(0, 100, stop, progress);
        w->run(2, 50, stop, progress);
        EXPECT_EQ(w->observed_total(), 150u) << id;
        w->reset();
        EXPECT_EQ(w->observed_total(), 0u) << id;
    }
}
