// contend compare: verdicts, counts, escaping, and the report's Markdown and JSON against
// golden files.
#include "analyze/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "analyze/inputs.hpp"

namespace lab = contend::lab;

namespace {

lab::benchmark_series series(std::string name, std::vector<double> samples) {
    lab::benchmark_series s;
    s.name = std::move(name);
    s.samples_ns = std::move(samples);
    std::vector<double> sorted = s.samples_ns;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    s.median_ns = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    return s;
}

lab::comparison_input input(std::string source, std::vector<lab::benchmark_series> b) {
    lab::comparison_input in;
    in.source = std::move(source);
    in.format = "contend-lab";
    in.label = in.source == "base.json" ? "v1" : "v2";
    in.cpu_model = "AMD EPYC";
    in.benchmarks = std::move(b);
    return in;
}

const lab::compare_row& row(const lab::comparison& c, const std::string& name) {
    for (const auto& r : c.rows)
        if (r.name == name) return r;
    throw std::runtime_error("no row " + name);
}

// CONTEND_UPDATE_GOLDEN=1 rewrites the golden files from the current output, then fails the
// test: a run that rewrote its own expectation proves nothing, and must never be mistaken for
// a passing one. Re-run without the variable and review the diff before committing it.
void maybe_update(const std::string& file, const std::string& text) {
    if (std::getenv("CONTEND_UPDATE_GOLDEN") == nullptr) return;
    const std::string path = std::string(CONTEND_LAB_GOLDEN_DIR) + "/compare/" + file;
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
        ADD_FAILURE() << "could not write golden file " << path;
        return;
    }
    ADD_FAILURE() << "golden file " << path << " rewritten; re-run without CONTEND_UPDATE_GOLDEN and review the diff";
}

