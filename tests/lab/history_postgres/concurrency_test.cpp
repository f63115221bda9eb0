// Appends at once on one PostgreSQL history: none lost, one queued behind another waits its
// turn past the lock timeout, and a stop signal ends the wait storing nothing.
#include "history_postgres_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/history.hpp"
#include "store/interrupted.hpp"

namespace contend_test {
namespace {

TEST_F(PostgresHistory, ConcurrentAppendersLoseNothing) {
    // Separate stores are separate connections, separate server processes: what two
    // `contend bench` processes would be. Both open the new database at once, so both try
    // to create the schema too.
    constexpr int appenders = 2, appends_each = 20;
    std::vector<std::int64_t> ids[appenders];
    std::string errors[appenders];
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < appenders; ++t)
            threads.emplace_back([&, t] {
                try {
                    history_store store(uri_);
                    for (int i = 0; i < appends_each; ++i) {
                        ids[t].push_back(store.append(sample_run("appender " + std::to_string(t))));
                        store.runs(2);  // reads in between
                    }
                } catch (const std::exception& e) {
                    errors[t] = e.what();
                }
            });
        for (std::thread& thread : threads) thread.join();
    }
    for (const std::string& error : errors) EXPECT_EQ(error, "");
    std::set<std::int64_t> distinct;
    for (const auto& list : ids) distinct.insert(list.begin(), list.end());
    EXPECT_EQ(distinct.size(), std::size_t{appenders * appends_each});
    const history_store store(uri_, history_access::read_only);
    EXPECT_EQ(store.run_count(), std::size_t{appenders * appends_each});
    int per_appender[appenders] = {};
    for (const run_result& run : store.runs()) {
        EXPECT_EQ(run.cells.size(), 3u);
        EXPECT_EQ(run.cells.at(0).metrics.size(), 4u);
        for (int t = 0; t < appenders; ++t) per_appender[t] += run.context.label == "appender " + std::to_string(t);
    }
    for (int t = 0; t < appenders; ++t) EXPECT_EQ(per_appender[t], appends_each);
}

// Whether some session waits, not yet granted, for a lock on the runs table of `uri`'s
// database: an append queued behind another.
bool one_waits_for_runs(const std::string& uri) {
    const connection c = connect(uri);
    return sql(c.get(), "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'runs'::regclass").at(0) != "0";
}

// Waits (60 s at most: a bound, not a measure) until a session (an append, a read) queues
// for the runs table.
bool wait_until_one_waits_for_runs(const std::string& uri) {
    for (int i = 0; i < 600; ++i) {
        if (one_waits_for_runs(uri)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

// An append queued behind another waits its turn however long the other takes: it gave up
// after lock_timeout (5 s), so a fleet appending large runs at once lost all but one.
TEST_F(PostgresHistory, AnAppendWaitsItsTurnBehindAnotherThatHoldsTheRunsTableLongerThanTheLockTimeout) {
    { const history_store create(uri_); }
    const connection holder = connect(uri_);
    sql(holder.get(), "BEGIN; LOCK TABLE runs IN EXCLUSIVE MODE");  // what a long append holds
    auto append = std::async(std::launch::async, [&]() -> std::string {
        try {
            history_store store(uri_);
            store.append(sample_run("queued"));
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    });
    ASSERT_TRUE(wait_until_one_waits_for_runs(uri_)) << "the append never queued for the runs table";
    // Held past the 5 s lock_timeout a statement of the session gets: the append must wait on.
    std::this_thread::sleep_for(std::chrono::seconds(7));
    EXPECT_NE(append.wait_for(std::chrono::seconds(0)), std::future_status::ready)
        << "gave up while another append held the table: " << append.get();
    sql(holder.get(), "COMMIT");
    ASSERT_EQ(append.wait_for(std::chrono::seconds(120)), std::future_status::ready) << "still waiting after 120 s";
    EXPECT_EQ(append.get(), "");
    EXPECT_EQ(history_store(uri_, history_access::read_only).run_count(), 1u);
}

// A stop signal ends the wait at once (the queued statement is cancelled), storing nothing.
TEST_F(PostgresHistory, AnAppendWaitingForTheRunsTableStopsOnASignalAndStoresNothing) {
    { const history_store create(uri_); }
    const connection holder = connect(uri_);
    sql(holder.get(), "BEGIN; LOCK TABLE runs IN EXCLUSIVE MODE");
    std::atomic<int> stop{0};
    auto append = std::async(std::launch::async, [&]() -> std::string {
        try {
            history_store store(uri_);
            store.append(sample_run("stopped"), &stop);
        } catch (const contend::lab::interrupted& e) {
            return std::string("interrupted: ") + e.what();
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    });
    ASSERT_TRUE(wait_until_one_waits_for_runs(uri_)) << "the append never queued for the runs table";
    stop.store(SIGTERM);
    ASSERT_EQ(append.wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "the wait did not end on the stop flag";
    const std::string outcome = append.get();
    EXPECT_EQ(outcome.rfind("interrupted: ", 0), 0u) << outcome;
    EXPECT_NE(outcome.find("nothing was stored"), std::string::npos) << outcome;
    sql(holder.get(), "COMMIT");
    EXPECT_EQ(history_store(uri_, history_access::read_only).run_count(), 0u);
    EXPECT_FALSE(one_waits_for_runs(uri_));
}

// Issue 44, item 14 (PostgreSQL): a read went on to its end, or to its lock timeout, whatever
// the stop flag said. Held up here by a lock another session holds (as a long read is by the
// rows it reads), it ends at the signal with interrupted, not 5 s later with an error.
TEST_F(PostgresHistory, AReadWaitingForTheRunsTableStopsOnASignal) {
    {
        history_store create(uri_);
        create.append(sample_run("first"));
    }
    const connection holder = connect(uri_);
    sql(holder.get(), "BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE");
    std::atomic<int> stop{0};
    auto read = std::async(std::launch::async, [&]() -> std::string {
        try {
            const history_store store(uri_, history_access::read_only, &stop);
            return std::to_string(store.runs().size()) + " runs read";
        } catch (const contend::lab::interrupted& e) {
            return std::string("interrupted: ") + e.what();
        } catch (const std::exception& e) {
            return e.what();
        }
    });
    const bool queued = wait_until_one_waits_for_runs(uri_);
    stop.store(SIGINT);
    const bool ended = read.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    sql(holder.get(), "COMMIT");
    ASSERT_TRUE(queued) << "the read never queued for the runs table: " << read.get();
    ASSERT_TRUE(ended) << "the read did not end on the stop flag";
    const std::string outcome = read.get();
    EXPECT_EQ(outcome.rfind("interrupted: ", 0), 0u) << outcome;
}

}  // namespace
}  // namespace contend_test
