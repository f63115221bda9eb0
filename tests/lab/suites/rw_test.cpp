// The rw suite: listed with its grid and its contenders (the peers where built in); a cell
// reports every metric; every contender keeps the table whole; and a lock that does not
// exclude fails its cell as torn or miscounted, not as a fast one. No timing is asserted:
// the cells run with the harness's deadline, and a broken lock gets a bounded number of
// cells to show itself.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "suites/rw_workload.hpp"
#include "suites/suites.hpp"
#include "suites_support.hpp"

namespace lab = contend::lab;
using contend_test::suites::peer_built_in;
using contend_test::suites::quick_pool_options;

namespace {

const lab::contender& rw_row(const std::string& id) {
    for (const auto& c : lab::find_suite("rw")->contenders)
        if (c.id() == id) return c;
    throw std::runtime_error("no rw contender " + id);
}

// A "lock" that lets everyone in at once: what the table's own checks exist to catch.
struct no_lock {
    void lock() {}
    void unlock() {}
    void lock_shared() {}
    void unlock_shared() {}
};
// One that excludes writers from each other but lets readers in at any time: only the
// readers' check can catch it.
struct readers_ignore_the_lock {
    std::mutex m;
    void lock() { m.lock(); }
    void unlock() { m.unlock(); }
    void lock_shared() {}
    void unlock_shared() {}
};

// Runs up to `tries` cells of `c` at 2 workers; returns the first failed one's status, or
// "ok" when every one passed. The workers overlap on 2 CPUs, and on one they are preempted
// in the middle of microsecond-long sections, so a failure shows within a few cells.
std::string first_failure(const lab::contender& c, int tries) {
    auto o = quick_pool_options();
    o.min_time_s = 0.02;
    for (int i = 0; i < tries; ++i) {
        const auto cell = lab::run_cell_in_process(c, "rw", 2, o);
        if (!cell.valid()) return cell.status;
    }
    return "ok";
}

}  // namespace

TEST(RwSuite, IsListedWithEveryContenderAtEveryShareAndLength) {
    const auto* s = lab::find_suite("rw");
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(s->hidden);
    EXPECT_EQ(s->default_workers, (std::vector<std::int32_t>{1, 2, 4, 16, 64}));
    std::vector<std::string> locks = {"contend_shared_mutex", "std_shared_mutex", "pthread_rwlock",
                                      "pthread_rwlock_writer", "contend_mutex"};
    if (peer_built_in("absl")) locks.push_back("absl_mutex");
    if (peer_built_in("tbb")) {
        locks.push_back("tbb_spin_rw_mutex");
        locks.push_back("tbb_queuing_rw_mutex");
    }
    if (peer_built_in("ck")) locks.push_back("ck_rwlock");
    EXPECT_EQ(s->contenders.size(), locks.size() * 10);
    for (const auto& lock : locks)
        for (const char* pct : {"0", "50", "90", "99", "100"})
            for (const char* cs : {"tiny", "long"}) {
                const auto id = lock + "/read_pct:" + pct + "/cs:" + cs;
                EXPECT_NO_THROW(rw_row(id)) << id;
            }
    for (const auto& c : s->contenders) {
        EXPECT_TRUE(c.is_lock) << c.id();
        EXPECT_EQ(c.operation, "access") << c.id();
    }
}

TEST(RwSuite, OneCellReportsEveryMetric) {
    const auto cell =
        lab::run_cell_in_process(rw_row("std_shared_mutex/read_pct:50/cs:tiny"), "rw", 2, quick_pool_options());
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_TRUE(cell.has_fairness);
    EXPECT_GT(cell.metric("reads_per_second"), 0);
    EXPECT_GT(cell.metric("writes_per_second"), 0);
    EXPECT_TRUE(std::isfinite(cell.metric("write_wait_p99_ns")));
    EXPECT_GE(cell.metric("write_wait_p99_ns"), 0);
}

TEST(RwSuite, AllReadsHaveNoWriteWaitToReport) {
    const auto cell =
        lab::run_cell_in_process(rw_row("contend_shared_mutex/read_pct:100/cs:tiny"), "rw", 2, quick_pool_options());
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_GT(cell.metric("reads_per_second"), 0);
    EXPECT_EQ(cell.metric("writes_per_second"), 0);
    EXPECT_TRUE(std::isnan(cell.metric("write_wait_p99_ns")));  // not measured, not 0
}

TEST(RwSuite, EveryContenderKeepsTheTableWholeAtTwoWorkers) {
    for (const auto& c : lab::find_suite("rw")->contenders) {
        if (c.params[0].second != "50" && c.params[0].second != "90") continue;  // both sides, 4 points a lock
        const auto cell = lab::run_cell_in_process(c, "rw", 2, quick_pool_options());
        EXPECT_TRUE(cell.valid()) << c.id() << ": " << cell.status << ": " << cell.detail;
    }
}

TEST(RwSuite, ALockThatLetsReadersInBesideAWriterFailsItsCellAsTorn) {
    const auto c = lab::rw_point<readers_ignore_the_lock, lab::rw_section::long_work>("readers_ignore_the_lock",
                                                                                      "readers take no lock", 50);
    EXPECT_EQ(first_failure(c, 20), "torn_read");
}

TEST(RwSuite, ALockThatLetsTwoWritersInFailsItsCell) {
    // No reads to tear: the table's own check (torn at rest, or writes lost) must catch it.
    const auto c = lab::rw_point<no_lock, lab::rw_section::long_work>("no_lock", "no lock at all", 0);
    const auto status = first_failure(c, 20);
    EXPECT_TRUE(status == "torn_table" || status == "wrong_count") << status;
}