std::string golden_text(const std::string& file) {
    std::ifstream in(std::string(CONTEND_LAB_GOLDEN_DIR) + "/compare/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Base and test of the golden report: one of each verdict, one benchmark on each side only,
// one cell that timed out on both sides.
lab::comparison golden_comparison() {
    auto base = input("base.json", {series("counter/contend_mutex/workers:2", {10, 10.1, 9.9, 10.05, 9.95}),
                                    series("counter/std_mutex/workers:2", {20, 20.2, 19.8, 20.1, 19.9}),
                                    series("hold/contend_mutex/cs_us:1/workers:4", {1000, 1001, 999, 1002, 998}),
                                    series("counter/tas_lock/workers:2", {30, 20, 40, 25, 35}),
                                    series("counter/retired/workers:2", {5, 5, 5, 5, 5})});
    auto test = input("test.json", {series("counter/contend_mutex/workers:2", {12, 12.1, 11.9, 12.05, 11.95}),
                                    series("counter/std_mutex/workers:2", {16, 16.2, 15.8, 16.1, 15.9}),
                                    series("hold/contend_mutex/cs_us:1/workers:4", {1010, 1011, 1009, 1012, 1008}),
                                    series("counter/tas_lock/workers:2", {36, 24, 45, 30, 40}),
                                    series("counter/new_lock/workers:2", {7, 7, 7, 7, 7})});
    base.skipped = {{"counter/ticket_lock/workers:2", "timed_out: no repetition finished within 3 s", "timed_out"}};
    test.skipped = base.skipped;
    return lab::compare_inputs(base, test, {});
}

}  // namespace

TEST(Compare, ASlowdownPastTheThresholdWithSeparatedSamplesIsARegression) {
    const auto c = golden_comparison();
    const auto& r = row(c, "counter/contend_mutex/workers:2");
    EXPECT_EQ(r.verdict, lab::compare_verdict::regression);
    EXPECT_NEAR(r.ratio, 1.2, 1e-9);
    EXPECT_LT(r.p_value, 0.05);
}

TEST(Compare, ASpeedupPastTheThresholdWithSeparatedSamplesIsAnImprovement) {
    const auto c = golden_comparison();
    EXPECT_EQ(row(c, "counter/std_mutex/workers:2").verdict, lab::compare_verdict::improvement);
}

TEST(Compare, AChangeWithinTheThresholdIsTheSame) {
    const auto c = golden_comparison();
    const auto& r = row(c, "hold/contend_mutex/cs_us:1/workers:4");
    EXPECT_EQ(r.verdict, lab::compare_verdict::same);  // +1 %, clearly significant, still the same
    EXPECT_LT(r.p_value, 0.05);
}

TEST(Compare, APastThresholdChangeWithOverlappingSamplesIsNoisyNotARegression) {
    const auto c = golden_comparison();
    EXPECT_EQ(row(c, "counter/tas_lock/workers:2").verdict, lab::compare_verdict::noisy);
}

TEST(Compare, AChangeBelowTheNoiseFloorIsTheSameWhateverTheRatio) {
    const auto base = input("base.json", {series("tiny", {1.0, 1.0, 1.0, 1.0, 1.0})});
    const auto test = input("test.json", {series("tiny", {1.3, 1.3, 1.3, 1.3, 1.3})});
    const auto c = lab::compare_inputs(base, test, {});
    EXPECT_EQ(c.rows.at(0).verdict, lab::compare_verdict::same);  // +30 % but 0.3 ns < 0.5 ns
    lab::compare_options no_floor;
    no_floor.noise_floor_ns = 0;
    EXPECT_EQ(lab::compare_inputs(base, test, no_floor).rows.at(0).verdict, lab::compare_verdict::regression);
}

TEST(Compare, SingleSamplesCannotBeTestedAndArePastThresholdNoisy) {
    const auto base = input("base.json", {series("one", {10})});
    const auto test = input("test.json", {series("one", {20})});
    const auto c = lab::compare_inputs(base, test, {});
    EXPECT_EQ(c.rows.at(0).verdict, lab::compare_verdict::noisy);
    EXPECT_TRUE(std::isnan(c.rows.at(0).p_value));
}

TEST(Compare, BenchmarksOnOneSideAreListedAndCountsAndGeomeanAddUp) {
    const auto c = golden_comparison();
    EXPECT_EQ(c.rows.size(), 4u);
    EXPECT_EQ(c.only_in_base, (std::vector<std::string>{"counter/retired/workers:2"}));
    EXPECT_EQ(c.only_in_test, (std::vector<std::string>{"counter/new_lock/workers:2"}));
    EXPECT_EQ(c.regressions + c.improvements + c.same + c.noisy, c.rows.size());
    EXPECT_EQ(c.regressions, 1u);
    EXPECT_EQ(c.improvements, 1u);
    double log_sum = 0;
    for (const auto& r : c.rows) log_sum += std::log(r.ratio);
    EXPECT_NEAR(c.geomean_ratio, std::exp(log_sum / 4), 1e-12);
}

TEST(Compare, OptionsOutOfRangeThrowInvalidArgument) {
    const auto base = input("base.json", {});
    lab::compare_options o;
    o.threshold = -0.1;
    EXPECT_THROW(lab::compare_inputs(base, base, o), std::invalid_argument);
    o = {};
    o.noise_floor_ns = std::nan("");
    EXPECT_THROW(lab::compare_inputs(base, base, o), std::invalid_argument);
    o = {};
    o.alpha = 1;
    EXPECT_THROW(lab::compare_inputs(base, base, o), std::invalid_argument);
}

TEST(Compare, HostileNamesAreEscapedInMarkdownAndKeptExactInJson) {
    const std::string hostile = "<script>alert(1)</script>|*bold*|`code`|[link](x)";
    // A regression, so that the name is printed in a table row.
    const auto base = input("base.json", {series(hostile, {10, 10.1, 9.9, 10.2, 9.8})});
    const auto test = input("test.json", {series(hostile, {20, 20.1, 19.9, 20.2, 19.8})});
    const auto c = lab::compare_inputs(base, test, {});
    const std::string md = lab::comparison_to_markdown(c, "contend compare 'a b' c");
    EXPECT_EQ(md.find("<script>"), std::string::npos);
    EXPECT_NE(md.find("&lt;script&gt;"), std::string::npos);
    EXPECT_EQ(md.find("|*bold*|"), std::string::npos) << "a '|' would split the table row";
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["rows"][0]["name"], hostile);
}

