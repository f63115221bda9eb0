// The history as the regression reporter reads it: a label's run as an input of `contend
// compare --db`, and change points over each benchmark's series of runs; then the CLI end to
// end (`contend history list`, `contend history --changes`, `contend compare --db`). The
// series are fixed values, so every figure asserted is the same on every machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/history_series.hpp"
#include "run_cli.hpp"
#include "temp_dir.hpp"
#include "text/numbers.hpp"

namespace {

namespace lab = contend::lab;
using contend_test::shell_quote;

constexpr int run_count = 12;
// The step: 10 ns in r1..r6, 12 ns from r7 on (+20 %), with a little noise of fixed values.
constexpr double step_noise[run_count] = {0.05, -0.03, 0.02, -0.04, 0.01, -0.02, 0.03, -0.05, 0.02, -0.01, 0.04, -0.03};

lab::cell_result make_cell(const std::string& contender, double median) {
    lab::cell_result cell;
    cell.suite = "counter";
    cell.contender = contender;
    cell.workers = 2;
    cell.ops_per_worker = 1000;
    cell.repetitions = 5;
    // Five samples around the median (+/- 0.5 % and 1 %), so a U test between two runs can
    // reach significance (5 against 5 gives p = 0.008 at best).
    for (const double f : {0.99, 0.995, 1.0, 1.005, 1.01}) cell.ns_per_op.push_back(median * f);
    cell.median_ns = median;
    cell.p25_ns = median * 0.995;
    cell.p75_ns = median * 1.005;
    cell.cpu_ns_per_op = median * 2;
    return cell;
}

// Run i (0-based), labelled r<i+1>: a stepping benchmark, a flat one and one with one spike.
lab::run_result make_run(int i) {
    lab::run_result run;
    run.context.date = "2026-11-" + std::to_string(10 + i) + "T12:00:00Z";
    run.context.label = "r" + std::to_string(i + 1);
    run.context.cpu_model = "Test CPU 9000";
    run.context.logical_cpus = 2;
    run.cells.push_back(make_cell("step_lock", (i < 6 ? 10.0 : 12.0) + step_noise[i]));
    run.cells.push_back(make_cell("flat_lock", 20.0 + step_noise[(i + 5) % run_count]));
    run.cells.push_back(make_cell("spike_lock", i == 8 ? 60.0 : 30.0 + step_noise[(i + 3) % run_count]));
    return run;
}

class HistorySeries : public contend_test::temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        db_ = path("history.db");
        lab::history_store store(db_);
        for (int i = 0; i < run_count; ++i) store.append(make_run(i));
    }
    std::string db_;
};

}  // namespace

TEST_F(HistorySeries, FindsTheStepBetweenItsTwoLabelsAndNothingElse) {
    const lab::history_store store(db_, lab::history_access::read_only);
    const auto changes = lab::history_changes(store.stored_runs(), "", {});
    ASSERT_EQ(changes.size(), 1u);
    const auto& c = changes[0];
    EXPECT_EQ(c.name, "counter/step_lock/workers:2");
    EXPECT_EQ(c.point.index, 6u);
    EXPECT_EQ(c.label_before, "r6");
    EXPECT_EQ(c.label_after, "r7");
    EXPECT_EQ(c.run_after, c.run_before + 1);
    EXPECT_NEAR(c.point.before_mean, 10, 0.05);
    EXPECT_NEAR(c.point.after_mean, 12, 0.05);
}

TEST_F(HistorySeries, TheGlobChoosesTheBenchmarks) {
    const lab::history_store store(db_, lab::history_access::read_only);
    EXPECT_EQ(lab::history_changes(store.stored_runs(), "counter/step_*", {}).size(), 1u);
    EXPECT_TRUE(lab::history_changes(store.stored_runs(), "counter/flat_*", {}).empty());
    EXPECT_TRUE(lab::history_changes(store.stored_runs(), "nothing*", {}).empty());
}

TEST_F(HistorySeries, ARunWithoutAValidCellIsLeftOutOfTheSeriesAndAnUnlabelledRunIsNamedById) {
    {
        // A run in the middle of the new level whose step cell timed out, and one without a label.
        lab::history_store store(db_);
        lab::run_result timed_out = make_run(7);
        timed_out.context.label = "broken";
        timed_out.cells[0].status = "timed_out";
        store.append(timed_out);
        lab::run_result unlabelled = make_run(9);
        unlabelled.context.label = "";
        store.append(unlabelled);
    }
    const lab::history_store store(db_, lab::history_access::read_only);
    auto runs = store.stored_runs();
    // The unlabelled run, put at the old level and moved before r1: one more point of the
    // old level, so the step is at index 7; the timed-out run adds nothing to the step's series.
    runs.back().run.cells[0] = make_cell("step_lock", 10.0);
    std::rotate(runs.begin(), runs.end() - 1, runs.end());
    const auto changes = lab::history_changes(runs, "", {});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].label_before, "r6");
    EXPECT_EQ(changes[0].label_after, "r7");
    EXPECT_EQ(changes[0].point.index, 7u);

    // Without its label, the run before the step is named by its id.
    std::vector<lab::stored_run> unlabelled_r6(runs.begin() + 1, runs.begin() + 1 + run_count);
    unlabelled_r6[5].run.context.label = "";
    const auto by_id = lab::history_changes(unlabelled_r6, "counter/step_lock/*", {});
    ASSERT_EQ(by_id.size(), 1u);
    EXPECT_EQ(by_id[0].label_before, "run " + std::to_string(unlabelled_r6[5].id));
    EXPECT_EQ(by_id[0].run_before, unlabelled_r6[5].id);
    EXPECT_EQ(by_id[0].label_after, "r7");
}

