// The server suite end to end: every implementation is started, loaded by wrk over
// 127.0.0.1 and stopped with SIGTERM, in short runs (two repetitions of a 1 s wrk run per
// cell, --quick's length). Needs wrk (scripts/setup.sh installs it): without it every cell
// is invalid with the reason, and the test fails saying so. No timing is asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "run/runner.hpp"
#include "run_cli.hpp"
#include "suites/suites.hpp"

namespace lab = contend::lab;

namespace {

const std::set<std::string> implementations{"contend", "contend_std_mutex", "asio"};

}  // namespace

TEST(ServerSuite, ListsEveryImplementationAtEveryRouteAndConnectionCountUnderTheDesignRowNames) {
    const auto* s = lab::find_suite("server");
    ASSERT_NE(s, nullptr);
    std::set<std::string> ids;
    for (const auto& c : s->contenders) {
        ids.insert(c.id());
        EXPECT_EQ(c.operation, "request") << c.id();
        EXPECT_TRUE(static_cast<bool>(c.measure_cell)) << c.id() << ": a server cell is measured by its suite";
    }
    for (const auto& name : implementations)
        for (const char* route : {"json", "plaintext"})
            for (const char* connections : {"16", "256"}) {
                const std::string id = name + "/route:" + route + "/connections:" + connections;
                EXPECT_EQ(ids.count(id), 1u) << id;
            }
    // And contend at json/16 again, beside a nice-19 and a nice-0 busy loop (cotenant_test.cpp).
    EXPECT_EQ(ids.count("contend/route:json/connections:16/busy_loops:1/busy_nice:19"), 1u);
    EXPECT_EQ(ids.count("contend/route:json/connections:16/busy_loops:1/busy_nice:0"), 1u);
    EXPECT_EQ(s->contenders.size(), implementations.size() * 2 * 2 + 2);
    // Run in rounds, with the rows compared (one route and connection count) side by side.
    EXPECT_TRUE(s->interleave_rounds);
    std::vector<const lab::contender*> quiet;
    for (const auto& c : s->contenders)
        if (c.cotenant.busy_loops == 0) quiet.push_back(&c);
    for (std::size_t i = 0; i < quiet.size(); ++i) {
        const std::size_t first_of_point = i - i % implementations.size();
        EXPECT_EQ(quiet[i]->params, quiet[first_of_point]->params) << quiet[i]->id();
    }
}

TEST(ServerSuite, EveryImplementationServesBothRoutesToWrkWithoutErrorsAndReportsItsMetrics) {
    lab::bench_options o;
    o.suite = "server";
    o.contenders = "*/connections:16";
    o.workers = {2};
    o.in_process = true;  // the cells' own children are the servers and wrk
    o.harness.min_time_s = 0.005;  // as --quick: 1 s wrk runs
    o.harness.repetitions = 2;
    o.harness.min_repetitions = 2;
    o.harness.deadline_s = 3;
    const auto run = lab::run_suite(o);
    EXPECT_EQ(run.context.run_status, "complete");
    ASSERT_EQ(run.cells.size(), implementations.size() * 2);

    std::set<std::string> rows;
    const bool oversubscribed = 2 + 2 > static_cast<int>(lab::allowed_cpus().size());
    for (const auto& cell : run.cells) {
        rows.insert(cell.name());
        ASSERT_TRUE(cell.valid()) << cell.name() << ": " << cell.status << ": " << cell.detail;
        EXPECT_EQ(cell.repetitions, 2) << cell.name();
        EXPECT_EQ(cell.metric("errors"), 0) << cell.name();
        EXPECT_GT(cell.metric("requests_per_second"), 0) << cell.name();
        EXPECT_GT(cell.metric("p50_us"), 0) << cell.name();
        EXPECT_GE(cell.metric("p99_us"), cell.metric("p50_us")) << cell.name();
        EXPECT_GT(cell.metric("cpu_ns_per_request"), 0) << cell.name();
        EXPECT_GT(cell.median_ns, 0) << cell.name();
        EXPECT_EQ(cell.operation, "request");
        EXPECT_EQ(cell.oversubscribed, oversubscribed) << cell.name();
        // Only contend's servers count the contentions of their pipes' locks.
        const bool counts_contentions = cell.contender != "asio";
        const double contentions = cell.metric("contentions_per_second");
        const double acquisitions = cell.metric("lock_acquisitions_per_second");
        EXPECT_EQ(std::isnan(contentions), !counts_contentions) << cell.name();
        EXPECT_EQ(std::isnan(acquisitions), !counts_contentions) << cell.name();
        if (counts_contentions) {
            EXPECT_GE(contentions, 0) << cell.name();
            // Every connection's pipes wait at least once (a read on an empty pipe).
            EXPECT_GT(acquisitions, 0) << cell.name();
            EXPECT_LE(contentions, acquisitions) << cell.name();
        }
    }
    for (const auto& name : implementations)
        for (const char* route : {"json", "plaintext"}) {
            const std::string row = "server/" + name + "/route:" + route + "/connections:16/workers:2";
            EXPECT_EQ(rows.count(row), 1u) << row;
        }
}

// contend_lab_asio_server's numeric flags, refused as contend_json_server refuses them
// (JsonServer.NumericFlagsRefuseValuesTheyCannotHold): exit 2, the flag named. strtoul read
// "--duration -1" as 2^64 - 1, and a count of seconds that std::chrono::seconds cannot hold
// wrapped negative: the backstop fired at once and the server stopped as it started.
TEST(ServerSuite, TheAsioPeerRefusesNumericFlagsItCannotHold) {
#ifndef CONTEND_TEST_ASIO_SERVER_PATH
    GTEST_SKIP() << "contend_lab_asio_server is not built (no Boost.Asio)";
#else
    const std::vector<std::pair<std::string, std::string>> refused = {
        {"--duration", "-1"},
        {"--duration", "18446744073709551615"},
        {"--duration", "9223372036854775807"},
        {"--duration", "31536001"},
        {"--duration", "18446744073709551616"},
        {"--duration", "+5"},
        {"--duration", " 5"},
        {"--threads", "-1"},
        {"--threads", "1025"},
        {"--port", "-1"},
        {"--port", "65536"},
    };
    for (const auto& [flag, value] : refused) {
        // Bounded: a value taken for a long duration would serve until killed.
        const auto o = contend_test::run_cli(
            "timeout -s KILL 30 " + contend_test::shell_quote(CONTEND_TEST_ASIO_SERVER_PATH) + " " + flag + " " +
                contend_test::shell_quote(value) + (flag == "--port" ? "" : " --port 0"),
            false);
        EXPECT_EQ(o.exit_code, 2) << flag << " '" << value << "': " << o.output;
        EXPECT_NE(o.output.find(flag), std::string::npos) << o.output;
    }
    // The longest duration is served, not cut short: still running when timeout's SIGTERM
    // comes (timeout's 124), where one that wrapped stopped at once by itself (0).
    const auto served =
        contend_test::run_cli("timeout -s TERM 1 " + contend_test::shell_quote(CONTEND_TEST_ASIO_SERVER_PATH) +
                                  " --duration 31536000 --port 0",
                              false);
    EXPECT_EQ(served.exit_code, 124) << served.output;
#endif
}
