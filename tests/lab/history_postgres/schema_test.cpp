// The PostgreSQL history's schema versions: older histories read as they are and migrated
// when written; another schema, a newer version or no history at all refused and left as it was.
#include "history_postgres_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/history.hpp"

namespace contend_test {
namespace {

// The schema as version 1 had it, written by hand (not generated from the field tables,
// whose since_schema is what is under test): no metrics table, none of the version 2 columns.
constexpr const char* schema_v1 = R"sql(
CREATE TABLE contend_schema (version integer NOT NULL);
INSERT INTO contend_schema VALUES (1);
CREATE TABLE runs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, date text NOT NULL, label text NOT NULL,
    host_name text NOT NULL, cpu_model text NOT NULL, logical_cpus integer NOT NULL, cpu_list text NOT NULL,
    kernel text NOT NULL, compiler text NOT NULL, build_flags text NOT NULL, governor text NOT NULL,
    wait_backend text NOT NULL, timer_slack_ns bigint NOT NULL, nanosleep_1ns_us double precision);
CREATE TABLE cells (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id bigint NOT NULL REFERENCES runs(id),
    name text NOT NULL, suite text NOT NULL, contender text NOT NULL, params text NOT NULL, workers integer NOT NULL,
    status text NOT NULL, detail text NOT NULL, ops_per_worker bigint NOT NULL, repetitions integer NOT NULL,
    samples text NOT NULL, median_ns double precision, p25_ns double precision, p75_ns double precision,
    cpu_ns_per_op double precision, min_share double precision, max_share double precision,
    has_fairness boolean NOT NULL, affinity text NOT NULL, oversubscribed boolean NOT NULL);
CREATE INDEX cells_by_name ON cells(name);
CREATE INDEX cells_by_run ON cells(run_id);
INSERT INTO runs (date, label, host_name, cpu_model, logical_cpus, cpu_list, kernel, compiler, build_flags,
    governor, wait_backend, timer_slack_ns, nanosleep_1ns_us)
    VALUES ('2026-11-29T00:00:00Z', 'v1', 'host', 'AMD EPYC', 2, '0-1', 'Linux 6', 'GCC 12', 'Release -O2', '',
    'futex', 50000, 90.5);
INSERT INTO cells (run_id, name, suite, contender, params, workers, status, detail, ops_per_worker, repetitions,
    samples, median_ns, p25_ns, p75_ns, cpu_ns_per_op, min_share, max_share, has_fairness, affinity, oversubscribed)
    VALUES (1, 'hold/contend_mutex/cs_us:20/workers:4', 'hold', 'contend_mutex', 'cs_us:20', 4, 'ok', '', 1000, 5,
    '6.5 6.25 7', 6.5, 6.25, 7, 7.25, 0.5, NULL, true, '', true);
)sql";

void expect_version_one_run(const run_result& run) {
    EXPECT_EQ(run.context.label, "v1");
    EXPECT_EQ(run.context.nanosleep_1ns_us, 90.5);
    EXPECT_EQ(run.context.run_status, "complete") << "a field added later reads as its default";
    EXPECT_EQ(run.context.version, "");
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "hold/contend_mutex/cs_us:20/workers:4");
    EXPECT_EQ(run.cells[0].ns_per_op, (std::vector<double>{6.5, 6.25, 7}));
    EXPECT_TRUE(std::isnan(run.cells[0].max_share));
    EXPECT_TRUE(run.cells[0].has_fairness);
    EXPECT_EQ(run.cells[0].operation, "op");
    EXPECT_TRUE(run.cells[0].metrics.empty());
}

TEST_F(PostgresHistory, AVersionOneHistoryIsReadAsItIsAndMigratedWhenWritten) {
    run_sql(schema_v1);
    const std::string v1 = fingerprint(uri_);
    {
        history_store reader(uri_, history_access::read_only);
        EXPECT_EQ(reader.schema_version_of_file(), 1);
        expect_version_one_run(reader.runs().at(0));
        expect_version_one_run(*reader.run(1));
        EXPECT_EQ(reader.run_count(), 1u);
        EXPECT_THROW(reader.append(sample_run("no")), std::runtime_error);
    }
    EXPECT_NO_THROW(history_store::check_appendable(uri_));
    EXPECT_EQ(fingerprint(uri_), v1) << "reading and checking migrate nothing";

    history_store store(uri_);  // opened for writing: migrated
    EXPECT_EQ(store.schema_version_of_file(), current_schema);
    EXPECT_EQ(run_sql("SELECT version FROM contend_schema"), std::vector<std::string>{std::to_string(current_schema)});
    EXPECT_EQ(run_sql("SELECT count(*) FROM information_schema.columns WHERE table_name = 'runs' AND column_name IN"
                      " ('version', 'library_build_type', 'run_status', 'busy_loops', 'busy_nice', 'one_cpu')"),
              std::vector<std::string>{"6"});
    expect_version_one_run(store.runs().at(0));
    const std::int64_t id = store.append(sample_run("after"));
    EXPECT_GT(id, 1);
    run_result expected = sample_run("after");
    expected.cells[0].cpu_ns_per_op = 0.0;
    expect_same(*store.run(id), expected);

    // A second opener finds nothing left to do.
    const history_store again(uri_);
    EXPECT_EQ(again.run_count(), 2u);
}

