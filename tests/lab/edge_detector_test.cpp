// The edge detector of `contend compare --db`: a row changes only when the benchmark's series
// over the history has a change point between the two runs. The series are fixed values, so
// every verdict asserted is the same on every machine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analyze/compare.hpp"
#include "analyze/edge_detector.hpp"

namespace {

namespace lab = contend::lab;

constexpr int detector_runs = 12;
// 10 ns in r1..r6, 12 ns from r7 on, with a little noise of fixed values.
constexpr double step[detector_runs] = {10.05, 9.97,  10.02, 9.96,  10.01, 9.98,
                                        12.03, 11.95, 12.02, 11.99, 12.04, 11.97};
// A contended cell on a shared machine: each run lands in one of two modes, 20 or 30 ns, with
// a tight spread inside the run. r6 -> r7 jumps 22 -> 31 ns and the U test on their
// repetitions calls it significant; the series shows it is how this benchmark always moves.
constexpr double wobbly[detector_runs] = {20.0, 30.0, 21.0, 29.5, 20.5, 22.0, 31.0, 20.2, 30.2, 21.0, 29.0, 20.4};

lab::cell_result detector_cell(const std::string& contender, double median) {
    lab::cell_result cell;
    cell.suite = "counter";
    cell.contender = contender;
    cell.workers = 2;
    cell.repetitions = 10;
    for (const double f : {0.99, 0.992, 0.994, 0.996, 0.998, 1.002, 1.004, 1.006, 1.008, 1.01})
        cell.ns_per_op.push_back(median * f);
    cell.median_ns = median;
    cell.p25_ns = median * 0.995;
    cell.p75_ns = median * 1.005;
    return cell;
}

std::vector<lab::stored_run> history(int first = 0, int last = detector_runs) {
    std::vector<lab::stored_run> runs;
    for (int i = first; i < last; ++i) {
        lab::stored_run r;
        r.id = i + 1;
        r.run.context.label = std::string("r").append(std::to_string(i + 1));
        r.run.cells.push_back(detector_cell("step_lock", step[i]));
        r.run.cells.push_back(detector_cell("wobbly_lock", wobbly[i]));
        runs.push_back(std::move(r));
    }
    return runs;
}

// The run with this id as compare reads it: one series per cell, its repetitions.
lab::comparison_input input_of(const std::vector<lab::stored_run>& runs, std::int64_t id) {
    lab::comparison_input in;
    for (const auto& r : runs) {
        if (r.id != id) continue;
        in.source = in.label = r.run.context.label;
        for (const auto& cell : r.run.cells) in.benchmarks.push_back({cell.name(), cell.ns_per_op, cell.median_ns, ""});
    }
    return in;
}

const lab::compare_row& detector_row(const lab::comparison& c, const std::string& contender) {
    // Appends only: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string&&.
    std::string name = "counter/";
    name.append(contender).append("/workers:2");
    for (const auto& r : c.rows)
        if (r.name == name) return r;
    throw std::runtime_error("no row for " + contender);
}

lab::comparison compare(const std::vector<lab::stored_run>& runs, std::int64_t base, std::int64_t test,
                        bool with_history = true) {
    const auto edges = lab::edges_between(runs, base, test, {});
    return lab::compare_inputs(input_of(runs, base), input_of(runs, test), {}, with_history ? &edges : nullptr, {});
}

}  // namespace

TEST(EdgeDetector, WithoutTheHistoryBothJumpsAreRegressions) {
    // What the U test alone says of r6 -> r7: the premise of everything below.
    const auto c = compare(history(), 6, 7, false);
    EXPECT_EQ(detector_row(c, "step_lock").verdict, lab::compare_verdict::regression);
    EXPECT_EQ(detector_row(c, "wobbly_lock").verdict, lab::compare_verdict::regression);
    EXPECT_FALSE(c.edges_checked);
    EXPECT_EQ(lab::comparison_to_markdown(c, "x").find("History"), std::string::npos);
}

