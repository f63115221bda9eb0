#include "store/history.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "results/results.hpp"
#include "store/history_backend.hpp"
#include "store/interrupted.hpp"
#include "temp_dir.hpp"

namespace contend_test {
namespace {

namespace fs = std::filesystem;
using contend::lab::cell_result;
using contend::lab::history_store;
using contend::lab::machine_context;
using contend::lab::run_result;

constexpr int current_schema = contend::lab::history_detail::schema_version;

class History : public temp_dir_test {
protected:
    std::string db_path() const { return path("history.db"); }
};

// Every field distinct from its neighbours, so that two swapped columns cannot pass.
run_result sample_run(const std::string& label) {
    run_result run;
    machine_context& c = run.context;
    c.date = "2024-05-01T12:34:56Z";
    c.label = label;
    c.host_name = "bench-host";
    c.cpu_model = "AMD EPYC 9654 96-Core Processor";
    c.logical_cpus = 192;
    c.cpu_list = "0-1";
    c.kernel = "Linux 6.1.0-18-amd64";
    c.compiler = "GCC 12.2.0";
    c.build_flags = "Release -O2 -march=native";
    c.governor = "";  // not readable on this machine
    c.wait_backend = "futex";
    c.timer_slack_ns = 50000;
    c.nanosleep_1ns_us = 55.123456789012345;
    c.library_build_type = "release";
    c.run_status = "interrupted by SIGINT after 3 of 4 cells";
    c.busy_loops = 3;
    c.busy_nice = -2;
    c.one_cpu = 1;

    cell_result counter;
    counter.suite = "counter";
    counter.contender = "contend_mutex";
    counter.workers = 4;
    counter.ops_per_worker = 1'000'000;
    counter.repetitions = 3;
    counter.ns_per_op = {0.1, 1e-9, 12345.678901234567};
    counter.median_ns = 0.1;
    counter.p25_ns = 1e-9;
    counter.p75_ns = 12345.678901234567;
    counter.cpu_ns_per_op = 3.3333333333333335;
    counter.has_fairness = true;  // but not measured: NaN shares, and why
    counter.fairness_reason = "the shares were read 1.5 ms into a repetition";
    counter.affinity = "0-3";
    counter.operation = "increment";
    counter.metrics = {{"items_per_ms", 1234.5}, {"p99_us", std::numeric_limits<double>::quiet_NaN()}};
    run.cells.push_back(counter);

    cell_result hold;
    hold.suite = "hold";
    hold.contender = "std_mutex";
    hold.params = {{"cs_us", "20"}, {"gap", "1:2"}};  // ':' is allowed in a value
    hold.workers = 8;
    hold.ops_per_worker = std::numeric_limits<std::uint64_t>::max();  // above INT64_MAX
    hold.repetitions = 5;
    hold.ns_per_op = {std::numeric_limits<double>::denorm_min(), -0.0, 1e300, 2.0 / 3.0, 7};
    hold.median_ns = 2.0 / 3.0;
    hold.p25_ns = 0.5;
    hold.p75_ns = 1e300;
    hold.modal = true;
    hold.cpu_ns_per_op = 41.5;
    hold.min_share = 0.0625;
    hold.max_share = 0.1875;
    hold.has_fairness = true;
    hold.affinity = "";
    hold.oversubscribed = true;
    run.cells.push_back(hold);

    cell_result timed_out;
    timed_out.suite = "handoff";
    timed_out.contender = "spin_lock";
    timed_out.params = {{"probes", "8"}};
    timed_out.workers = 16;
    timed_out.status = "timed_out";
    timed_out.detail = "repetition 2 ran past 30 s; 'quoted' \"text\"; DROP TABLE runs; -- 20 µs";
    timed_out.ops_per_worker = 7;
    timed_out.repetitions = 1;
    timed_out.ns_per_op = {};
    timed_out.affinity = "0-15";
    run.cells.push_back(timed_out);
    return run;
}

void expect_same(const machine_context& a, const machine_context& b) {
    EXPECT_EQ(a.date, b.date);
    EXPECT_EQ(a.label, b.label);
    EXPECT_EQ(a.host_name, b.host_name);
    EXPECT_EQ(a.cpu_model, b.cpu_model);
    EXPECT_EQ(a.logical_cpus, b.logical_cpus);
    EXPECT_EQ(a.cpu_list, b.cpu_list);
    EXPECT_EQ(a.kernel, b.kernel);
    EXPECT_EQ(a.compiler, b.compiler);
    EXPECT_EQ(a.build_flags, b.build_flags);
    EXPECT_EQ(a.governor, b.governor);
    EXPECT_EQ(a.wait_backend, b.wait_backend);
    EXPECT_EQ(a.timer_slack_ns, b.timer_slack_ns);
    EXPECT_EQ(a.nanosleep_1ns_us, b.nanosleep_1ns_us);
    EXPECT_EQ(a.library_build_type, b.library_build_type);
    EXPECT_EQ(a.run_status, b.run_status);
    EXPECT_EQ(a.busy_loops, b.busy_loops);
    EXPECT_EQ(a.busy_nice, b.busy_nice);
    EXPECT_EQ(a.one_cpu, b.one_cpu);
}

// Bit-exact, so that a sample's sign of zero counts too; any NaN equals any NaN.
bool same_double(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

void expect_same(const cell_result& a, const cell_result& b) {
    SCOPED_TRACE(a.suite + "/" + a.contender);
    EXPECT_EQ(a.suite, b.suite);
    EXPECT_EQ(a.contender, b.contender);
    EXPECT_EQ(a.params, b.params);
    EXPECT_EQ(a.workers, b.workers);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.detail, b.detail);
    EXPECT_EQ(a.ops_per_worker, b.ops_per_worker);
    EXPECT_EQ(a.repetitions, b.repetitions);
    ASSERT_EQ(a.ns_per_op.size(), b.ns_per_op.size());
    for (std::size_t i = 0; i < a.ns_per_op.size(); ++i)
        EXPECT_TRUE(same_double(a.ns_per_op[i], b.ns_per_op[i]))
            << i << ": " << a.ns_per_op[i] << " vs " << b.ns_per_op[i];
    EXPECT_EQ(a.median_ns, b.median_ns);
    EXPECT_EQ(a.p25_ns, b.p25_ns);
    EXPECT_EQ(a.p75_ns, b.p75_ns);
    EXPECT_EQ(a.modal, b.modal);
    EXPECT_EQ(a.cpu_ns_per_op, b.cpu_ns_per_op);
    EXPECT_TRUE(same_double(a.min_share, b.min_share));
    EXPECT_TRUE(same_double(a.max_share, b.max_share));
    EXPECT_EQ(a.has_fairness, b.has_fairness);
    EXPECT_EQ(a.fairness_reason, b.fairness_reason);
    EXPECT_EQ(a.affinity, b.affinity);
    EXPECT_EQ(a.oversubscribed, b.oversubscribed);
    EXPECT_EQ(a.operation, b.operation);
    ASSERT_EQ(a.metrics.size(), b.metrics.size());
    for (std::size_t i = 0; i < a.metrics.size(); ++i) {
        EXPECT_EQ(a.metrics[i].first, b.metrics[i].first);
        EXPECT_TRUE(same_double(a.metrics[i].second, b.metrics[i].second)) << a.metrics[i].first;
    }
}

void expect_same(const run_result& a, const run_result& b) {
    expect_same(a.context, b.context);
    ASSERT_EQ(a.cells.size(), b.cells.size());
    for (std::size_t i = 0; i < a.cells.size(); ++i) expect_same(a.cells[i], b.cells[i]);
}

TEST_F(History, RoundTripsEveryField) {
    const run_result run = sample_run("v0.1-3-gabcdef");
    {
        history_store store(db_path());
        EXPECT_EQ(store.append(run), 1);
    }
    // Read back through a fresh connection: what counts is what reached the file.
    history_store store(db_path());
    const std::vector<run_result> back = store.runs();
    ASSERT_EQ(back.size(), 1u);
    expect_same(back[0], run);
    EXPECT_FALSE(back[0].cells[2].valid());
}

TEST_F(History, NaNAndInfinityComeBack) {
    run_result run = sample_run("nan");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    run.context.nanosleep_1ns_us = nan;
    run.cells[0].ns_per_op = {nan, inf, -inf};
    run.cells[0].median_ns = nan;
    run.cells[0].p75_ns = inf;
    run.cells[0].p25_ns = -inf;
    history_store store(db_path());
    store.append(run);
    const run_result back = store.runs().at(0);
    EXPECT_TRUE(std::isnan(back.context.nanosleep_1ns_us));
    EXPECT_TRUE(std::isnan(back.cells[0].median_ns));
    EXPECT_EQ(back.cells[0].p75_ns, inf);
    EXPECT_EQ(back.cells[0].p25_ns, -inf);
    ASSERT_EQ(back.cells[0].ns_per_op.size(), 3u);
    EXPECT_TRUE(std::isnan(back.cells[0].ns_per_op[0]));
    EXPECT_EQ(back.cells[0].ns_per_op[1], inf);
    EXPECT_EQ(back.cells[0].ns_per_op[2], -inf);
}

TEST_F(History, IdsCountAndLimit) {
    run_result second = sample_run("second");
    second.cells.clear();  // a run with no cells is still a run
    {
        history_store store(db_path());
        EXPECT_EQ(store.run_count(), 0u);
        EXPECT_TRUE(store.runs().empty());
        EXPECT_EQ(store.append(sample_run("first")), 1);
        EXPECT_EQ(store.append(second), 2);
    }
    history_store store(db_path());
    EXPECT_EQ(store.run_count(), 2u);

    const std::vector<run_result> newest = store.runs(1);
    ASSERT_EQ(newest.size(), 1u);
    expect_same(newest[0], second);

    const std::vector<run_result> all = store.runs();
    ASSERT_EQ(all.size(), 2u);
    expect_same(all[0], sample_run("first"));  // oldest first
    expect_same(all[1], second);
    EXPECT_EQ(store.runs(5).size(), 2u);
}

TEST_F(History, RunsComeBackByIdAndWithTheirIds) {
    history_store store(db_path());
    EXPECT_FALSE(store.run(1).has_value()) << "an empty history has no run 1";
    const std::int64_t first = store.append(sample_run("first"));
    const std::int64_t second = store.append(sample_run("second"));

    const std::vector<contend::lab::stored_run> stored = store.stored_runs();
    ASSERT_EQ(stored.size(), 2u);
    EXPECT_EQ(stored[0].id, first);
    EXPECT_EQ(stored[1].id, second);
    expect_same(stored[1].run, sample_run("second"));
    ASSERT_EQ(store.stored_runs(1).size(), 1u);
    EXPECT_EQ(store.stored_runs(1)[0].id, second);

    const auto by_id = store.run(first);
    ASSERT_TRUE(by_id.has_value());
    expect_same(*by_id, sample_run("first"));
    EXPECT_FALSE(store.run(second + 1).has_value());
    EXPECT_FALSE(store.run(0).has_value());
}

TEST_F(History, CreatesMissingDirectories) {
    const fs::path path = dir_ / "not" / "yet" / "history.db";
    ASSERT_FALSE(fs::exists(path.parent_path()));
    history_store store(path.string());
    EXPECT_TRUE(fs::is_regular_file(path));
    EXPECT_EQ(store.append(sample_run("x")), 1);
}

TEST_F(History, RefusesAFileThatIsNotADatabaseAndLeavesItAlone) {
    const std::string garbage = "not a database";
    {
        std::ofstream out(db_path(), std::ios::binary);
        out << garbage;
    }
    try {
        history_store store(db_path());
        ADD_FAILURE() << "opened a file that is not a database";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(db_path()), std::string::npos) << e.what();
    }
    EXPECT_EQ(read(db_path()), garbage);
    // No journal or other file left beside it either.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(History, AFailedAppendStoresNothing) {
    history_store store(db_path());
    run_result run = sample_run("bad");
    // The run row and the first cell are written before the bad parameter is met.
    run.cells[1].params = {{"path", "a/b"}};
    EXPECT_THROW(store.append(run), std::runtime_error);
    EXPECT_EQ(store.run_count(), 0u);

