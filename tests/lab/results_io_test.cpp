#include "store/results_io.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "store/interrupted.hpp"

namespace lab = contend::lab;
using nlohmann::json;

namespace {

lab::run_result sample_run() {
    lab::run_result run;
    run.context.date = "2026-11-29T00:00:00Z";
    run.context.label = "v0";
    run.context.host_name = "host";
    run.context.cpu_model = "AMD EPYC";
    run.context.logical_cpus = 2;
    run.context.cpu_list = "0-1";
    run.context.kernel = "Linux 6";
    run.context.compiler = "GCC 12";
    run.context.build_flags = "Release -O2";
    run.context.wait_backend = "futex";
    run.context.timer_slack_ns = 50000;
    run.context.nanosleep_1ns_us = 90.5;
    run.context.library_build_type = "release";
    run.context.version = "0.1.0 (git 0123456789ab)";
    lab::cell_result c;
    c.suite = "counter";
    c.contender = "contend_mutex";
    c.workers = 2;
    c.ops_per_worker = 1000000;
    c.repetitions = 5;
    c.ns_per_op = {6.5, 6.25, 6.75, 6.0, 7.0};
    c.median_ns = 6.5;
    c.p25_ns = 6.25;
    c.p75_ns = 6.75;
    c.cpu_ns_per_op = 7.25;
    c.has_fairness = true;
    c.min_share = 0.5;
    c.max_share = 1.5;
    run.cells.push_back(c);
    return run;
}

json golden() {
    std::ifstream in(CONTEND_LAB_GOLDEN_DIR "/run.json");
    return json::parse(in);
}

// Same keys, same JSON types, recursively: the schema, not the figures.
void expect_same_shape(const json& want, const json& got, const std::string& where) {
    ASSERT_EQ(want.type_name(), std::string(got.type_name())) << where;
    if (want.is_object()) {
        for (const auto& [k, v] : want.items()) {
            ASSERT_TRUE(got.contains(k)) << where << " lacks '" << k << "'";
            expect_same_shape(v, got.at(k), where + "." + k);
        }
        for (const auto& [k, v] : got.items())
            EXPECT_TRUE(want.contains(k)) << where << " has unexpected '" << k << "'";
    } else if (want.is_array() && !want.empty() && !got.empty()) {
        expect_same_shape(want.front(), got.front(), where + "[0]");
    }
}

}  // namespace

TEST(ResultsIo, JsonMatchesTheGoldenSchema) {
    const json got = json::parse(lab::to_json(sample_run()));
    expect_same_shape(golden(), got, "$");
    EXPECT_EQ(got, golden()) << "same figures in, same document out";
}

TEST(ResultsIo, RowsReadBackAsTheyWereWritten) {
    const auto run = sample_run();
    const auto back = lab::cell_from_json(lab::cell_to_json(run.cells[0]));
    EXPECT_EQ(back.name(), run.cells[0].name());
    EXPECT_EQ(back.ns_per_op, run.cells[0].ns_per_op);
    EXPECT_DOUBLE_EQ(back.min_share, 0.5);
    EXPECT_TRUE(back.valid());
}

// Issue item 14: `history import` parses a lab file twice; neither parse may run on to the
// end of a big file after a stop signal.
TEST(ResultsIo, AStopSignalEndsTheParseOfAResultsFile) {
    const std::string text = lab::to_json(sample_run());
    EXPECT_NO_THROW(lab::run_from_json(text));
    std::atomic<int> stop{SIGTERM};
    try {
        lab::run_from_json(text, &stop);
        ADD_FAILURE() << "read to the end despite the signal";
    } catch (const lab::interrupted& e) {
        EXPECT_EQ(e.signal(), SIGTERM);
    }
    EXPECT_THROW(lab::parse_json_refusing_duplicate_keys(text, &stop), lab::interrupted);
}

TEST(ResultsIo, AMalformedRowIsAClearError) {
    json row = lab::cell_to_json(sample_run().cells[0]);
    row.erase("samples");
    try {
        lab::cell_from_json(row);
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("samples"), std::string::npos) << e.what();
    }
    row = lab::cell_to_json(sample_run().cells[0]);
    row["workers"] = "two";
    EXPECT_THROW(lab::cell_from_json(row), std::runtime_error);
}

// Issue item 20: rows no run can hold were read, stored and charted.
TEST(ResultsIo, ValuesNoRunCanHaveAreRefused) {
    const json good = lab::cell_to_json(sample_run().cells[0]);
    const std::vector<std::pair<std::string, json>> bad = {{"workers", -5},     {"workers", 0},   {"repetitions", -1},
                                                           {"suite", "a/b"},    {"min_share", 5}, {"min_share", -0.5},
                                                           {"max_share", 0.25}, {"valid", false}};
    for (const auto& [key, value] : bad) {
        SCOPED_TRACE(key + " " + value.dump());
        json row = good;
        row[key] = value;
        if (key == "suite") row["name"] = row["run_name"] = "a/b/contend_mutex/workers:2";
        try {
            lab::cell_from_json(row);
            ADD_FAILURE() << "accepted";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
        }
    }
    json crashed = good;
    crashed["status"] = "crashed";  // still marked valid
    EXPECT_THROW(lab::cell_from_json(crashed), std::runtime_error);
    EXPECT_NO_THROW(lab::cell_from_json(good));
}