TEST(Compare, TheMarkdownReportMatchesItsGoldenFile) {
    const std::string md = lab::comparison_to_markdown(golden_comparison(), "contend compare base.json test.json");
    maybe_update("report.md", md);
    EXPECT_EQ(md, golden_text("report.md")) << md;
}

TEST(Compare, TheJsonReportMatchesItsGoldenFile) {
    const std::string json = lab::comparison_to_json(golden_comparison());
    maybe_update("report.json", json);
    EXPECT_EQ(json, golden_text("report.json")) << json;
}

// --- A side whose repetitions fall into separate modes --------------------------------------

TEST(Compare, AChangeOfASideWithSeparateModesIsNoisyNotAChange) {
    // Without the rule a regression: every test repetition is slower than every baseline one
    // (p < 0.001). But the baseline ran in two modes, 5 near 520 ns and 4 near 4,015 ns: its
    // median is one mode's, and the test may only have landed in the other mode every time.
    const std::string name = "pipe/mutex_ring/chunk:4096/workers:2";
    const auto base = input("base.json", {series(name, {500, 510, 520, 530, 540, 4000, 4010, 4020, 4030})});
    const auto test = input("test.json", {series(name, {4100, 4110, 4120, 4130, 4140, 4150, 4160, 4170, 4180})});
    const auto c = lab::compare_inputs(base, test, {});
    const auto& r = c.rows.at(0);
    EXPECT_LT(r.p_value, 0.001);
    EXPECT_EQ(r.verdict, lab::compare_verdict::noisy);
    EXPECT_TRUE(r.base_modal);
    EXPECT_FALSE(r.test_modal);
    EXPECT_NE(r.reason.find("separate modes"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("the baseline: 5 repetitions near 520 ns, 4 near 4015 ns"), std::string::npos) << r.reason;
    EXPECT_EQ(c.regressions, 0u);
    EXPECT_EQ(c.noisy, 1u);

    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["rows"][0]["baseline_modal"], true);
    EXPECT_EQ(j["rows"][0]["test_modal"], false);
    EXPECT_EQ(j["rows"][0]["verdict"], "noisy");
    const std::string md = lab::comparison_to_markdown(c, "contend compare base.json test.json");
    EXPECT_NE(md.find("separate modes"), std::string::npos) << md;

    // The same the other way round: the test side is the modal one.
    const auto reversed = lab::compare_inputs(test, base, {});
    EXPECT_EQ(reversed.rows.at(0).verdict, lab::compare_verdict::noisy);
    EXPECT_TRUE(reversed.rows.at(0).test_modal);
}

TEST(Compare, TheLabsModalFlagCountsEvenWhenTheSamplesAloneWouldNotShowIt) {
    auto base = input("base.json", {series("a", {10, 10.1, 9.9, 10.05, 9.95})});
    const auto test = input("test.json", {series("a", {20, 20.1, 19.9, 20.2, 19.8})});
    EXPECT_EQ(lab::compare_inputs(base, test, {}).rows.at(0).verdict, lab::compare_verdict::regression);
    base.benchmarks[0].flagged_modal = true;
    const auto flagged = lab::compare_inputs(base, test, {});  // outlives r, which refers into it
    const auto& r = flagged.rows.at(0);
    EXPECT_EQ(r.verdict, lab::compare_verdict::noisy);
    EXPECT_NE(r.reason.find("the baseline was flagged modal when measured"), std::string::npos) << r.reason;
}

TEST(Compare, AModalSideWithinTheThresholdStaysTheSame) {
    const std::vector<double> modal = {500, 510, 4000, 4010, 4020};
    const auto c =
        lab::compare_inputs(input("base.json", {series("a", modal)}), input("test.json", {series("a", modal)}), {});
    EXPECT_EQ(c.rows.at(0).verdict, lab::compare_verdict::same);
    EXPECT_TRUE(c.rows.at(0).base_modal);
}

