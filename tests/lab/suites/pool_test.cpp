// The pool suite: its rows, every contender's exact counts and metrics, whole bursts, and a
// pool that loses or repeats an item failing the check (without waiting past the deadline).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "measure/harness.hpp"
#include "suites/pool_suite.hpp"
#include "suites/pool_workload.hpp"
#include "suites/suites.hpp"
#include "suites_support.hpp"

using namespace contend_test::suites;

// --- the pool suite ---------------------------------------------------------------------------

namespace {
// The row a cell of `c` at 2 workers gets: the name tools outside the project read.
std::string pool_row(const lab::contender& c) {
    lab::cell_result cell;
    cell.suite = "pool";
    cell.contender = c.name;
    cell.params = c.params;
    cell.workers = 2;
    return cell.name();
}
}  // namespace

TEST(PoolSuite, ListsEveryPoolInEveryModeUnderTheDesignRowNames) {
    const auto* s = lab::find_suite("pool");
    ASSERT_NE(s, nullptr);
    std::vector<std::string> pools = {"contend", "mutex_pool", "no_pool"};
    if (peer_built_in("tbb")) pools.push_back("tbb");
    if (peer_built_in("asio")) pools.push_back("asio");
    std::set<std::string> rows;
    for (const auto& c : s->contenders) {
        EXPECT_NE(std::find(pools.begin(), pools.end(), c.name), pools.end()) << c.name;
        EXPECT_FALSE(c.is_lock) << c.id();
        EXPECT_EQ(c.operation, "item") << c.id();
        rows.insert(pool_row(c));
    }
    const std::vector<std::string> modes = {"sustained", "burst:1", "burst:4", "burst:16", "burst:64", "burst:256"};
    std::size_t expected = 1;  // no_pool's one row
    for (const auto& pool : pools) {
        if (pool == "no_pool") continue;
        // mutex_pool has one queue: its local rows would run the same code again.
        const std::vector<std::string> queues =
            pool == "mutex_pool" ? std::vector<std::string>{"global"} : std::vector<std::string>{"global", "local"};
        for (const auto& queue : queues)
            for (const auto& mode : modes) {
                const std::string row = "pool/" + pool + "/queue:" + queue + "/mode:" + mode + "/workers:2";
                EXPECT_EQ(rows.count(row), 1u) << row;
                ++expected;
            }
    }
    EXPECT_EQ(rows.count("pool/no_pool/queue:none/mode:sustained/workers:2"), 1u);
    EXPECT_EQ(rows.count("pool/mutex_pool/queue:local/mode:sustained/workers:2"), 0u);
    // And contend's plainest row again, beside a nice-19 busy loop; the sustained rows beside a
    // nice-0 one, with the mutex pool's (cotenant_test.cpp).
    EXPECT_EQ(rows.count("pool/contend/queue:global/mode:sustained/busy_loops:1/busy_nice:19/workers:2"), 1u);
    for (const char* row : {"pool/contend/queue:global/mode:sustained", "pool/contend/queue:local/mode:sustained",
                            "pool/mutex_pool/queue:global/mode:sustained"})
        EXPECT_EQ(rows.count(std::string(row) + "/busy_loops:1/busy_nice:0/workers:2"), 1u) << row;
    EXPECT_EQ(s->contenders.size(), expected + 1 + 3);
    EXPECT_EQ(s->default_workers, std::vector<std::int32_t>{static_cast<std::int32_t>(lab::allowed_cpus().size())})
        << "one pool thread per CPU this process may use, as .NET's benchmark runs";
}

TEST(PoolSuite, EveryContenderRunsItsItemsWithExactCountsAndReportsItemsPerMs) {
    const auto* s = lab::find_suite("pool");
    ASSERT_NE(s, nullptr);
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell_in_process(c, "pool", 2, quick_pool_options());
        ASSERT_TRUE(cell.valid()) << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_GT(cell.metric("items_per_ms"), 0) << c.id();
        EXPECT_GT(cell.metric("cpu_ns_per_item"), 0) << c.id();
        EXPECT_GE(cell.metric("threads_seen"), 1) << c.id();
        EXPECT_LE(cell.metric("threads_seen"), 2) << c.id() << ": the pool must run exactly its 2 threads";
        EXPECT_FALSE(cell.has_fairness) << c.id();
        // The row's CPU per operation is the whole process's (the pool's workers are not
        // the harness's threads), the same figure as the metric.
        EXPECT_DOUBLE_EQ(cell.cpu_ns_per_op, cell.metric("cpu_ns_per_item")) << c.id();
        // A burst row says how long its bursts waited for their first item to start (the
        // wake-up it pays); a sustained row has no bursts.
        const bool burst = c.id().find("mode:burst:") != std::string::npos;
        if (burst) EXPECT_GT(cell.metric("burst_start_us"), 0) << c.id();
        else EXPECT_TRUE(std::isnan(cell.metric("burst_start_us"))) << c.id();
    }
}

