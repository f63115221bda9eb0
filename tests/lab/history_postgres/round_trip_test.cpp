// The PostgreSQL history against the SQLite file: every field of a run back as the file gives
// it, ids and the ways runs come back, and a failed append that stores nothing.
#include "history_postgres_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/history.hpp"

namespace contend_test {
namespace {

TEST_F(PostgresHistory, RoundTripsEveryFieldAsTheSqliteFileDoes) {
    const run_result run = sample_run("v0.1-3-gabcdef 'label' \"$1\" %s \u00e9");
    const std::string file = path("history.db");
    {
        history_store postgres(uri_);
        history_store sqlite(file);
        EXPECT_GT(postgres.append(run), 0);
        EXPECT_GT(sqlite.append(run), 0);
    }
    // Read back through fresh connections: what counts is what reached the database.
    const std::vector<run_result> from_postgres = history_store(uri_, history_access::read_only).runs();
    const std::vector<run_result> from_sqlite = history_store(file, history_access::read_only).runs();
    ASSERT_EQ(from_postgres.size(), 1u);
    ASSERT_EQ(from_sqlite.size(), 1u);
    {
        SCOPED_TRACE("PostgreSQL against the SQLite file");
        expect_same(from_postgres[0], from_sqlite[0]);
    }
    // Against what was appended: the same, but for the one documented difference, a -0.0
    // outside the samples comes back 0.0 (SQLite stores it so; PostgreSQL is made to agree).
    // Inside the samples, the text form keeps its sign.
    run_result expected = run;
    expected.cells[0].cpu_ns_per_op = 0.0;
    {
        SCOPED_TRACE("PostgreSQL against what was appended");
        expect_same(from_postgres[0], expected);
    }
    EXPECT_TRUE(std::signbit(from_postgres[0].cells[1].ns_per_op[1])) << "a sample's -0.0 keeps its sign";
    EXPECT_EQ(from_postgres[0].cells[1].ops_per_worker, std::numeric_limits<std::uint64_t>::max());
    EXPECT_TRUE(std::isnan(from_postgres[0].context.nanosleep_1ns_us));
    // The NaN is stored as SQL NULL, as in the file: a figure not measured.
    EXPECT_EQ(run_sql("SELECT count(*) FROM runs WHERE nanosleep_1ns_us IS NULL"), std::vector<std::string>{"1"});
}

TEST_F(PostgresHistory, IdsGrowAndRunsComeBackByIdCountAndLimit) {
    run_result empty = sample_run("no cells");
    empty.cells.clear();  // a run with no cells is still a run
    std::vector<std::int64_t> ids;
    {
        history_store store(uri_);
        EXPECT_EQ(store.schema_version_of_file(), current_schema);
        EXPECT_EQ(store.run_count(), 0u);
        EXPECT_TRUE(store.runs().empty());
        EXPECT_FALSE(store.run(1).has_value()) << "an empty history has no run 1";
        ids.push_back(store.append(sample_run("first")));
        ids.push_back(store.append(empty));
        ids.push_back(store.append(sample_run("third")));
    }
    EXPECT_LT(ids[0], ids[1]);
    EXPECT_LT(ids[1], ids[2]);

    const history_store store(uri_);
    EXPECT_EQ(store.run_count(), 3u);
    const auto all = store.stored_runs();
    ASSERT_EQ(all.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(all[i].id, ids[i]) << "oldest first, with their ids";
    expect_same(all[1].run, empty);

    const auto newest = store.stored_runs(2);
    ASSERT_EQ(newest.size(), 2u);
    EXPECT_EQ(newest[0].id, ids[1]);
    EXPECT_EQ(newest[1].id, ids[2]);
    EXPECT_EQ(store.runs(1).at(0).context.label, "third");
    EXPECT_EQ(store.runs(10).size(), 3u);

    const auto first = store.run(ids[0]);
    ASSERT_TRUE(first.has_value());
    run_result expected = sample_run("first");
    expected.cells[0].cpu_ns_per_op = 0.0;
    expect_same(*first, expected);
    EXPECT_FALSE(store.run(ids[2] + 1).has_value());
    EXPECT_FALSE(store.run(0).has_value());
}

TEST_F(PostgresHistory, AFailedAppendStoresNothing) {
    history_store store(uri_);
    const auto nothing_stored = [&] {
        EXPECT_EQ(store.run_count(), 0u);
        EXPECT_EQ(run_sql("SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM cells) +"
                          " (SELECT count(*) FROM metrics)"),
                  std::vector<std::string>{"0"});
    };
    run_result run = sample_run("bad");
    // The run row, the first cell and its metrics are sent before the bad parameter is met.
    run.cells[1].params = {{"path", "a/b"}};
    EXPECT_THROW(store.append(run), std::runtime_error);
    nothing_stored();

    run.cells[1].params = {};
    run.cells[1].metrics = {{"workers", 1.0}};  // a metric may not shadow a field
    EXPECT_THROW(store.append(run), std::runtime_error);
    nothing_stored();

    run = sample_run("bad");
    run.cells[2].detail = std::string("a NUL \0 inside", 14);  // PostgreSQL's text cannot hold it
    EXPECT_THROW(store.append(run), std::runtime_error);
    nothing_stored();

    run = sample_run("bad");
    run.cells[2].detail = "\xff\xfe not UTF-8";  // refused by the server, mid-transaction
    EXPECT_THROW(store.append(run), std::runtime_error);
    nothing_stored();

    const std::int64_t id = store.append(sample_run("good"));  // the store is still usable
    EXPECT_GT(id, 0);
    EXPECT_EQ(store.run_count(), 1u);
    EXPECT_EQ(store.runs().at(0).cells.size(), 3u);
}

// Issue item 20: a NUL in a cell's name cut the error message there (what() is a C string),
// leaving out why the run was refused.
TEST_F(PostgresHistory, ANulInACellsNameIsShownEscapedAndTheErrorSaysWhy) {
    history_store store(uri_);
    run_result run = sample_run("nul");
    run.cells[0].contender = std::string("mu\0tex", 6);
    try {
        store.append(run);
        ADD_FAILURE() << "stored a NUL";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("mu\\x00tex"), std::string::npos) << what;
        EXPECT_NE(what.find("cannot store"), std::string::npos) << what;
    }
    EXPECT_EQ(store.run_count(), 0u);
}

}  // namespace
}  // namespace contend_test