// --- A side measured beside a co-tenant ------------------------------------------------------

// A regression by every test (p < 0.01, twice the time), but the test side was measured while
// other processes took 42 % of its CPUs (cell_result::others_cpu_share): noisy, with the reason
// said; a share under the mark's 5 % leaves the regression standing.
TEST(Compare, AChangeOfASideMeasuredBesideACoTenantIsNoisyWithTheReason) {
    const auto base = input("base.json", {series("a", {10, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98, 10.03, 9.97})});
    auto test = input("test.json", {series("a", {20, 20.1, 19.9, 20.2, 19.8, 20.05, 19.95, 20.15, 19.85})});
    test.benchmarks[0].others_cpu_share = 0.01;
    EXPECT_EQ(lab::compare_inputs(base, test, {}).rows.at(0).verdict, lab::compare_verdict::regression);
    test.benchmarks[0].others_cpu_share = 0.42;
    const auto c = lab::compare_inputs(base, test, {});
    const auto& r = c.rows.at(0);
    EXPECT_EQ(r.verdict, lab::compare_verdict::noisy);
    EXPECT_NE(r.reason.find("measured beside a co-tenant: other processes took 42.0 % of the test's CPUs"),
              std::string::npos)
        << r.reason;
    EXPECT_EQ(c.regressions, 0u);
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["rows"][0]["test_others_cpu_share"], 0.42);
    EXPECT_TRUE(j["rows"][0]["baseline_others_cpu_share"].is_null());
    // An improvement beside a co-tenant is no improvement either.
    const auto reversed = lab::compare_inputs(test, base, {});
    EXPECT_EQ(reversed.rows.at(0).verdict, lab::compare_verdict::noisy);
    EXPECT_NE(reversed.rows.at(0).reason.find("the baseline's CPUs"), std::string::npos) << reversed.rows.at(0).reason;
}

// --- The suite as a whole -------------------------------------------------------------------

namespace {

// `n` benchmarks of 3 repetitions a side that overlap within each benchmark (so no row is
// significant alone), every test `factor` times its baseline.
lab::comparison whole_suite_moved(std::size_t n, double factor, double noise = 0.3) {
    std::vector<lab::benchmark_series> b, t;
    for (std::size_t i = 0; i < n; ++i) {
        const double ns = 100 + static_cast<double>(i);
        const std::string name = "suite/bench_" + std::to_string(i);
        b.push_back(series(name, {ns * (1 - noise), ns, ns * (1 + noise) * factor * 2}));
        t.push_back(series(name, {ns * factor * (1 - noise), ns * factor, ns * factor * (1 + noise)}));
    }
    return lab::compare_inputs(input("base.json", std::move(b)), input("test.json", std::move(t)), {});
}

}  // namespace

TEST(Compare, ThreeTiedRepetitionsAgainstThreeAreNotARegressionAloneButUndecidedAndFailTheGate) {
    const auto c = lab::compare_inputs(input("base.json", {series("tied", {10, 10, 10})}),
                                       input("test.json", {series("tied", {20, 20, 20})}), {});
    EXPECT_NEAR(c.rows.at(0).p_value, 0.1, 1e-12);  // exact; the normal approximation said 0.047
    // Not significant, so no regression; but no 3 against 3 could be: a doubling the eye sees
    // is undecided, and fails the gate.
    EXPECT_EQ(c.rows.at(0).verdict, lab::compare_verdict::undecided);
    EXPECT_FALSE(lab::has_regression(c));  // one benchmark: the suite cannot tell either
    EXPECT_FALSE(lab::gate_failures(c).empty());
}

