// What the PostgreSQL history tests share (tests/lab/history_postgres/): talking to the
// server directly, the sample run and how runs are compared, and the fixture.
//
// The history in PostgreSQL (lab/store/history_postgres.cpp), against a real server: the
// one tests/lab/with_postgres.sh starts for the duration of this program and names in
// CONTEND_TEST_POSTGRES. Without it every test fails, saying so: never skipped.
//
// Each test works in a database of its own, created for it and dropped after it, so tests
// neither see nor disturb each other. What the SQLite file gives back is the reference: the
// same run, stored in both, must come back the same from both.
#pragma once

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

#include "results/results.hpp"
#include "run_cli.hpp"
#include "store/history.hpp"
#include "store/history_backend.hpp"
#include "store/interrupted.hpp"
#include "temp_dir.hpp"

namespace contend_test {

using contend::lab::cell_result;
using contend::lab::history_access;
using contend::lab::history_store;
using contend::lab::machine_context;
using contend::lab::run_result;

inline constexpr const char* server_variable = "CONTEND_TEST_POSTGRES";
inline constexpr int current_schema = contend::lab::history_detail::schema_version;

// --- Talking to the server directly: making databases, writing schemas by hand -----------

struct connection_closer {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using connection = std::unique_ptr<PGconn, connection_closer>;

inline connection connect(const std::string& uri) {
    connection c(PQconnectdb(uri.c_str()));
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw std::runtime_error("cannot connect to " + uri + ": " + PQerrorMessage(c.get()));
    PQsetNoticeProcessor(
        c.get(), [](void*, const char*) {}, nullptr);
    return c;
}

// Runs SQL (several statements may be given) and returns the first column of its rows.
inline std::vector<std::string> sql(PGconn* c, const std::string& text) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(c, text.c_str()), &PQclear);
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        throw std::runtime_error("SQL failed: " + text + ": " + PQresultErrorMessage(result.get()));
    std::vector<std::string> rows;
    for (int row = 0; row < PQntuples(result.get()); ++row) rows.emplace_back(PQgetvalue(result.get(), row, 0));
    return rows;
}

inline std::string percent_encoded(const std::string& text) {
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
inline std::string uri_of_database(const std::string& server_uri, const std::string& dbname) {
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
inline std::string fingerprint(const std::string& uri) {
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
inline run_result sample_run(const std::string& label) {
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
inline bool same_double(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

template <class T>
inline bool same_value(const T& a, const T& b) {
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
inline void expect_same_fields(const Record& a, const Record& b, std::span<const contend::lab::field<Record>> fields) {
    for (const auto& f : fields)
        visit_field(f, a, [&](const auto& value_a) {
            visit_field(f, b, [&](const auto& value_b) {
                if constexpr (std::is_same_v<decltype(value_a), decltype(value_b)>) {
                    EXPECT_TRUE(same_value(value_a, value_b)) << "field " << f.name;
                }
            });
        });
}

inline void expect_same(const run_result& a, const run_result& b) {
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

}  // namespace contend_test
