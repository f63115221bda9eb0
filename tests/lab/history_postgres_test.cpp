// The history in PostgreSQL (lab/store/history_postgres.cpp), against a real server: the
// one tests/lab/with_postgres.sh starts for the duration of this program and names in
// CONTEND_TEST_POSTGRES. Without it every test fails, saying so: never skipped.
//
// Each test works in a database of its own, created for it and dropped after it, so tests
// neither see nor disturb each other. What the SQLite file gives back is the reference: the
// same run, stored in both, must come back the same from both.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "store/history.hpp"
#include "store/history_backend.hpp"
#include "store/interrupted.hpp"
#include "model/results.hpp"
#include "run_cli.hpp"
#include "temp_dir.hpp"

namespace contend_test {
namespace {

using contend::lab::cell_result;
using contend::lab::history_access;
using contend::lab::history_store;
using contend::lab::machine_context;
using contend::lab::run_result;

constexpr const char* server_variable = "CONTEND_TEST_POSTGRES";
constexpr int current_schema = contend::lab::history_detail::schema_version;

// --- Talking to the server directly: making databases, writing schemas by hand -----------

struct connection_closer {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using connection = std::unique_ptr<PGconn, connection_closer>;

connection connect(const std::string& uri) {
    connection c(PQconnectdb(uri.c_str()));
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw std::runtime_error("cannot connect to " + uri + ": " + PQerrorMessage(c.get()));
    PQsetNoticeProcessor(
        c.get(), [](void*, const char*) {}, nullptr);
    return c;
}

// Runs SQL (several statements may be given) and returns the first column of its rows.
std::vector<std::string> sql(PGconn* c, const std::string& text) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(c, text.c_str()), &PQclear);
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        throw std::runtime_error("SQL failed: " + text + ": " + PQresultErrorMessage(result.get()));
    std::vector<std::string> rows;
    for (int row = 0; row < PQntuples(result.get()); ++row) rows.emplace_back(PQgetvalue(result.get(), row, 0));
    return rows;
}

std::string percent_encoded(const std::string& text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (const unsigned char ch : text) {
        if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/') {
            out += static_cast<char>(ch);
        } else {
            out += '%';
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    return out;
}

// The server's URI with another database: libpq takes the URI apart, every setting but
// the database goes back into the query, so a socket folder or a port stays as it was.
std::string uri_of_database(const std::string& server_uri, const std::string& dbname) {
    char* error = nullptr;
    std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(PQconninfoParse(server_uri.c_str(), &error),
                                                                         &PQconninfoFree);
    if (!options) {
        const std::string message = error ? error : "out of memory";
        PQfreemem(error);
        throw std::runtime_error(std::string(server_variable) + " is not a libpq URI: " + message);
    }
    std::string uri = "postgresql:///" + percent_encoded(dbname);
    char separator = '?';
    for (const PQconninfoOption* o = options.get(); o->keyword; ++o) {
        if (!o->val || std::string(o->keyword) == "dbname") continue;
        uri += separator + percent_encoded(o->keyword) + "=" + percent_encoded(o->val);
        separator = '&';
    }
    return uri;
}

// What a schema holds: every table with its columns and types, and every row of every
// table. Equal before and after means nothing was written.
std::string fingerprint(const std::string& uri) {
    const connection c = connect(uri);
    std::string out;
    for (const std::string& table :
         sql(c.get(),
             "SELECT quote_ident(relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
             " AND relkind = 'r' ORDER BY relname")) {
        out += table + "(";
        for (const std::string& column :
             sql(c.get(),
                 "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid"
                 " = 'public." +
                     table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"))
            out += column + ",";
        out += "): ";
        for (const std::string& row : sql(c.get(), "SELECT t::text FROM public." + table + " t ORDER BY 1"))
            out += row + "; ";
        out += "\n";
    }
    return out;
}

// --- The runs --------------------------------------------------------------------------

// Every field distinct from its neighbours and from its default, so that a swapped or a
// dropped column cannot pass; text that SQL, libpq and the formats could trip on.
run_result sample_run(const std::string& label) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
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
    c.version = "0.1.0 (git 3f5e6813a0b1)";
    c.build_flags = "Release -O2 -march=native";
    c.library_build_type = "release";
    c.governor = "";  // not readable on that machine
    c.wait_backend = "futex";
    c.timer_slack_ns = std::numeric_limits<std::int64_t>::min();
    c.nanosleep_1ns_us = nan;
    c.run_status = "interrupted by SIGINT after 3 of 4 cells";
    c.busy_loops = 3;
    c.busy_nice = -2;
    c.one_cpu = 1;

    cell_result counter;
    counter.suite = "counter";
    counter.contender = "contend_mutex";
    counter.workers = 4;
    counter.operation = "increment";
    counter.ops_per_worker = 1'000'000;
    counter.repetitions = 3;
    counter.ns_per_op = {0.1, 1e-9, 12345.678901234567, nan, inf, -inf};
    counter.median_ns = 0.1;
    counter.p25_ns = -inf;
    counter.p75_ns = inf;
    counter.cpu_ns_per_op = -0.0;  // comes back 0.0 from both: see RoundTripsEveryFieldAsTheSqliteFileDoes
    counter.has_fairness = true;  // but not measured: NaN shares, and why
    counter.fairness_reason = "the shares were read 1.5 ms into a repetition";
    counter.affinity = "0-3";
    counter.metrics = {{"items_per_ms", 1234.5}, {"p99_us", nan}, {"a", -inf}, {"zz", 5e-324}};
    run.cells.push_back(counter);

    cell_result hold;
    hold.suite = "hold";
    hold.contender = "std_mutex";
    hold.params = {{"cs_us", "20"}, {"gap", "1:2"}, {"quote", "'$1\\x00%s"}};
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
    hold.oversubscribed = true;
    run.cells.push_back(hold);

    cell_result timed_out;
    timed_out.suite = "handoff";
    timed_out.contender = "spin_lock";
    timed_out.params = {{"probes", "8"}};
    timed_out.workers = 16;
    timed_out.operation = "";
    timed_out.status = "timed_out";
    timed_out.detail = "ran past 30 s; 'quoted' \"text\"'); DROP TABLE runs; -- $$ \\ 20 \u00b5s \u2713";
    timed_out.ops_per_worker = 7;
    timed_out.repetitions = 1;
    timed_out.affinity = "0-15";
    run.cells.push_back(timed_out);
    return run;
}

// Bit-exact, so that a sign of zero counts too; any NaN equals any NaN.
bool same_double(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

template <class T>
bool same_value(const T& a, const T& b) {
    if constexpr (std::is_same_v<T, double>) {
        return same_double(a, b);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!same_double(a[i], b[i])) return false;
        return true;
    } else {
        return a == b;
    }
}

// Field by field, walking the field tables: a field added to results.hpp is compared too.
template <class Record>
void expect_same_fields(const Record& a, const Record& b, std::span<const contend::lab::field<Record>> fields) {
    for (const auto& f : fields)
        visit_field(f, a, [&](const auto& value_a) {
            visit_field(f, b, [&](const auto& value_b) {
                if constexpr (std::is_same_v<decltype(value_a), decltype(value_b)>) {
                    EXPECT_TRUE(same_value(value_a, value_b)) << "field " << f.name;
                }
            });
        });
}

void expect_same(const run_result& a, const run_result& b) {
    expect_same_fields(a.context, b.context, contend::lab::context_fields());
    ASSERT_EQ(a.cells.size(), b.cells.size());
    for (std::size_t i = 0; i < a.cells.size(); ++i) {
        SCOPED_TRACE("cell " + a.cells[i].name());
        expect_same_fields(a.cells[i], b.cells[i], contend::lab::cell_fields());
        ASSERT_EQ(a.cells[i].metrics.size(), b.cells[i].metrics.size());
        for (std::size_t m = 0; m < a.cells[i].metrics.size(); ++m) {
            EXPECT_EQ(a.cells[i].metrics[m].first, b.cells[i].metrics[m].first);
            EXPECT_TRUE(same_double(a.cells[i].metrics[m].second, b.cells[i].metrics[m].second))
                << a.cells[i].metrics[m].first;
        }
    }
}

// --- The fixture: a fresh database per test ----------------------------------------------

class PostgresHistory : public temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        const char* server = std::getenv(server_variable);
        if (server == nullptr || *server == '\0')
            GTEST_FAIL() << server_variable
                         << " is not set: this test needs a PostgreSQL server. Run it through "
                            "tests/lab/with_postgres.sh (ctest does), e.g. bash tests/lab/with_postgres.sh "
                            "build/release/tests/test_lab_history_postgres";
        server_ = server;
        static std::atomic<int> databases{0};
        dbname_ = "contend_test_" + std::to_string(::getpid()) + "_" + std::to_string(databases++);
        const connection maintenance = connect(server_);
        sql(maintenance.get(), "DROP DATABASE IF EXISTS " + dbname_);
        sql(maintenance.get(), "CREATE DATABASE " + dbname_);
        uri_ = uri_of_database(server_, dbname_);
    }

    void TearDown() override {
        if (!dbname_.empty()) {
            try {
                const connection maintenance = connect(server_);
                sql(maintenance.get(), "DROP DATABASE IF EXISTS " + dbname_ + " WITH (FORCE)");
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cannot drop the test's database: " << e.what();
            }
        }
        temp_dir_test::TearDown();
    }

    // Runs SQL in the test's database.
    std::vector<std::string> run_sql(const std::string& text) const {
        const connection c = connect(uri_);
        return sql(c.get(), text);
    }

    std::string server_, dbname_, uri_;
};

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
bool an_append_waits(const std::string& uri) {
    const connection c = connect(uri);
    return sql(c.get(), "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'runs'::regclass").at(0) != "0";
}

// Waits (60 s at most: a bound, not a measure) until an append queues for the runs table.
bool wait_for_a_queued_append(const std::string& uri) {
    for (int i = 0; i < 600; ++i) {
        if (an_append_waits(uri)) return true;
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
    ASSERT_TRUE(wait_for_a_queued_append(uri_)) << "the append never queued for the runs table";
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
    ASSERT_TRUE(wait_for_a_queued_append(uri_)) << "the append never queued for the runs table";
    stop.store(SIGTERM);
    ASSERT_EQ(append.wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "the wait did not end on the stop flag";
    const std::string outcome = append.get();
    EXPECT_EQ(outcome.rfind("interrupted: ", 0), 0u) << outcome;
    EXPECT_NE(outcome.find("nothing was stored"), std::string::npos) << outcome;
    sql(holder.get(), "COMMIT");
    EXPECT_EQ(history_store(uri_, history_access::read_only).run_count(), 0u);
    EXPECT_FALSE(an_append_waits(uri_));
}

// Two `contend history import` processes of 5,000 benchmarks each, started together: both
// are stored (the report was 60,000 benchmarks, one import failing with a lock timeout).
TEST_F(PostgresHistory, TwoLargeImportsAtOnceAreBothStored) {
    constexpr int benchmarks = 5000;
    std::string rows;
    for (int i = 0; i < benchmarks; ++i)
        rows += std::string(rows.empty() ? "" : ",\n") + R"({"name": "BM_lock/)" + std::to_string(i) +
                R"(", "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "iterations": 1000, )" +
                R"("real_time": )" + std::to_string(10 + i % 7) + R"(, "time_unit": "ns"})";
    write(path("big.json"),
          R"({"context": {"executable": "./bench", "date": "2026-12-01"}, "benchmarks": [)" + rows + "]}");
    const std::string db = shell_quote(uri_);
    auto import = [&](const std::string& label) {
        return std::async(std::launch::async, [&, label] {
            return run_cli("history import " + shell_quote(path("big.json")) + " --label " + label + " --db " + db);
        });
    };
    auto first = import("one");
    auto second = import("two");
    for (auto* result : {&first, &second}) {
        ASSERT_EQ(result->wait_for(std::chrono::seconds(280)), std::future_status::ready) << "an import hangs";
        const cli_outcome o = result->get();
        EXPECT_EQ(o.exit_code, 0) << o.output;
    }
    const history_store store(uri_, history_access::read_only);
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 2u);
    std::set<std::string> labels;
    for (const run_result& run : runs) {
        EXPECT_EQ(run.cells.size(), std::size_t{benchmarks}) << run.context.label;
        labels.insert(run.context.label);
    }
    EXPECT_EQ(labels, (std::set<std::string>{"one", "two"}));
}

TEST_F(PostgresHistory, AnUnreachableServerFailsWithoutHangingAndThePasswordIsMasked) {
    // Port 1 on the loopback: nothing listens there. connect_timeout bounds a server that
    // does not answer at all; here the refusal is immediate. The wait below only tells a
    // hang from a failure: it is no measure of speed.
    const std::string secret = "s3cr3t-pass";
    for (const std::string& uri : {"postgresql://contend:" + secret + "@127.0.0.1:1/x?connect_timeout=2",
                                   "postgres://contend@127.0.0.1:1/x?password=" + secret + "&connect_timeout=2"}) {
        SCOPED_TRACE(history_store::printable(uri));
        for (const bool check_only : {false, true}) {
            auto attempt = std::async(std::launch::async, [&]() -> std::string {
                try {
                    if (check_only) history_store::check_appendable(uri);
                    else history_store store(uri);
                } catch (const std::runtime_error& e) {
                    return e.what();
                }
                return "";
            });
            ASSERT_EQ(attempt.wait_for(std::chrono::seconds(60)), std::future_status::ready)
                << "still connecting after 60 s: connect_timeout was not applied";
            const std::string message = attempt.get();
            EXPECT_NE(message, "") << "connected to nothing";
            EXPECT_NE(message.find("cannot connect"), std::string::npos) << message;
            EXPECT_NE(message.find("127.0.0.1"), std::string::npos) << "names the server: " << message;
            EXPECT_EQ(message.find(secret), std::string::npos) << "shows the password: " << message;
            EXPECT_NE(message.find("***"), std::string::npos) << message;
        }
    }
}

// Every command that takes --db, end to end on one PostgreSQL history: two imported runs,
// listed, compared by label (the slower one a regression), found as a change by nothing
// (two runs are too few), and drawn by contend report. Nothing is created under the URI's name.
TEST_F(PostgresHistory, EveryCommandWithDbWorksOnAPostgresHistory) {
    const auto gb = [](double ns) {
        std::string rows;
        for (int i = 0; i < 10; ++i)
            rows += std::string(rows.empty() ? "" : ",") + R"({"name": "BM_lock", "run_name": "BM_lock", )" +
                    R"("run_type": "iteration", "repetitions": 10, "repetition_index": )" + std::to_string(i) +
                    R"(, "real_time": )" + std::to_string(ns * (1 + 0.001 * (i % 3))) + R"(, "time_unit": "ns"})";
        return R"({"context": {"executable": "./bench", "date": "2026-11-30"}, "benchmarks": [)" + rows + "]}";
    };
    write(path("base.json"), gb(10));
    write(path("slow.json"), gb(13));
    const std::string db = shell_quote(uri_);
    auto o = run_cli("history import " + shell_quote(path("base.json")) + " --label base --db " + db);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("history import " + shell_quote(path("slow.json")) + " --label slow --db " + db);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("history list --db " + db);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("2 runs"), std::string::npos) << o.output;
    o = run_cli("compare --db " + db + " base slow");
    EXPECT_EQ(o.exit_code, 1) << o.output;  // the one benchmark, 30 % slower
    EXPECT_NE(o.output.find("1 regressions"), std::string::npos) << o.output;
    o = run_cli("compare --db " + db + " base nosuchlabel");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    o = run_cli("history --changes --db " + db);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("report --db " + db + " -o " + shell_quote(path("page.html")));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(read(path("page.html")).find("bench"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists("postgresql:")) << "a folder named after the URI";
}

TEST(HistoryUri, PrintableMasksEveryPasswordAndNothingElse) {
    EXPECT_EQ(history_store::printable("postgresql://u:pw@h:5432/db"), "postgresql://u:***@h:5432/db");
    EXPECT_EQ(history_store::printable("postgres://u:p@w:d@h/db"), "postgres://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql://u@h:5432/db"), "postgresql://u@h:5432/db");
    EXPECT_EQ(history_store::printable("postgresql://h/db?password=pw&sslmode=require"),
              "postgresql://h/db?password=***&sslmode=require");
    EXPECT_EQ(history_store::printable("postgresql:///db?host=/tmp/s&password=a&password=b"),
              "postgresql:///db?host=/tmp/s&password=***&password=***");
    EXPECT_EQ(history_store::printable("postgresql://h/a@b"), "postgresql://h/a@b") << "an @ in the path";
    EXPECT_EQ(history_store::printable("dir/u:pw@h.db"), "dir/u:pw@h.db") << "a file path is not a URI";
    EXPECT_TRUE(history_store::is_database_uri("postgresql://h/db"));
    EXPECT_TRUE(history_store::is_database_uri("postgres:///db"));
    EXPECT_FALSE(history_store::is_database_uri("./postgresql://h/db"));
    EXPECT_FALSE(history_store::is_database_uri(".contend/history.db"));
}