// The step's new level, every run of it measured beside a co-tenant (others_cpu_share over
// the mark's 5 %): those cells leave the series, so no change is reported at them, and the
// text says how many were left out and why. Their figures are not the machine's alone.
TEST_F(HistorySeries, CellsMeasuredBesideACoTenantAreLeftOutAndNoChangeIsReportedAtThem) {
    const lab::history_store store(db_, lab::history_access::read_only);
    auto runs = store.stored_runs();
    for (std::size_t i = 6; i < runs.size(); ++i) runs[i].run.cells[0].others_cpu_share = 0.4;
    const auto series = lab::history_series(runs, "counter/step_lock/*", {});
    ASSERT_EQ(series.size(), 1u);
    EXPECT_TRUE(series[0].changes.empty());
    EXPECT_EQ(series[0].medians.size(), 6u);
    EXPECT_EQ(series[0].shared_runs.size(), static_cast<std::size_t>(run_count - 6));
    EXPECT_EQ(series[0].shared_runs.front(), "r7");
    // Under the mark, they count.
    for (std::size_t i = 6; i < runs.size(); ++i) runs[i].run.cells[0].others_cpu_share = 0.01;
    EXPECT_EQ(lab::history_changes(runs, "counter/step_lock/*", {}).size(), 1u);
}

TEST_F(HistorySeries, CliChangesSaysHowManySharedCellsItLeftOut) {
    {
        lab::history_store store(db_);
        for (int i = 0; i < 3; ++i) {
            lab::run_result shared = make_run(11);
            shared.context.label = "busy" + std::to_string(i);
            shared.cells[0] = make_cell("step_lock", 30.0);
            shared.cells[0].others_cpu_share = 0.6;
            store.append(shared);
        }
    }
    const auto o = contend_test::run_cli("history --db " + shell_quote(db_) + " --changes");
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("between r6 and r7"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("busy"), std::string::npos) << "no change at the shared runs: " << o.output;
    EXPECT_NE(o.output.find("3 cells of 1 benchmark left out: measured beside a co-tenant"), std::string::npos)
        << o.output;
}

TEST_F(HistorySeries, ALabelReadsItsNewestRun) {
    {
        lab::history_store store(db_);
        lab::run_result again = make_run(0);  // r1 again, later, slower, one cell timed out
        again.cells[0] = make_cell("step_lock", 11);
        again.cells[1].status = "timed_out";
        again.cells[1].detail = "ran past 3 s";
        store.append(again);
    }
    const lab::history_store store(db_, lab::history_access::read_only);
    const auto in = lab::comparison_input_from_history(store, db_, "r1");
    EXPECT_EQ(in.source, db_ + " label r1");
    EXPECT_EQ(in.format, "contend-lab");
    EXPECT_EQ(in.label, "r1");
    EXPECT_EQ(in.cpu_model, "Test CPU 9000");
    ASSERT_EQ(in.benchmarks.size(), 2u);
    EXPECT_EQ(in.benchmarks[0].name, "counter/step_lock/workers:2");
    EXPECT_EQ(in.benchmarks[0].median_ns, 11);
    EXPECT_EQ(in.benchmarks[0].samples_ns.size(), 5u);
    EXPECT_EQ(in.benchmarks[1].name, "counter/spike_lock/workers:2");
    ASSERT_EQ(in.skipped.size(), 1u);
    EXPECT_EQ(in.skipped[0].name, "counter/flat_lock/workers:2");
    EXPECT_EQ(in.skipped[0].reason, "timed_out: ran past 3 s");
}

TEST_F(HistorySeries, AnUnknownLabelIsAnInputErrorNamingTheHistoryAndTheLabel) {
    const lab::history_store store(db_, lab::history_access::read_only);
    try {
        lab::comparison_input_from_history(store, db_, "r99");
        FAIL() << "no error";
    } catch (const lab::input_error& e) {
        EXPECT_NE(std::string(e.what()).find(db_), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("r99"), std::string::npos) << e.what();
    }
}

// --- The CLI ----------------------------------------------------------------------------------