TEST(ResultsIo, InvalidCellsAreListedNotDropped) {
    auto run = sample_run();
    lab::cell_result bad;
    bad.suite = "counter";
    bad.contender = "tas_lock";
    bad.workers = 64;
    bad.status = "timed_out";
    bad.detail = "killed";
    run.cells.push_back(bad);
    const std::string table = lab::to_table(run);
    EXPECT_NE(table.find("INVALID (timed_out)"), std::string::npos) << table;
    const std::string csv = lab::to_csv(run);
    EXPECT_NE(csv.find("counter/tas_lock/workers:64,false,counter,tas_lock,,64,op,timed_out"), std::string::npos)
        << csv;
    EXPECT_EQ(run.valid_cells(), 1u);
}

TEST(ResultsIo, AModalCellIsFlaggedInTheJsonAndTheCsvAndMarkedInTheTableWithAFootnote) {
    auto run = sample_run();
    lab::cell_result ring;
    ring.suite = "counter";
    ring.contender = "mutex_ring";
    ring.workers = 2;
    ring.repetitions = 5;
    ring.ns_per_op = {512, 4096, 530, 4200, 3900};
    ring.median_ns = 3900;
    ring.p25_ns = 530;
    ring.p75_ns = 4096;
    ring.modal = true;
    run.cells.push_back(ring);

    const json doc = json::parse(lab::to_json(run));
    EXPECT_EQ(doc["benchmarks"][0]["modal"], false);
    EXPECT_EQ(doc["benchmarks"][1]["modal"], true);
    EXPECT_TRUE(lab::run_from_json(lab::to_json(run)).cells[1].modal);
    json old_row = lab::cell_to_json(ring);
    old_row.erase("modal");
    EXPECT_FALSE(lab::cell_from_json(old_row).modal) << "a file of before the flag reads as not modal";
    old_row["modal"] = "yes";
    EXPECT_THROW(lab::cell_from_json(old_row), std::runtime_error);

    const std::string csv = lab::to_csv(run);
    EXPECT_NE(csv.substr(0, csv.find('\n')).find(",p75_ns,modal,"), std::string::npos) << csv;

    const std::string table = lab::to_table(run);
    EXPECT_NE(table.find("3900.000~"), std::string::npos) << table;
    EXPECT_EQ(table.find("6.500~"), std::string::npos) << "the steady cell is not marked: " << table;
    EXPECT_NE(table.find("~ modal: the repetitions fall into separate modes"), std::string::npos) << table;
    EXPECT_NE(table.find("counter/mutex_ring/workers:2: 2 repetitions near 521 ns, 3 near 4096 ns"), std::string::npos)
        << table;
    EXPECT_EQ(lab::to_table(sample_run()).find("~ modal"), std::string::npos) << "no footnote without a modal cell";
}

TEST(ResultsIo, AFairnessNotMeasuredIsNullWithItsReasonAndMarkedInTheTableWithAFootnote) {
    auto run = sample_run();
    for (const int workers : {64, 16}) {
        lab::cell_result c = run.cells[0];
        c.workers = workers;
        c.min_share = c.max_share = lab::not_measured;
        c.fairness_reason = "too short at " + std::to_string(workers) + " workers";
        run.cells.push_back(c);
    }
    lab::cell_result again = run.cells[1];  // the same reason twice: one footnote
    again.contender = "std_mutex";
    run.cells.push_back(again);

    const json doc = json::parse(lab::to_json(run));
    EXPECT_TRUE(doc["benchmarks"][1]["min_share"].is_null());
    EXPECT_TRUE(doc["benchmarks"][1]["max_share"].is_null());
    EXPECT_EQ(doc["benchmarks"][1]["fairness_reason"], "too short at 64 workers");
    EXPECT_EQ(doc["benchmarks"][0]["fairness_reason"], "") << "measured: no reason";
    EXPECT_EQ(lab::run_from_json(lab::to_json(run)).cells[1].fairness_reason, "too short at 64 workers");

    const std::string table = lab::to_table(run);
    EXPECT_NE(table.find("0.50 / 1.50"), std::string::npos) << table;
    EXPECT_NE(table.find("n/m [1]"), std::string::npos) << table;
    EXPECT_NE(table.find("n/m [2]"), std::string::npos) << table;
    EXPECT_EQ(table.find("n/m [3]"), std::string::npos) << "one footnote per reason: " << table;
    EXPECT_NE(table.find("[1] min/max share not measured: too short at 64 workers\n"), std::string::npos) << table;
    EXPECT_NE(table.find("[2] min/max share not measured: too short at 16 workers\n"), std::string::npos) << table;

    // A file of before the reason: a null share on a cell that has fairness still says "n/m".
    lab::run_result old;
    old.cells.push_back(run.cells[1]);
    old.cells[0].fairness_reason.clear();
    EXPECT_NE(lab::to_table(old).find("[1] min/max share not measured: no figure was recorded"), std::string::npos);
}