    run.cells[1].params = {{"k:ey", "v"}};
    EXPECT_THROW(store.append(run), std::runtime_error);
    EXPECT_EQ(store.run_count(), 0u);

    run.cells[1].params = {};
    run.cells[1].metrics = {{"workers", 1.0}};  // a metric may not shadow a field
    EXPECT_THROW(store.append(run), std::runtime_error);
    EXPECT_EQ(store.run_count(), 0u);

    EXPECT_EQ(store.append(sample_run("good")), 1);  // the store is still usable
    EXPECT_EQ(store.runs().at(0).cells.size(), 3u);
}

TEST_F(History, ProcessesSharingTheFileDoNotFailEachOther) {
    // Separate connections stand in for separate processes: each has its own locks.
    constexpr int appenders = 3, appends_each = 10;
    std::vector<std::int64_t> ids[appenders];
    std::string errors[appenders];
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < appenders; ++t)
            threads.emplace_back([&, t] {
                try {
                    history_store store(db_path());
                    for (int i = 0; i < appends_each; ++i) {
                        ids[t].push_back(store.append(sample_run("thread " + std::to_string(t))));
                        store.runs(2);  // reads in between, holding shared locks
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
    history_store store(db_path());
    EXPECT_EQ(store.run_count(), std::size_t{appenders * appends_each});
    for (const run_result& run : store.runs()) EXPECT_EQ(run.cells.size(), 3u);
}

// The schema as version 1 created it (the lab before the metrics and the version 2
// fields): a history written then must keep working.
constexpr const char* schema_v1 = R"sql(
CREATE TABLE runs (id INTEGER PRIMARY KEY, date TEXT NOT NULL, label TEXT NOT NULL, host_name TEXT NOT NULL,
    cpu_model TEXT NOT NULL, logical_cpus INTEGER NOT NULL, cpu_list TEXT NOT NULL, kernel TEXT NOT NULL,
    compiler TEXT NOT NULL, build_flags TEXT NOT NULL, governor TEXT NOT NULL, wait_backend TEXT NOT NULL,
    timer_slack_ns INTEGER NOT NULL, nanosleep_1ns_us REAL);
CREATE TABLE cells (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
    suite TEXT NOT NULL, contender TEXT NOT NULL, params TEXT NOT NULL, workers INTEGER NOT NULL,
    status TEXT NOT NULL, detail TEXT NOT NULL, ops_per_worker INTEGER NOT NULL, repetitions INTEGER NOT NULL,
    samples TEXT NOT NULL, median_ns REAL, p25_ns REAL, p75_ns REAL, cpu_ns_per_op REAL, min_share REAL,
    max_share REAL, has_fairness INTEGER NOT NULL, affinity TEXT NOT NULL, oversubscribed INTEGER NOT NULL);
CREATE INDEX cells_by_name ON cells(name);
CREATE INDEX cells_by_run ON cells(run_id);
INSERT INTO runs VALUES (1, '2026-11-29T00:00:00Z', 'v1', 'host', 'AMD EPYC', 2, '0-1', 'Linux 6', 'GCC 12',
    'Release -O2', '', 'futex', 50000, 90.5);
INSERT INTO cells VALUES (1, 1, 'hold/contend_mutex/cs_us:20/workers:4', 'hold', 'contend_mutex', 'cs_us:20', 4,
    'ok', '', 1000, 5, '6.5 6.25 7', 6.5, 6.25, 7, 7.25, 0.5, 1.5, 1, '', 1);
PRAGMA user_version = 1;
)sql";

void run_sql(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

void expect_version_one_run(const run_result& run) {
    EXPECT_EQ(run.context.label, "v1");
    EXPECT_EQ(run.context.run_status, "complete") << "a field added later reads as its default";
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "hold/contend_mutex/cs_us:20/workers:4");
    EXPECT_EQ(run.cells[0].ns_per_op, (std::vector<double>{6.5, 6.25, 7}));
    EXPECT_EQ(run.cells[0].operation, "op");
    EXPECT_TRUE(run.cells[0].metrics.empty());
}

TEST_F(History, AVersionOneHistoryIsReadAsItIsAndMigratedWhenWritten) {
    run_sql(db_path(), schema_v1);
    const std::string v1_bytes = read(db_path());
    {
        const history_store reader(db_path(), contend::lab::history_access::read_only);
        EXPECT_EQ(reader.schema_version_of_file(), 1);
        expect_version_one_run(reader.runs().at(0));
        EXPECT_THROW(const_cast<history_store&>(reader).append(sample_run("no")), std::runtime_error);
    }
    EXPECT_EQ(read(db_path()), v1_bytes) << "reading migrates nothing";

    history_store store(db_path());  // opened for writing: migrated
    EXPECT_EQ(store.schema_version_of_file(), current_schema);
    expect_version_one_run(store.runs().at(0));
    EXPECT_EQ(store.append(sample_run("after")), 2);
    expect_same(store.runs().at(1), sample_run("after"));
}

// What version 2 added to version 1, as its migration did: the columns of the fields whose
// since_schema is 2, and the metrics table.
constexpr const char* schema_v2_additions = R"sql(
ALTER TABLE runs ADD COLUMN version TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN library_build_type TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN run_status TEXT NOT NULL DEFAULT 'complete';
ALTER TABLE cells ADD COLUMN operation TEXT NOT NULL DEFAULT 'op';
CREATE TABLE metrics (cell_id INTEGER NOT NULL REFERENCES cells(id), name TEXT NOT NULL, value REAL,
    UNIQUE (cell_id, name));
CREATE INDEX metrics_by_cell ON metrics(cell_id);
PRAGMA user_version = 2;
)sql";

TEST_F(History, AVersionTwoHistoryGetsTheLaterColumnsWithTheirDefaults) {
    run_sql(db_path(), schema_v1);
    run_sql(db_path(), schema_v2_additions);
    {
        const history_store reader(db_path(), contend::lab::history_access::read_only);
        EXPECT_EQ(reader.schema_version_of_file(), 2);
        const auto run = reader.runs().at(0);
        expect_version_one_run(run);
        EXPECT_EQ(run.context.busy_loops, 0) << "a run of before the co-tenant ran beside none";
        EXPECT_EQ(run.context.one_cpu, -1);
    }
    history_store store(db_path());
    EXPECT_EQ(store.schema_version_of_file(), current_schema);
    const auto old_run = store.runs().at(0);
    EXPECT_FALSE(old_run.cells.at(0).modal) << "a cell of before the flag reads as not modal";
    EXPECT_EQ(old_run.cells.at(0).fairness_reason, "") << "nor with a reason for its fairness";
    EXPECT_EQ(old_run.context.busy_loops, 0);
    EXPECT_EQ(old_run.context.busy_nice, 0);
    EXPECT_EQ(old_run.context.one_cpu, -1) << "the column's default: not restricted";
    expect_same(store.run(store.append(sample_run("after"))).value(), sample_run("after"));
}

TEST_F(History, ADatabaseOfAnotherSchemaIsRefusedAndLeftUntouched) {
    run_sql(db_path(), "CREATE TABLE runs (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO runs (note) VALUES ('x');");
    const std::string before = read(db_path());
    for (const auto access : {contend::lab::history_access::read_write, contend::lab::history_access::read_only}) {
        try {
            history_store store(db_path(), access);
            ADD_FAILURE() << "opened a foreign database";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("not a contend history"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(history_store::check_appendable(db_path()), std::runtime_error);
    EXPECT_EQ(read(db_path()), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

    // The same version number as ours does not make a database ours.
    fs::remove(db_path());
    run_sql(db_path(), "CREATE TABLE runs (id INTEGER PRIMARY KEY); PRAGMA user_version = 1;");
    EXPECT_THROW(history_store{db_path()}, std::runtime_error);
}

TEST_F(History, ReadOnlyRefusesAMissingOrEmptyFileAndCreatesNothing) {
    EXPECT_THROW(history_store(db_path(), contend::lab::history_access::read_only), std::runtime_error);
    EXPECT_FALSE(fs::exists(db_path()));
    std::ofstream(db_path()).close();
    EXPECT_THROW(history_store(db_path(), contend::lab::history_access::read_only), std::runtime_error);
    EXPECT_EQ(fs::file_size(db_path()), 0u);
    EXPECT_NO_THROW(history_store::check_appendable(db_path())) << "an empty file may become a history";
    EXPECT_NO_THROW(history_store::check_appendable((dir_ / "missing.db").string()));
    EXPECT_EQ(fs::file_size(db_path()), 0u);
}

// A writer killed in the middle of its transaction (kill -9, a second signal, a crash on a
// full disk) leaves a hot journal: the next open, even a read-only one, rolls it back.
TEST_F(History, AJournalLeftByAKilledWriterIsRolledBackByTheNextOpenEvenReadOnly) {
    history_store(db_path()).append(sample_run("kept"));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // A one-page cache: the changed pages reach the file before the commit, as a big
        // append's do, so the journal holds what is needed to undo them.
        sqlite3* db = nullptr;
        sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
        sqlite3_exec(db,
                     "PRAGMA cache_size = 1; BEGIN IMMEDIATE; INSERT INTO runs (label) VALUES ('half');"
                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
                     " INSERT INTO cells (run_id, name) SELECT 2, 'cell ' || i FROM n;",
                     nullptr, nullptr, nullptr);
        ::raise(SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    ASSERT_TRUE(fs::exists(db_path() + "-journal")) << "no journal left: nothing tested";
    // A reader that may not write the file or its folder cannot roll it back: it says what
    // happened and what to do. (Another user, as root, which may write anything.)
    int message_pipe[2];
    ASSERT_EQ(::pipe(message_pipe), 0);
    const pid_t reader = ::fork();
    ASSERT_GE(reader, 0);
    if (reader == 0) {
        ::close(message_pipe[0]);
        const bool root = ::geteuid() == 0;
        const bool dropped = !root || (::setgid(65534) == 0 && ::setuid(65534) == 0);
        std::error_code ignored;
        if (!root) fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove, ignored);
        std::string message = dropped ? "opened" : "could not drop root";
        try {
            if (dropped) history_store(db_path(), contend::lab::history_access::read_only);
        } catch (const std::exception& e) {
            message = e.what();
        }
        if (!root) fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add, ignored);
        (void)!::write(message_pipe[1], message.data(), message.size());
        ::_exit(0);
    }
    ::close(message_pipe[1]);
    std::string message;
    char buffer[4096];
    for (ssize_t n; (n = ::read(message_pipe[0], buffer, sizeof buffer)) > 0;) message.append(buffer, n);
    ::close(message_pipe[0]);
    ASSERT_EQ(::waitpid(reader, &status, 0), reader);
    EXPECT_NE(message.find("cut short"), std::string::npos) << message;
    EXPECT_NE(message.find(db_path() + "-journal"), std::string::npos) << message;
    EXPECT_NE(message.find("may write the file and its folder"), std::string::npos) << message;
    ASSERT_TRUE(fs::exists(db_path() + "-journal"));
    {
        const history_store reader(db_path(), contend::lab::history_access::read_only);
        EXPECT_EQ(reader.run_count(), 1u);
        EXPECT_EQ(reader.runs().front().context.label, "kept");
    }
    EXPECT_FALSE(fs::exists(db_path() + "-journal"));
    history_store writer(db_path());
    EXPECT_EQ(writer.append(sample_run("next")), 2);
}

TEST_F(History, AnAppendAskedToStopStoresNothingAndSaysWhy) {
    history_store store(db_path());
    store.append(sample_run("first"));
    std::atomic<int> stop{0};
    EXPECT_EQ(store.append(sample_run("second"), &stop), 2) << "no signal: stored";
    stop = SIGTERM;
    try {
        store.append(sample_run("third"), &stop);
        ADD_FAILURE() << "stored despite the signal";
    } catch (const contend::lab::interrupted& e) {
        EXPECT_EQ(e.signal(), SIGTERM);
        EXPECT_NE(std::string(e.what()).find("SIGTERM"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("nothing was stored"), std::string::npos) << e.what();
    }
    EXPECT_EQ(store.run_count(), 2u);
}

// A history of `runs` runs of `cells` cells each, written through SQLite in one transaction
// (fast, however big) after one run stored through the store gave it the schema.
void grow_history(const std::string& file, int runs, int cells) {
    { history_store(file).append(sample_run("schema")); }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    const std::string sql =
        "BEGIN;"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
        std::to_string(runs) +
        ") INSERT INTO runs (date, label, cpu_model, run_status) SELECT '2026-01-01', 'run ' || i, 'cpu', 'complete' "
        "FROM n;"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
        std::to_string(cells) +
        ") INSERT INTO cells (run_id, name, suite, contender, workers, median_ns) SELECT r.id, 's/c/' || n.i, 's', "
        "'c', n.i, 10.5 FROM runs r, n WHERE r.label != 'schema';"
        "COMMIT;";
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

// Issue item 11: 8 KiB overwritten inside a history made every read fail ("malformed"), yet
// an append still reported success, storing a run no read could bring back.
TEST_F(History, AnAppendToADamagedHistoryIsRefusedAndStoresNothing) {
    grow_history(db_path(), 200, 50);
    const auto size = fs::file_size(db_path());
    ASSERT_GT(size, 256u * 1024);
    {
        std::fstream file(db_path(), std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(static_cast<std::streamoff>(size / 2));
        const std::string junk(8192, '\x5a');
        file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    ASSERT_THROW(history_store(db_path(), contend::lab::history_access::read_only).runs(), std::runtime_error)
        << "the damage was not where a read meets it";
    const std::string before = read(db_path());
    try {
        history_store::check_appendable(db_path());
        ADD_FAILURE() << "check_appendable passed a damaged history";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(db_path()), std::string::npos) << e.what();
    }
    try {
        history_store(db_path()).append(sample_run("lost"));
        ADD_FAILURE() << "appended to a damaged history";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read(db_path()), before) << "the damaged file was changed";
}

// Issue item 10: a reader holding the file (here for longer than the 5 s an append used to
// wait) made a concurrent append fail with "database is locked", the run lost. The append
// now waits for it.
TEST_F(History, AnAppendWaitsForAReaderThatHoldsTheFileForLong) {
    history_store(db_path()).append(sample_run("first"));
    sqlite3* reader = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &reader), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM cells;", nullptr, nullptr, nullptr), SQLITE_OK);
    std::atomic<bool> appended{false};
    std::string error;
    std::thread writer([&] {
        try {
            history_store(db_path()).append(sample_run("second"));
            appended = true;
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    std::this_thread::sleep_for(std::chrono::seconds(6));  // longer than the old 5 s limit
    sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(reader);
    writer.join();
    EXPECT_TRUE(appended) << error;
    EXPECT_EQ(history_store(db_path()).run_count(), 2u);
}

// Issue items 10 and 13: a wait for a lock another process holds ends at a stop signal,
// storing nothing (it used to wait on, whatever the signal).
TEST_F(History, AStopSignalEndsTheWaitForTheLockAndStoresNothing) {
    history_store(db_path()).append(sample_run("first"));
    std::atomic<int> stop{0};
    history_store store(db_path(), contend::lab::history_access::read_write, &stop);
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &holder), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    std::atomic<bool> done{false};
    int signal = 0;
    std::string what;
    std::thread writer([&] {
        try {
            store.append(sample_run("second"));
        } catch (const contend::lab::interrupted& e) {
            signal = e.signal();
            what = e.what();
        } catch (const std::exception& e) {
            what = e.what();
        }
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = SIGTERM;
    for (int i = 0; i < 3000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const bool ended = done.load();
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    writer.join();
    EXPECT_TRUE(ended) << "the append went on waiting after the signal";
    EXPECT_EQ(signal, SIGTERM) << what;
    EXPECT_NE(what.find("nothing was stored"), std::string::npos) << what;
    EXPECT_EQ(history_store(db_path()).run_count(), 1u);
}

// Issue item 14: a read of a big history went on to its end after a stop signal.
TEST_F(History, AStopSignalEndsALongRead) {
    grow_history(db_path(), 500, 20);
    std::atomic<int> stop{SIGINT};
    const history_store store(db_path(), contend::lab::history_access::read_only, &stop);
    try {
        (void)store.runs();
        ADD_FAILURE() << "read to the end despite the signal";
    } catch (const contend::lab::interrupted& e) {
        EXPECT_EQ(e.signal(), SIGINT);
    }
}

// Issue item 15: SQLite's open of a FIFO blocks until a writer comes, where no signal stops it.
TEST_F(History, SomethingOtherThanARegularFileIsRefusedBeforeSqliteOpensIt) {
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    fs::create_directory(path("folder"));
    for (const std::string name : {"fifo", "folder"}) {
        SCOPED_TRACE(name);
        for (const auto access : {contend::lab::history_access::read_only, contend::lab::history_access::read_write}) {
            auto opening = std::async(std::launch::async, [&]() -> std::string {
                try {
                    history_store store(path(name), access);
                } catch (const std::runtime_error& e) {
                    return e.what();
                }
                return "opened";
            });
            if (opening.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
                // Blocked in the open of the FIFO: a writer lets it go, and the test fails.
                const int fd = ::open(path(name).c_str(), O_WRONLY | O_NONBLOCK);
                if (fd >= 0) ::close(fd);
                ADD_FAILURE() << "the open blocked";
            }
            const std::string what = opening.get();
            EXPECT_NE(what.find("not a regular file"), std::string::npos) << what;
        }
        EXPECT_THROW(history_store::check_appendable(path(name)), std::runtime_error);
    }
}

// Issue item 18: an output onto the journal (or WAL) of the history: SQLite deletes it.
TEST(HistoryFiles, TheHistoryIsItsFileAndTheFilesSqliteKeepsBesideIt) {
    const auto files = history_store::files_of("h.db");
    for (const std::string name : {"h.db", "h.db-journal", "h.db-wal", "h.db-shm"})
        EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name;
    EXPECT_TRUE(history_store::files_of("postgresql://h/db").empty());
}

// Issue item 12: every secret a libpq URI can carry is masked, in the URI and in a message.
TEST(HistoryUriSecrets, SslPasswordAndATailCutAtARawAtSignAreMasked) {
    EXPECT_EQ(history_store::printable("postgresql://h/db?sslpassword=keypass&sslmode=verify-full"),
              "postgresql://h/db?sslpassword=***&sslmode=verify-full");
    EXPECT_EQ(history_store::printable("postgresql://h/db?SSLPassword=keypass"), "postgresql://h/db?SSLPassword=***");
    EXPECT_EQ(history_store::printable("postgresql://h/db?ssl%70assword=keypass"),
              "postgresql://h/db?ssl%70assword=***");
    EXPECT_EQ(history_store::printable("postgresql://u:pa@ssword@h/db"), "postgresql://u:***@h/db");
    // libpq reads "u:pa@ssword@h" as the password "pa" and the host "ssword@h", and says so.
    const std::string uri = "postgresql://u:pa@ssword@h/db";
    const std::string message =
        contend::lab::history_detail::without_passwords("could not translate host name \"ssword@h\" to address", uri);
    EXPECT_EQ(message.find("ssword"), std::string::npos) << message;
    const std::string ssl = "postgresql://h/db?sslpassword=keypass1";
    EXPECT_EQ(contend::lab::history_detail::without_passwords("bad key passphrase \"keypass1\"", ssl).find("keypass1"),
              std::string::npos);
}

TEST(HistoryLocation, EmptyInMemoryAndUriFilenamesAreRefusedAndPlainPathsPass) {
    for (const char* bad : {"", ":memory:", "file::memory:", "file:h.db?mode=memory", "file:h.db", "postgresql:/h/db",
                            "POSTGRES:h", "postgressql://h/db", "pg://h/db", "mysql://h/db", "sqlite:///h.db"}) {
        EXPECT_THROW(history_store::check_location(bad), std::invalid_argument) << bad;
        EXPECT_THROW(history_store(bad, contend::lab::history_access::read_only), std::runtime_error) << bad;
        EXPECT_THROW(history_store::check_appendable(bad), std::runtime_error) << bad;
    }
    for (const char* good :
         {"h.db", "./:memory:", "./file:h.db", "/tmp/file:h.db", "dir/postgresql:/x", ".contend/history.db", "a:b.db",
          "postgresql://h/db", "POSTGRESQL://h/db", "Postgres:///db?host=/tmp"})
        EXPECT_NO_THROW(history_store::check_location(good)) << good;
    EXPECT_TRUE(history_store::is_database_uri("PostgreSQL://h/db"));
    EXPECT_TRUE(history_store::is_database_uri("POSTGRES://h/db"));
    EXPECT_FALSE(history_store::is_database_uri("postgresql:/h/db"));
}

}  // namespace
}  // namespace contend_test