// What version 2 added to version 1, as its migration did.
constexpr const char* schema_v2_additions = R"sql(
ALTER TABLE runs ADD COLUMN version text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN library_build_type text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN run_status text NOT NULL DEFAULT 'complete';
ALTER TABLE cells ADD COLUMN operation text NOT NULL DEFAULT 'op';
CREATE TABLE metrics (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cell_id bigint NOT NULL REFERENCES cells(id), name text NOT NULL, value double precision,
    UNIQUE (cell_id, name));
UPDATE contend_schema SET version = 2;
)sql";

TEST_F(PostgresHistory, AVersionTwoHistoryGetsTheLaterColumnsWithTheirDefaults) {
    run_sql(schema_v1);
    run_sql(schema_v2_additions);
    {
        history_store reader(uri_, history_access::read_only);
        EXPECT_EQ(reader.schema_version_of_file(), 2);
        EXPECT_EQ(reader.runs().at(0).context.one_cpu, -1);
    }
    history_store store(uri_);
    EXPECT_EQ(store.schema_version_of_file(), current_schema);
    const auto old_run = store.runs().at(0);
    expect_version_one_run(old_run);
    EXPECT_EQ(old_run.context.busy_loops, 0);
    EXPECT_EQ(old_run.context.busy_nice, 0);
    EXPECT_EQ(old_run.context.one_cpu, -1) << "the column's default: not restricted";
    EXPECT_FALSE(old_run.cells.at(0).modal) << "a cell of before the flag reads as not modal";
    EXPECT_EQ(old_run.cells.at(0).fairness_reason, "") << "nor with a reason for its fairness";
    const std::int64_t id = store.append(sample_run("after"));
    run_result expected = sample_run("after");
    expected.cells[0].cpu_ns_per_op = 0.0;
    expect_same(*store.run(id), expected);
}

TEST_F(PostgresHistory, ADatabaseOfAnotherSchemaIsRefusedAndLeftUntouched) {
    run_sql("CREATE TABLE runs (id integer PRIMARY KEY, note text); INSERT INTO runs VALUES (1, 'x');");
    const std::string before = fingerprint(uri_);
    for (const auto access : {history_access::read_write, history_access::read_only}) {
        try {
            history_store store(uri_, access);
            ADD_FAILURE() << "opened a foreign database";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("not a contend history"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(dbname_), std::string::npos) << "names the database: " << e.what();
        }
    }
    EXPECT_THROW(history_store::check_appendable(uri_), std::runtime_error);
    EXPECT_EQ(fingerprint(uri_), before);

    // Our version table does not make a database ours: the columns must be there too.
    run_sql("CREATE TABLE contend_schema (version integer NOT NULL); INSERT INTO contend_schema VALUES (1);");
    const std::string with_version = fingerprint(uri_);
    EXPECT_THROW(history_store{uri_}, std::runtime_error);
    EXPECT_EQ(fingerprint(uri_), with_version);
}

TEST_F(PostgresHistory, ANewerVersionIsRefusedAndLeftUntouched) {
    history_store(uri_).append(sample_run("by a newer lab"));
    run_sql("UPDATE contend_schema SET version = 99");  // newer than any lab so far
    const std::string before = fingerprint(uri_);
    for (const auto access : {history_access::read_write, history_access::read_only}) {
        try {
            history_store store(uri_, access);
            ADD_FAILURE() << "opened a history of a newer version";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(history_store::check_appendable(uri_), std::runtime_error);
    EXPECT_EQ(fingerprint(uri_), before);
}

TEST_F(PostgresHistory, ReadOnlyRefusesADatabaseWithNoHistoryAndCreatesNothing) {
    EXPECT_THROW(history_store(uri_, history_access::read_only), std::runtime_error);
    EXPECT_NO_THROW(history_store::check_appendable(uri_)) << "an empty database may become a history";
    EXPECT_EQ(fingerprint(uri_), "");
    // A missing database is an error, not something to create.
    const std::string missing = uri_of_database(server_, dbname_ + "_missing");
    EXPECT_THROW(history_store{missing}, std::runtime_error);
    EXPECT_THROW(history_store::check_appendable(missing), std::runtime_error);
}

}  // namespace
}  // namespace contend_test
