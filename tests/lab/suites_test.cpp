// The suites, their registry and the --contenders glob. Every contender of every listed
// suite keeps an exact count: the harness checks the final shared value against the
// workers' completed operations, so a contender whose primitive loses an update, or whose
// expected total is computed wrongly, fails here. No timing is asserted.
#include "suites/suites.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "harness/harness.hpp"

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
        const auto cell = lab::run_cell(c, s->name, 2, o);
        EXPECT_TRUE(cell.valid()) << s->name << "/" << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_EQ(cell.has_fairness, c.is_lock);
    }
}

INSTANTIATE_TEST_SUITE_P(Listed, EverySuiteContender,
                         testing::Values("counter", "hold", "striped", "wait-policy", "probes", "sharing", "tax",
                                         "monitor"),
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

// --- the --contenders glob ------------------------------------------------------------------

TEST(Glob, MatchesTheWholeNameWithStarsAndQuestionMarks) {
    struct row {
        const char* pattern;
        const char* name;
        bool matches;
    };
    const row table[] = {
        {"*", "std_mutex", true},
        {"*", "", true},
        {"", "", true},
        {"", "a", false},
        {"std_mutex", "std_mutex", true},
        {"std_mute", "std_mutex", false},  // a full match, not a prefix
        {"td_mutex", "std_mutex", false},  // nor a suffix
        {"?td_mutex", "std_mutex", true},
        {"?", "", false},
        {"??", "a", false},
        {"std_*", "std_mutex", true},
        {"*_mutex", "contend_mutex", true},
        {"*mutex*", "absl_mutex_nodetect", true},
        {"c*_*x", "contend_mutex", true},
        {"c*_*x", "contend_mutexes", false},
        {"*a*b*c*", "xxaxxbxxcxx", true},
        {"*a*b*c*", "xxaxxcxxbxx", false},
        {"a*a*a*b", "aaaaaaaab", true},  // the last star must give back characters
        {"a*a*a*b", "aaaaaaaa", false},
        {"*/cs_us:20", "contend_mutex/cs_us:20", true},
        {"contend_*", "std_mutex", false},
        {"**", "x", true},
        {"x**", "x", true},
        {"**?**", "", false},
    };
    for (const auto& r : table)
        EXPECT_EQ(lab::glob_match(r.pattern, r.name), r.matches) << "'" << r.pattern << "' against '" << r.name << "'";
}

TEST(Glob, ACommaSeparatedListMatchesWhenAnyItemDoes) {
    EXPECT_TRUE(lab::glob_match("contend_*,std_*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("std_*,contend_*", "std_mutex"));
    EXPECT_FALSE(lab::glob_match("contend_*,tbb_*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("nosuch,,?", "x"));
    EXPECT_FALSE(lab::glob_match("nosuch,", "x"));
    EXPECT_TRUE(lab::glob_match("nosuch,", ""));  // an empty item matches the empty name only
}

// Defect 9: the recursive matcher tried every way to split the name between the stars,
// so ten stars before a character the name lacks ran for minutes. Not a timing test: it
// must only finish (CTest's timeout catches a hang).
TEST(Glob, ManyStarsAreNotExponential) {
    const std::string long_name(200, 'a');
    EXPECT_FALSE(lab::glob_match("**********!", long_name));
    EXPECT_FALSE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*!", long_name));
    EXPECT_FALSE(lab::glob_match("*?*?*?*?*?*?*?*?*?*?*b", long_name));
    EXPECT_TRUE(lab::glob_match("**********a", long_name));
    EXPECT_TRUE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*", long_name));
    EXPECT_TRUE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*a", long_name));
    EXPECT_TRUE(lab::glob_match(std::string(1000, '*'), long_name));
    EXPECT_FALSE(lab::glob_match(std::string(1000, '*') + "b", long_name + long_name));
    std::string every_other;  // 100 "*a": matches only 100 or more a's
    for (int i = 0; i < 100; ++i) every_other += "*a";
    EXPECT_TRUE(lab::glob_match(every_other, long_name));
    EXPECT_FALSE(lab::glob_match(every_other + "*a", std::string(100, 'a')));
}

TEST(SuiteRegistry, ListsEachSuiteOnceWithUniqueContenderIds) {
    std::set<std::string> names;
    for (const auto& s : lab::all_suites()) {
        EXPECT_TRUE(names.insert(s.name).second) << s.name;
        EXPECT_EQ(lab::find_suite(s.name), &s) << s.name;
        EXPECT_FALSE(s.default_workers.empty()) << s.name;
        EXPECT_EQ(s.hidden, s.name == "selftest") << s.name;
        std::set<std::string> ids;
        for (const auto& c : s.contenders) {
            EXPECT_TRUE(ids.insert(c.id()).second) << s.name << "/" << c.id();
            EXPECT_TRUE(c.make) << s.name << "/" << c.id();
            EXPECT_FALSE(c.workload_type.empty()) << s.name << "/" << c.id();
        }
    }
    EXPECT_EQ(lab::find_suite("nosuch"), nullptr);
}

TEST(SuiteRegistry, CounterAndHoldRunTheSameLocks) {
    std::vector<std::string> counter_locks, hold_locks;
    for (const auto& c : lab::find_suite("counter")->contenders)
        if (c.is_lock) counter_locks.push_back(c.name);
    for (const auto& c : lab::find_suite("hold")->contenders)
        if (c.params.front().second == "0") hold_locks.push_back(c.name);
    EXPECT_FALSE(counter_locks.empty());
    EXPECT_EQ(counter_locks, hold_locks);
}