TEST(EdgeDetector, TheStepIsConfirmedAndTheRunToRunWobbleIsNoisy) {
    const auto c = compare(history(), 6, 7);
    const auto& s = detector_row(c, "step_lock");
    EXPECT_EQ(s.verdict, lab::compare_verdict::regression);
    EXPECT_TRUE(s.edge_checked);
    EXPECT_EQ(s.edge, lab::edge_state::change);
    EXPECT_NE(s.edge_detail.find("r6 -> r7"), std::string::npos) << s.edge_detail;
    const auto& w = detector_row(c, "wobbly_lock");
    EXPECT_EQ(w.verdict, lab::compare_verdict::noisy);
    EXPECT_EQ(w.edge, lab::edge_state::no_change);
    EXPECT_NE(w.reason.find("no change point"), std::string::npos) << w.reason;
    EXPECT_EQ(c.regressions, 1u);
    EXPECT_EQ(c.noisy, 1u);
}

TEST(EdgeDetector, AnyTwoRunsAcrossTheStepAreConfirmedInEitherOrder) {
    const auto runs = history();
    EXPECT_EQ(detector_row(compare(runs, 2, 11), "step_lock").edge, lab::edge_state::change);
    const auto reversed = compare(runs, 7, 6);  // the newer run as the baseline
    EXPECT_EQ(detector_row(reversed, "step_lock").verdict, lab::compare_verdict::improvement);
    EXPECT_EQ(detector_row(reversed, "step_lock").edge, lab::edge_state::change);
}

TEST(EdgeDetector, TwoRunsOnOneSideOfTheStepShowNoChange) {
    const auto c = compare(history(), 8, 10);
    EXPECT_EQ(detector_row(c, "step_lock").edge, lab::edge_state::no_change);
    EXPECT_EQ(detector_row(c, "step_lock").verdict, lab::compare_verdict::same);  // 11.95 -> 11.99: within 5 %
}

TEST(EdgeDetector, TooFewRunsAroundTheTwoLeavesTheUTestsVerdictUnconfirmed) {
    // r5..r8: two runs up to r6, so no change point can be found between r6 and r7.
    const auto runs = history(4, 8);
    const auto c = compare(runs, 6, 7);
    const auto& s = detector_row(c, "step_lock");
    EXPECT_EQ(s.edge, lab::edge_state::too_few_runs);
    EXPECT_EQ(s.verdict, lab::compare_verdict::regression);
    EXPECT_NE(s.reason.find("unconfirmed"), std::string::npos) << s.reason;
    EXPECT_EQ(detector_row(c, "wobbly_lock").verdict, lab::compare_verdict::regression);
}

TEST(EdgeDetector, TheReportsShowTheHistoryColumnAndTheJsonItsFields) {
    const auto c = compare(history(), 6, 7);
    const std::string md = lab::comparison_to_markdown(c, "contend compare --db h.db r6 r7");
    EXPECT_NE(md.find("| History |"), std::string::npos) << md;
    EXPECT_NE(md.find("change: r6 -&gt; r7"), std::string::npos) << md;
    EXPECT_NE(md.find("**History**"), std::string::npos) << "the column is explained";
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["edge_detector"]["min_segment"], 3);
    bool found = false;
    for (const auto& r : j["rows"]) {
        if (r["name"] != "counter/step_lock/workers:2") continue;
        found = true;
        EXPECT_EQ(r["edge"], "change");
    }
    EXPECT_TRUE(found);
}

TEST(EdgeDetector, ABenchmarkMissingFromOneRunHasNoEvidence) {
    auto runs = history();
    runs[6].run.cells.pop_back();  // r7 lost wobbly_lock
    const auto edges = lab::edges_between(runs, 6, 7, {});
    EXPECT_EQ(edges.count("counter/wobbly_lock/workers:2"), 0u);
    EXPECT_EQ(edges.count("counter/step_lock/workers:2"), 1u);
}
