// The suite registry (each suite once, unique contender ids, counter and hold on the same
// locks) and the --contenders glob.
#include "suites/suites.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace lab = contend::lab;

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

// The recursive matcher this replaced tried every way to split the name between the stars,
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
            // A contender the harness runs has a workload and its type; one that measures its
            // cells itself (the server suite) has neither.
            if (c.measure_cell) {
                EXPECT_FALSE(c.make) << s.name << "/" << c.id();
                EXPECT_TRUE(c.workload_type.empty()) << s.name << "/" << c.id();
                continue;
            }
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
