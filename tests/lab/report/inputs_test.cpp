// What `contend report` reads: results files (read back as written, the golden files, the
// first schema, and malformed input refused saying why) and the runs it picks from the history.
#include "report_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "pages/report.hpp"
#include "store/history.hpp"
#include "store/interrupted.hpp"
#include "store/results_io.hpp"

using namespace contend_test::report;

// --- Reading results files -----------------------------------------------------------------

TEST(RunFromJson, ReadsBackWhatToJsonWrote) {
    lab::run_result run = fixture();
    lab::cell_result odd = cell("counter", "nan_cell", 3, std::numeric_limits<double>::quiet_NaN());
    odd.status = "no_repetitions";
    odd.detail = "none finished";
    odd.has_fairness = true;
    odd.min_share = 0.25;
    odd.max_share = 1.75;
    odd.affinity = "0,1";
    odd.ops_per_worker = 12345678901234ull;
    run.cells.push_back(odd);
    run.context.nanosleep_1ns_us = std::numeric_limits<double>::quiet_NaN();

    const lab::run_result back = lab::run_from_json(lab::to_json(run));
    EXPECT_EQ(lab::to_json(back), lab::to_json(run)) << "every field survives the round trip";
    ASSERT_EQ(back.cells.size(), run.cells.size());
    const lab::cell_result& b = back.cells.back();
    EXPECT_TRUE(std::isnan(b.median_ns)) << "written as null, read as NaN";
    EXPECT_TRUE(std::isnan(back.context.nanosleep_1ns_us));
    EXPECT_EQ(b.status, "no_repetitions");
    EXPECT_EQ(b.ops_per_worker, 12345678901234ull);
    EXPECT_EQ(b.affinity, "0,1");
    EXPECT_EQ(back.cells[16].params, (std::vector<std::pair<std::string, std::string>>{{"cs_us", "0"}}));
}