// libpq quotes what it cannot parse: a password, or the whole URI. No message shows one,
// whether from the library or any command; none of these reaches a server.
TEST(HistoryUri, APasswordInAMalformedPostgresUrlIsNeverPrinted) {
    const std::string secret = "S3cret";
    const std::vector<std::string> uris = {
        "postgresql://bob:" + secret + "%ZZPW@127.0.0.1/contend",  // a bad %-escape in the password
        "postgresql://bob:" + secret + "PW@[::1/contend",  // an unclosed IPv6 address
        "postgresql://bob:" + secret + "PW@[::1]x/contend",  // junk after it
        "postgresql://bob:pa/" + secret + "@127.0.0.1/contend",  // a raw '/' in the password
        "postgresql://bob:" + secret + "@127.0.0.1/contend?password",  // a parameter without '='
        "postgresql://127.0.0.1/contend?password=%ZZ" + secret,  // a bad %-escape in the parameter
        "POSTGRESQL://bob:" + secret + "%ZZPW@127.0.0.1/contend",  // the scheme in capitals
        "postgresql://bob:" + secret + "%ZZ@127.0.0.1/contend?sslmode=x"};
    for (const std::string& uri : uris) {
        SCOPED_TRACE(history_store::printable(uri));
        EXPECT_EQ(history_store::printable(uri).find(secret), std::string::npos);
        for (const bool check_only : {false, true}) {
            std::string message;
            try {
                if (check_only) history_store::check_appendable(uri);
                else history_store store(uri, history_access::read_only);
            } catch (const std::runtime_error& e) {
                message = e.what();
            }
            EXPECT_NE(message, "") << "opened a malformed URI";
            EXPECT_EQ(message.find(secret), std::string::npos) << "shows the password: " << message;
        }
        const std::vector<std::string> commands = {"history list",
                                                   "history import " + shell_quote(__FILE__) + " --label x",
                                                   "compare a b", "report -o /dev/null"};
        for (const std::string& command : commands) {
            const cli_outcome o = run_cli(command + " --db " + shell_quote(uri));
            EXPECT_NE(o.exit_code, 0) << command << ": " << o.output;
            EXPECT_EQ(o.output.find(secret), std::string::npos) << command << " shows the password: " << o.output;
        }
    }
    // The forms where a password is over before a '/' or holds an '@' are masked whole.
    EXPECT_EQ(history_store::printable("postgresql://u:pa/ss@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql://u:pa?ss@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql:/u:pw@h/db"), "postgresql:/u:***@h/db");
    EXPECT_EQ(history_store::printable("POSTGRESQL://u:pw@h/db?PASSWORD=x"), "POSTGRESQL://u:***@h/db?PASSWORD=***");
    EXPECT_EQ(history_store::printable("postgresql://[::1]:5432/a@b"), "postgresql://[::1]:5432/a@b");
}

}  // namespace
}  // namespace contend_test