TEST(Compare, AWholeSuiteTwiceAsSlowIsASuiteRegressionThoughEveryRowIsNoisy) {
    const auto c = whole_suite_moved(200, 2.0);
    EXPECT_EQ(c.regressions, 0u);
    EXPECT_EQ(c.noisy, 200u);
    EXPECT_NEAR(c.geomean_ratio, 2.0, 1e-9);
    EXPECT_EQ(c.suite.verdict, lab::compare_verdict::regression);
    EXPECT_EQ(c.suite.slower, 200u);
    EXPECT_LT(c.suite.p_value, 1e-50);
    EXPECT_TRUE(lab::has_regression(c));
    EXPECT_NE(lab::suite_sentence(c).find("Suite: regression"), std::string::npos) << lab::suite_sentence(c);
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["summary"]["suite"]["verdict"], "regression");
    EXPECT_EQ(j["summary"]["suite"]["slower"], 200);
    const std::string md = lab::comparison_to_markdown(c, "contend compare base.json test.json");
    EXPECT_NE(md.find("**Suite: regression"), std::string::npos) << md.substr(0, 2000);
}

TEST(Compare, AWholeSuiteTwiceAsFastIsASuiteImprovementAndPassesTheGate) {
    const auto c = whole_suite_moved(200, 0.5);
    EXPECT_EQ(c.suite.verdict, lab::compare_verdict::improvement);
    EXPECT_FALSE(lab::has_regression(c));
}

TEST(Compare, ASuiteWithinTheThresholdOrMovingBothWaysIsNoSuiteRegression) {
    EXPECT_EQ(whole_suite_moved(200, 1.01).suite.verdict, lab::compare_verdict::same);  // +1 %: within 5 %
    // Half the benchmarks 4x slower, half 1.5x faster: the mean is past 5 %, the signs are even.
    std::vector<lab::benchmark_series> b, t;
    for (int i = 0; i < 100; ++i) {
        const std::string name = "mixed/" + std::to_string(i);
        b.push_back(series(name, {100, 100, 100}));
        t.push_back(series(name, i % 2 ? std::vector<double>{400, 400, 400} : std::vector<double>{66, 66, 66}));
    }
    const auto c = lab::compare_inputs(input("base.json", b), input("test.json", t), {});
    EXPECT_GT(c.geomean_ratio, 1.05);
    EXPECT_EQ(c.suite.verdict, lab::compare_verdict::noisy);
    EXPECT_FALSE(lab::has_regression(c));
}

TEST(Compare, MediansWhoseRatioOverflowsStillGiveAGeometricMean) {
    // 1e-300 ns against 1e300 ns: the ratio is infinite, its logarithm is not.
    const auto c = lab::compare_inputs(input("base.json", {series("huge", {1e-300, 1e-300, 1e-300})}),
                                       input("test.json", {series("huge", {1e300, 1e300, 1e300})}), {});
    EXPECT_EQ(c.rows.size(), 1u);
    EXPECT_TRUE(std::isinf(c.geomean_ratio) || c.geomean_ratio > 1e300);
}