TEST(PoolSuite, ABurstRepetitionRunsWholeBurstsAndSustainedAtLeastTheItemsAsked) {
    for (const auto& c : lab::find_suite("pool")->contenders) {
        if (c.name != "contend" && c.name != "mutex_pool") continue;
        auto w = c.make();
        lab::progress_counters progress(2);
        std::atomic<bool> stop{false};
        for (int rep = 0; rep < 2; ++rep) {  // the second on a pool that ran the first
            w->reset();
            const std::uint64_t done = w->run(0, 100, stop, progress);  // 200 items asked at 2 threads
            EXPECT_EQ(w->run(1, 100, stop, progress), 0u) << "harness worker 1 is not a producer";
            const auto& mode = c.params.at(1).second;
            if (mode == "sustained") {
                EXPECT_GE(done, 200u) << c.id();
            } else {
                const std::uint64_t burst = 2 * std::stoull(mode.substr(mode.find(':') + 1));
                EXPECT_EQ(done, (200 + burst - 1) / burst * burst) << c.id();
            }
            EXPECT_TRUE(w->check({done, 0}).ok()) << c.id() << ": " << w->check({done, 0}).detail;
            EXPECT_EQ(w->check({done + 1, 0}).status, "wrong_count") << c.id();
        }
    }
}

namespace {
// The suite's own mutex_pool at one thread, made to fail: once armed, it loses the next item
// posted or queues it twice. The suite's checks must catch it, and the producer's waits must
// end when the harness says stop. Armed after the first run() (which builds the pool and
// warms it up).
class faulty_pool {
public:
    enum class fault { none, lose, twice };
    static inline std::atomic<fault> armed{fault::none};
    explicit faulty_pool(int) : pool_(1) {}
    template <class F>
    void post(F&& f, lab::pool_bench::queue_kind queue, bool local) {
        const fault now = armed.exchange(fault::none);
        if (now == fault::lose) return;
        if (now == fault::twice) pool_.post(f, queue, local);
        pool_.post(std::forward<F>(f), queue, local);
    }

private:
    lab::mutex_pool pool_;
};

using faulty_workload = lab::pool_bench::pool_throughput<faulty_pool>;
}  // namespace

TEST(PoolSuite, ALostItemEndsTheRepetitionAtTheDeadlineAndFailsTheCheck) {
    for (const std::uint32_t burst : {0u, 4u}) {
        faulty_workload w(lab::pool_bench::queue_kind::global, burst);
        std::uint64_t done = 0;
        timed_repetition(w, 100, std::chrono::seconds(20), done);  // builds and warms up the pool
        ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
        faulty_pool::armed = faulty_pool::fault::lose;
        const double seconds = timed_repetition(w, 100, std::chrono::milliseconds(200), done);
        EXPECT_GE(seconds, 0.15) << "burst " << burst << ": the producer waited for the lost item";
        EXPECT_LT(seconds, 10) << "burst " << burst;
        const auto verdict = w.check({done});
        EXPECT_FALSE(verdict.ok()) << "burst " << burst << ": a lost item must fail the check";
    }
}

TEST(PoolSuite, AnItemRunTwiceFailsTheCountAtOnce) {
    faulty_workload w(lab::pool_bench::queue_kind::global, 0);
    std::uint64_t done = 0;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_pool::armed = faulty_pool::fault::twice;
    const double seconds = timed_repetition(w, 100, std::chrono::seconds(20), done);
    EXPECT_LT(seconds, 10) << "more items ran than were posted: no need to wait for the deadline";
    // items_lost, or wrong_count when the copy was still running as the producer returned.
    EXPECT_FALSE(w.check({done}).ok()) << "an item that ran twice must fail the check";
}