TEST_F(HistorySeries, CliListShowsEveryRunWithItsLabel) {
    const auto o = contend_test::run_cli("history list --db " + shell_quote(db_));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    for (int i = 1; i <= run_count; ++i)
        EXPECT_NE(o.output.find(" r" + std::to_string(i) + " "), std::string::npos) << i << "\n" << o.output;
    EXPECT_NE(o.output.find("Test CPU 9000"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("complete"), std::string::npos) << o.output;
}

TEST_F(HistorySeries, CliChangesPrintsTheStepAndItsCount) {
    const auto o = contend_test::run_cli("history --db " + shell_quote(db_) + " --changes");
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("counter/step_lock/workers:2: "), std::string::npos) << o.output;
    EXPECT_NE(o.output.find(" ns (+20.0 %) between r6 and r7"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("flat_lock"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("spike_lock"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("1 change"), std::string::npos) << o.output;

    const auto none = contend_test::run_cli("history --db " + shell_quote(db_) + " 'counter/flat*' --changes");
    ASSERT_EQ(none.exit_code, 0) << none.output;
    EXPECT_NE(none.output.find("0 changes"), std::string::npos) << none.output;
}

TEST_F(HistorySeries, CliBadUsageAndAnUnreadableHistoryExitTwo) {
    EXPECT_EQ(contend_test::run_cli("history --db " + shell_quote(db_)).exit_code, 2);  // neither list nor --changes
    EXPECT_EQ(contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --min-segment 0").exit_code, 2);
    EXPECT_EQ(contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --p 2").exit_code, 2);
    write(dir_ / "not-a-db", "hello");
    EXPECT_EQ(contend_test::run_cli("history --db " + shell_quote(path("not-a-db")) + " --changes").exit_code, 2);
    EXPECT_EQ(contend_test::run_cli("history list --db " + shell_quote(path("missing.db"))).exit_code, 2);
}

TEST_F(HistorySeries, CliCompareTwoLabelsReportsTheStepAsTheOnlyRegression) {
    const auto o =
        contend_test::run_cli("compare --db " + shell_quote(db_) + " r1 r12 --json " + shell_quote(path("cmp.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output;
    const auto j = nlohmann::json::parse(read(dir_ / "cmp.json"));
    EXPECT_EQ(j["summary"]["regressions"], 1);
    EXPECT_EQ(j["summary"]["improvements"], 0);
    ASSERT_EQ(j["rows"].size(), 3u);
    for (const auto& r : j["rows"])
        EXPECT_EQ(r["verdict"], r["name"] == "counter/step_lock/workers:2" ? "regression" : "same") << r.dump();
    EXPECT_NE(o.output.find("contend compare --db "), std::string::npos) << o.output;  // the repro names the history
}

TEST_F(HistorySeries, CliCompareAnUnknownLabelExitsTwoNamingIt) {
    const auto o = contend_test::run_cli("compare --db " + shell_quote(db_) + " r1 nope");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("nope"), std::string::npos) << o.output;
}

// --changes printed 1e-300 ns as "0.00 -> 0.00 ns" and 1e300 ns as 300 digits.
TEST(HistoryFormat, TinyAndHugeTimesKeepThreeFiguresWithAUnit) {
    EXPECT_EQ(lab::format_time_per_op(12.345), "12.3 ns");
    EXPECT_EQ(lab::format_time_per_op(1.2345), "1.23 ns");
    EXPECT_EQ(lab::format_time_per_op(1234.5), "1234 ns");
    EXPECT_EQ(lab::format_time_per_op(1e-300), "1e-300 ns");
    EXPECT_EQ(lab::format_time_per_op(0.00123), "0.00123 ns");
    EXPECT_EQ(lab::format_time_per_op(123456), "123.5 us");
    EXPECT_EQ(lab::format_time_per_op(2.5e9), "2.5 s");
    EXPECT_EQ(lab::format_time_per_op(1e300), "1e+291 s");
    EXPECT_EQ(lab::format_change_percent(10, 12), "+20.0 %");
    EXPECT_EQ(lab::format_change_percent(1e-300, 2e-300), "+100.0 %");
    EXPECT_EQ(lab::format_change_percent(1e-300, 1e300), "+1e+602 %");
    EXPECT_EQ(lab::format_change_percent(12, 6), "-50.0 %");
}

// CLI11 read "-1" into the unsigned option as 18446744073709551615 and clamped a run id past
// the int64 range; both are refused, as are signs, spaces and hex.
TEST_F(HistorySeries, CliNumbersOutOfRangeOrNotDecimalExitTwo) {
    for (const char* bad : {"-1", "0", "18446744073709551615", "1e3", "0x10", " 3", "", "+3"}) {
        const auto o =
            contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --min-segment " + shell_quote(bad));
        EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.output;
        EXPECT_NE(o.output.find("--min-segment"), std::string::npos) << o.output;
    }
    EXPECT_EQ(contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --min-segment 2").exit_code, 0);
    for (const char* bad : {"99999999999999999999", "-1", "0", "abc"}) {
        const auto o = contend_test::run_cli("report --db " + shell_quote(db_) + " --run " + shell_quote(bad) + " -o " +
                                             shell_quote(path("r.html")));
        EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.output;
        EXPECT_NE(o.output.find("--run"), std::string::npos) << o.output;
    }
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.html"));
}