TEST(RunFromJson, ReadsTheGoldenFile) {
    const lab::run_result run = lab::run_from_json(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json"));
    EXPECT_EQ(run.context.date, "2026-11-29T00:00:00Z");
    EXPECT_EQ(run.context.logical_cpus, 2);
    EXPECT_EQ(run.context.timer_slack_ns, 50000);
    EXPECT_DOUBLE_EQ(run.context.nanosleep_1ns_us, 90.5);
    EXPECT_EQ(run.context.wait_backend, "futex");
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "counter/contend_mutex/workers:2");
    EXPECT_DOUBLE_EQ(run.cells[0].median_ns, 6.5);
    EXPECT_DOUBLE_EQ(run.cells[0].max_share, 1.5);
    EXPECT_EQ(json::parse(lab::to_json(run)), json::parse(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json")))
        << "written again, the same document";
}

TEST(RunFromJson, ReadsAFileWrittenBeforeSchemaVersionTwo) {
    // Parameters as an object, no operation, no run_status: the lab's first JSON shape.
    const lab::run_result run = lab::run_from_json(read_file(CONTEND_LAB_GOLDEN_DIR "/run_v1.json"));
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "counter/contend_mutex/workers:2");
    EXPECT_EQ(run.cells[0].operation, "op");
    EXPECT_EQ(run.context.run_status, "complete");
    EXPECT_DOUBLE_EQ(run.cells[0].min_share, 0.5);
}

TEST(RunFromJson, MalformedInputIsRefusedSayingWhy) {
    auto error_of = [](const std::string& text) -> std::string {
        try {
            lab::run_from_json(text);
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return "(no error)";
    };
    const json good = json::parse(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json"));
    EXPECT_NE(error_of("{\"context\": ").find("not JSON"), std::string::npos) << error_of("{\"context\": ");
    EXPECT_NE(error_of("").find("not JSON"), std::string::npos);
    EXPECT_NE(error_of("[1, 2]").find("'context' and 'benchmarks'"), std::string::npos);
    EXPECT_NE(error_of("{\"benchmarks\": []}").find("lacks 'context'"), std::string::npos);

    json no_rows = good;
    no_rows.erase("benchmarks");
    EXPECT_NE(error_of(no_rows.dump()).find("lacks 'benchmarks'"), std::string::npos);
    json rows_not_array = good;
    rows_not_array["benchmarks"] = 3;
    EXPECT_NE(error_of(rows_not_array.dump()).find("not an array"), std::string::npos);

    json no_kernel = good;
    no_kernel["context"].erase("kernel");
    EXPECT_NE(error_of(no_kernel.dump()).find("run context lacks 'kernel'"), std::string::npos);
    json cpus_text = good;
    cpus_text["context"]["num_cpus"] = "two";
    EXPECT_NE(error_of(cpus_text.dump()).find("malformed run context"), std::string::npos);

    json second_row_bad = good;
    second_row_bad["benchmarks"].push_back(good["benchmarks"][0]);
    second_row_bad["benchmarks"][1].erase("suite");
    const std::string missing = error_of(second_row_bad.dump());
    EXPECT_NE(missing.find("benchmarks[1]"), std::string::npos) << missing;
    EXPECT_NE(missing.find("lacks 'suite'"), std::string::npos) << missing;
    json workers_text = good;
    workers_text["benchmarks"][0]["workers"] = "two";
    const std::string mistyped = error_of(workers_text.dump());
    EXPECT_NE(mistyped.find("benchmarks[0]: malformed result row"), std::string::npos) << mistyped;
    json row_not_object = good;
    row_not_object["benchmarks"][0] = 7;
    EXPECT_NE(error_of(row_not_object.dump()).find("not a JSON object"), std::string::npos);
}

// Issue item 14: `report --json` read and parsed its file to the end whatever a stop signal
// said (as compare and import did): a file of hundreds of MB ran on for tens of seconds.
TEST(Report, AStopSignalEndsTheReadOfAResultsFile) {
    std::atomic<int> stop{SIGTERM};
    lab::report_request request;
    request.json_path = fixture_path();
    request.stop = &stop;
    try {
        (void)lab::load_report_sources(request);
        ADD_FAILURE() << "read to the end despite the signal";
    } catch (const lab::interrupted& e) {
        EXPECT_EQ(e.signal(), SIGTERM);
    }
}

// --- Picking runs from the history --------------------------------------------------------

TEST(Report, TheHistoryGivesTheNewestRunOfEachSuite) {
    auto run_of = [](std::initializer_list<const char*> suites, double figure) {
        lab::run_result run;
        for (const char* s : suites) run.cells.push_back(cell(s, "a", 1, figure));
        return run;
    };
    const std::vector<lab::stored_run> history = {
        {1, run_of({"counter", "hold"}, 1)},
        {2, run_of({"hold"}, 2)},
        {3, run_of({"counter"}, 3)},
        {4, run_of({"counter", "queue"}, 4)},
    };
    const auto picked = lab::newest_run_per_suite(history);
    ASSERT_EQ(picked.size(), 2u);
    EXPECT_EQ(picked[0].origin, "history run 2");  // oldest first
    ASSERT_EQ(picked[0].run.cells.size(), 1u);
    EXPECT_EQ(picked[0].run.cells[0].suite, "hold");
    EXPECT_EQ(picked[1].origin, "history run 4");
    EXPECT_EQ(picked[1].run.cells.size(), 2u);

    // A run newest for one of its suites only keeps that suite's cells.
    const auto partial = lab::newest_run_per_suite({{1, run_of({"counter", "hold"}, 1)}, {2, run_of({"hold"}, 2)}});
    ASSERT_EQ(partial.size(), 2u);
    EXPECT_EQ(partial[0].origin, "history run 1");
    ASSERT_EQ(partial[0].run.cells.size(), 1u);
    EXPECT_EQ(partial[0].run.cells[0].suite, "counter");
    EXPECT_TRUE(lab::newest_run_per_suite({}).empty());
}