TEST(Compare, AMedianThatIsNotPositiveIsRefusedNamingTheFileAndTheBenchmark) {
    auto base = input("base.json", {series("zero_median", {1, 2, 3})});
    base.benchmarks[0].median_ns = 0;
    try {
        (void)lab::compare_inputs(base, input("test.json", {series("zero_median", {1, 2, 3})}), {});
        FAIL() << "accepted a median of 0";
    } catch (const lab::input_error& e) {
        EXPECT_NE(std::string(e.what()).find("base.json"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("zero_median"), std::string::npos) << e.what();
    }
}

// --- A test side that measured nothing (issue item 8) ---------------------------------------

namespace {

lab::skipped_benchmark failed_cell(std::string name, std::string status, std::string detail) {
    return {std::move(name), status + ": " + detail, status};
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
    for (const auto& l : lines)
        if (l.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST(CompareGate, ATestWhoseEveryCellTimedOutFailsTheGateAndListsEachCellWithItsReason) {
    const auto base = input("base.json", {series("counter/contend_mutex/workers:2", {10, 10.1, 9.9, 10.05, 9.95}),
                                          series("counter/std_mutex/workers:2", {20, 20.2, 19.8, 20.1, 19.9})});
    auto test = input("test.json", {});
    test.skipped = {failed_cell("counter/contend_mutex/workers:2", "timed_out", "no repetition finished within 3 s"),
                    failed_cell("counter/std_mutex/workers:2", "crashed", "killed by signal 11")};
    const auto c = lab::compare_inputs(base, test, {});
    EXPECT_TRUE(c.rows.empty());
    const auto failures = lab::gate_failures(c);
    EXPECT_FALSE(failures.empty());
    EXPECT_TRUE(mentions(failures, "nothing was compared")) << testing::PrintToString(failures);
    EXPECT_TRUE(mentions(failures, "2 cells the baseline measured")) << testing::PrintToString(failures);
    // Each skipped cell with its reason, not as "only in the baseline".
    ASSERT_EQ(c.unmeasured_in_test.size(), 2u);
    EXPECT_TRUE(c.unmeasured_in_test[0].fails_gate);
    EXPECT_TRUE(c.only_in_base.empty());
    const std::string md = lab::comparison_to_markdown(c, "contend compare base.json test.json");
    EXPECT_NE(md.find("counter/contend\\_mutex/workers:2: timed\\_out: no repetition finished within 3 s"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("counter/std\\_mutex/workers:2: crashed: killed by signal 11"), std::string::npos) << md;
    EXPECT_NE(md.find("**Gate: fails**"), std::string::npos) << md;
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["not_measured_in_test"][0]["reason"], "timed_out: no repetition finished within 3 s");
    EXPECT_EQ(j["not_measured_in_test"][0]["fails_gate"], true);
    EXPECT_EQ(j["summary"]["gate"]["passes"], false);
}

TEST(CompareGate, NothingComparedFailsTheGateWhateverTheReason) {
    const auto some = input("base.json", {series("a", {10, 10, 10})});
    const auto none = input("test.json", {});
    const auto other = input("test.json", {series("b", {10, 10, 10})});
    for (const auto& [b, t] :
         {std::pair{some, none}, std::pair{none, some}, std::pair{none, none}, std::pair{some, other}}) {
        const auto c = lab::compare_inputs(b, t, {});
        EXPECT_TRUE(mentions(lab::gate_failures(c), "nothing was compared")) << lab::comparison_to_markdown(c, "");
    }
    // One benchmark compared and unchanged: the gate passes.
    EXPECT_TRUE(lab::gate_failures(lab::compare_inputs(some, some, {})).empty());
}

TEST(CompareGate, ATestCellThatFailedFailsTheGateOnlyWhereTheBaselineMeasuredIt) {
    auto base = input("base.json",
                      {series("a", {10, 10.1, 9.9}), series("b", {20, 20.1, 19.9}), series("c", {30, 30.1, 29.9})});
    base.skipped = {failed_cell("d", "timed_out", "ran past 3 s")};
    auto test = input("test.json", {series("a", {10, 10.1, 9.9})});
    // b: measured before, timed out now: fails. c: not run because its contender timed out at
    // fewer workers ("skipped"): listed, no failure of its own. d: failed on both sides.
    // e: new, and failed: nothing to compare it with.
    test.skipped = {failed_cell("b", "timed_out", "ran past 3 s"), failed_cell("c", "skipped", "timed out at 2"),
                    failed_cell("d", "timed_out", "ran past 3 s"), failed_cell("e", "crashed", "signal 6")};
    const auto c = lab::compare_inputs(base, test, {});
    ASSERT_EQ(c.unmeasured_in_test.size(), 4u);
    EXPECT_TRUE(c.unmeasured_in_test[0].fails_gate);
    EXPECT_FALSE(c.unmeasured_in_test[1].fails_gate);
    EXPECT_FALSE(c.unmeasured_in_test[2].fails_gate);
    EXPECT_FALSE(c.unmeasured_in_test[3].fails_gate);
    ASSERT_EQ(c.unmeasured_in_base.size(), 1u);
    EXPECT_TRUE(c.only_in_base.empty()) << "b and c are listed as not measured, with their reasons";
    const auto failures = lab::gate_failures(c);
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_NE(failures[0].find("1 cell the baseline measured"), std::string::npos) << failures[0];

    // Failed on both sides: the gate passes.
    test.skipped.erase(test.skipped.begin());
    test.benchmarks.push_back(series("b", {20, 20.1, 19.9}));
    EXPECT_TRUE(lab::gate_failures(lab::compare_inputs(base, test, {})).empty());
}

// --- Too few repetitions for the U test (issue item 9) --------------------------------------

namespace {

// 40 benchmarks of 3 repetitions a side (+-1 %), 8 of them from 1,000 to 2,000 ns.
lab::comparison partial_doubling(const lab::compare_options& o = {}) {
    std::vector<lab::benchmark_series> b, t;
    for (int i = 0; i < 40; ++i) {
        const std::string name = "suite/bench_" + std::to_string(i);
        const double ns = 1000;
        const double factor = i < 8 ? 2.0 : (i % 2 ? 1.01 : 0.99);
        b.push_back(series(name, {ns * 0.99, ns, ns * 1.01}));
        t.push_back(series(name, {ns * factor * 0.99, ns * factor, ns * factor * 1.01}));
    }
    return lab::compare_inputs(input("base.json", std::move(b)), input("test.json", std::move(t)), o);
}

}  // namespace

TEST(CompareGate, APartialDoublingAtThreeRepetitionsIsUndecidedAndFailsTheGate) {
    const auto c = partial_doubling();
    EXPECT_EQ(c.regressions, 0u);  // 3 against 3 can never reach p < 0.05
    EXPECT_EQ(c.undecided, 8u);
    const auto& r = row(c, "suite/bench_0");
    EXPECT_EQ(r.verdict, lab::compare_verdict::undecided);
    EXPECT_NEAR(r.p_value, 0.1, 1e-12);
    EXPECT_NE(r.reason.find("every test repetition is slower than every baseline one"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("at least 4 repetitions a side"), std::string::npos) << r.reason;
    const auto failures = lab::gate_failures(c);
    EXPECT_TRUE(mentions(failures, "8 benchmarks undecided and slower")) << testing::PrintToString(failures);
    const std::string md = lab::comparison_to_markdown(c, "contend compare base.json test.json");
    EXPECT_NE(md.find("## Undecided"), std::string::npos) << md;
    EXPECT_NE(md.find("**Gate: fails**"), std::string::npos) << md;
    const auto j = nlohmann::json::parse(lab::comparison_to_json(c));
    EXPECT_EQ(j["summary"]["undecided"], 8);
    EXPECT_EQ(j["rows"][0]["verdict"], "undecided");

    // --no-fail-on-undecided: still reported, the gate passes.
    lab::compare_options warn;
    warn.fail_on_undecided = false;
    const auto warned = partial_doubling(warn);
    EXPECT_EQ(warned.undecided, 8u);
    EXPECT_TRUE(lab::gate_failures(warned).empty());
    EXPECT_NE(lab::gate_sentence(warned).find("passes, with a warning: 8 benchmarks are undecided and slower"),
              std::string::npos)
        << lab::gate_sentence(warned);
    EXPECT_NE(lab::comparison_to_markdown(warned, "").find("Gate: passes, with a warning"), std::string::npos);
}

TEST(CompareGate, UndecidedNeedsSamplesThatDoNotOverlapAndTooFewRepetitionsToDecide) {
    // Overlapping samples stay noisy: the eye cannot tell them apart either.
    const auto overlap = lab::compare_inputs(input("base.json", {series("a", {10, 20, 30})}),
                                             input("test.json", {series("a", {15, 25, 35})}), {});
    EXPECT_EQ(overlap.rows.at(0).verdict, lab::compare_verdict::noisy);
    // Separated, with enough repetitions: the U test decides, a regression.
    const auto enough = lab::compare_inputs(input("base.json", {series("a", {10, 10.1, 9.9, 10.05})}),
                                            input("test.json", {series("a", {20, 20.1, 19.9, 20.05})}), {});
    EXPECT_EQ(enough.rows.at(0).verdict, lab::compare_verdict::regression);
    // Faster beyond doubt at 3 a side: undecided too, and no failure.
    const auto faster = lab::compare_inputs(input("base.json", {series("a", {20, 20.1, 19.9})}),
                                            input("test.json", {series("a", {10, 10.1, 9.9})}), {});
    EXPECT_EQ(faster.rows.at(0).verdict, lab::compare_verdict::undecided);
    EXPECT_NE(faster.rows.at(0).reason.find("faster"), std::string::npos) << faster.rows.at(0).reason;
    EXPECT_TRUE(lab::gate_failures(faster).empty());
    // One repetition a side: nothing to test, noisy as before.
    const auto single =
        lab::compare_inputs(input("base.json", {series("a", {10})}), input("test.json", {series("a", {20})}), {});
    EXPECT_EQ(single.rows.at(0).verdict, lab::compare_verdict::noisy);
    // A modal side: noisy, as a significant change would be.
    const auto modal = lab::compare_inputs(input("base.json", {series("a", {100, 101, 800, 801})}),
                                           input("test.json", {series("a", {2000, 2010, 2020})}), {});
    EXPECT_EQ(modal.rows.at(0).verdict, lab::compare_verdict::noisy);
}

// --- Modes named on every row (issue item 21) -----------------------------------------------

TEST(CompareModes, ABimodalSideIsNamedOnARowItDoesNotFlip) {
    // The test side: 5 repetitions near 100 ns, 4 near 802. Its median (the fifth) is 103 ns,
    // +3 % against 100: within the threshold, or past a tighter one and noisy because the
    // samples overlap (the U test cannot tell them apart); either way the modes are named.
    const std::string name = "pipe/mutex_ring/chunk:4096/workers:2";
    const auto base = input("base.json", {series(name, {95, 96, 97, 98, 100, 102, 103, 104, 105})});
    const auto test = input("test.json", {series(name, {96, 98, 100, 102, 103, 800, 801, 803, 804})});
    const auto same = lab::compare_inputs(base, test, {});
    EXPECT_EQ(same.rows.at(0).verdict, lab::compare_verdict::same);
    EXPECT_TRUE(same.rows.at(0).test_modal);
    EXPECT_NE(same.rows.at(0).reason.find("the test: 5 repetitions near 100 ns, 4 near 802 ns"), std::string::npos)
        << same.rows.at(0).reason;
    lab::compare_options tight;
    tight.threshold = 0.01;
    const auto noisy = lab::compare_inputs(base, test, tight);
    const auto& r = noisy.rows.at(0);
    EXPECT_EQ(r.verdict, lab::compare_verdict::noisy);
    EXPECT_NE(r.reason.find("U test does not tell the samples apart"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("the test: 5 repetitions near 100 ns, 4 near 802 ns"), std::string::npos) << r.reason;
    const std::string md = lab::comparison_to_markdown(noisy, "contend compare base.json test.json");
    EXPECT_NE(md.find("5 repetitions near 100 ns, 4 near 802 ns"), std::string::npos) << md;
}

// --- A zero threshold on identical inputs (issue item 20) -----------------------------------

TEST(Compare, IdenticalInputsWithZeroThresholdAndNoiseFloorAreTheSame) {
    lab::compare_options zero;
    zero.threshold = 0;
    zero.noise_floor_ns = 0;
    const auto base = input("base.json", {series("a", {10, 10.1, 9.9}), series("b", {20, 20.2, 19.8, 20.1, 19.9}),
                                          series("c", {5, 5, 5}), series("d", {1000})});
    const auto c = lab::compare_inputs(base, base, zero);
    EXPECT_EQ(c.same, 4u);
    EXPECT_EQ(c.noisy, 0u);
    for (const auto& r : c.rows) EXPECT_EQ(r.reason.find("past the threshold"), std::string::npos) << r.reason;
    EXPECT_EQ(c.suite.verdict, lab::compare_verdict::same);
    EXPECT_EQ(c.suite.reason.find("past the threshold"), std::string::npos) << c.suite.reason;
    // A real change still counts at a zero threshold.
    const auto moved = lab::compare_inputs(base, input("test.json", {series("a", {10.2, 10.3, 10.25})}), zero);
    EXPECT_EQ(moved.rows.at(0).verdict, lab::compare_verdict::undecided);
}
