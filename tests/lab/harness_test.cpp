// The harness on synthetic contenders (suite "selftest"). No timing is asserted.
#include "measure/harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "store/results_io.hpp"
#include "suites/suites.hpp"

namespace lab = contend::lab;

namespace {
const lab::contender& selftest(const std::string& name) {
    const auto* s = lab::find_suite("selftest");
    for (const auto& c : s->contenders)
        if (c.name == name) return c;
    throw std::runtime_error("no selftest contender " + name);
}
lab::harness_options quick() {
    lab::harness_options o;
    o.min_time_s = 0.002;
    o.repetitions = 3;
    o.deadline_s = 10;
    return o;
}
}  // namespace

TEST(Harness, CalibrationGrowsTheWorkUntilARepetitionLastsTheMinimumTime) {
    // A fake machine where every operation costs exactly 1,000 ns: the rule must stop at
    // the first size whose repetition reaches the minimum, and never overshoot by more
    // than the 16x step cap.
    const double min_time_ns = 50e6;
    std::uint64_t ops = 64;
    int steps = 0;
    for (;; ++steps) {
        const double wall = static_cast<double>(ops) * 1000.0;
        const std::uint64_t next = lab::next_calibration_ops(ops, wall, min_time_ns);
        if (next == 0) break;
        EXPECT_GT(next, ops);
        ops = next;
        ASSERT_LT(steps, 64) << "calibration does not converge";
    }
    EXPECT_GE(static_cast<double>(ops) * 1000.0, min_time_ns);
    EXPECT_LE(static_cast<double>(ops) * 1000.0, min_time_ns * 16);
    // Already long enough: stop at once.
    EXPECT_EQ(lab::next_calibration_ops(1000, 60e6, min_time_ns), 0u);
}

TEST(Harness, CalibrationShrinksAStepThatLastedFarTooLong) {
    // A step that lasted 20x the minimum (work that convoys only in longer runs): aim at the
    // minimum again, by the measured excess; within 3x, or when shrinking is used up, keep it.
    const double min_time_ns = 50e6;
    const std::uint64_t next = lab::next_calibration_ops(1'000'000, 20 * min_time_ns, min_time_ns);
    EXPECT_EQ(next, 60'000u);
    EXPECT_EQ(lab::next_calibration_ops(1'000'000, 2.5 * min_time_ns, min_time_ns), 0u);
    EXPECT_EQ(lab::next_calibration_ops(1'000'000, 20 * min_time_ns, min_time_ns, false), 0u);
    EXPECT_EQ(lab::next_calibration_ops(64, 20 * min_time_ns, min_time_ns), 0u) << "never below the first size";
}

TEST(Harness, ACalibrationStepIsSuspectWhenFirstOrFarSlowerPerOperationThanTheStepBefore) {
    EXPECT_TRUE(lab::calibration_step_suspect(0, 1000)) << "the first step has nothing to compare with";
    EXPECT_FALSE(lab::calibration_step_suspect(1000, 1000));
    EXPECT_FALSE(lab::calibration_step_suspect(1000, lab::calibration_stall_factor * 1000));
    EXPECT_TRUE(lab::calibration_step_suspect(1000, lab::calibration_stall_factor * 1000 + 1));
    EXPECT_TRUE(lab::calibration_step_suspect(std::nan(""), 1000));
}

// The first calibration step of a cell beside a co-tenant just started waited out the
// co-tenant's first run and took the minimum time with 64 operations; the cell then measured
// 64 a repetition (harness.hpp, calibration_step_suspect). A step that long is run once more
// before its size is kept. The selftest contender waits 100 ms in its first repetition only;
// the minimum is 50 ms, and 64 of its operations take microseconds. Three tries, so that a
// second step slowed as much by a loaded machine cannot fail the test; without the repeat,
// every try keeps 64.
TEST(Harness, AFirstCalibrationStepThatStalledDoesNotSetTheRepetitionSize) {
    auto o = quick();
    o.min_time_s = 0.05;
    o.repetitions = 1;
    std::uint64_t most = 0;
    for (int attempt = 0; attempt < 3 && most <= 64; ++attempt) {
        const auto cell = lab::run_cell_in_process(selftest("first_run_stalls"), "selftest", 1, o);
        ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
        most = std::max(most, cell.ops_per_worker);
    }
    EXPECT_GT(most, 64u);
}

TEST(Harness, ACorrectContenderIsValidWithItsSamplesAndQuartiles) {
    const auto cell = lab::run_cell_in_process(selftest("ok"), "selftest", 2, quick());
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_EQ(cell.repetitions, 3);
    ASSERT_EQ(cell.ns_per_op.size(), 3u);
    EXPECT_LE(cell.p25_ns, cell.median_ns);
    EXPECT_LE(cell.median_ns, cell.p75_ns);
    EXPECT_GT(cell.ops_per_worker, 0u);
    EXPECT_EQ(cell.name(), "selftest/ok/workers:2");
}

TEST(Harness, AMiscountingContenderIsMarkedInvalidNotDropped) {
    const auto cell = lab::run_cell_in_process(selftest("miscount"), "selftest", 2, quick());
    EXPECT_EQ(cell.status, "wrong_count");
    EXPECT_FALSE(cell.valid());
    EXPECT_NE(cell.detail.find("counter ended at"), std::string::npos) << cell.detail;
}

TEST(Harness, AContenderThatStopsProgressingIsMarkedTimedOut) {
    auto o = quick();
    o.deadline_s = 0.2;
    const auto cell = lab::run_cell_in_process(selftest("stall_polite"), "selftest", 2, o);
    EXPECT_EQ(cell.status, "timed_out");
}

TEST(Harness, AWrongAffinityRequestIsDetected) {
    auto o = quick();
    o.pin = "1000";  // a CPU this machine does not have
    const auto cell = lab::run_cell_in_process(selftest("ok"), "selftest", 1, o);
    EXPECT_EQ(cell.status, "affinity_mismatch") << cell.detail;
}

TEST(Harness, PinnedWorkersReadTheirMaskBack) {
    const auto cpus = lab::allowed_cpus();
    auto o = quick();
    o.pin = "compact";
    const auto cell = lab::run_cell_in_process(selftest("ok"), "selftest", 2, o);
    ASSERT_TRUE(cell.valid()) << cell.detail;
    EXPECT_FALSE(cell.affinity.empty());
    EXPECT_EQ(cell.oversubscribed, cpus.size() < 2);
}

TEST(Harness, ANeverMeasuredCellIsNamedAsAMeasuredOneAndSaysWhy) {
    const auto& c = selftest("ok");
    lab::cotenant_options run;
    run.busy_loops = 2;
    const auto cell = lab::unmeasured_cell(c, "selftest", 3, run, "skipped", "not run");
    lab::cell_result named = lab::new_cell(c, "selftest", 3);
    for (const auto& p : lab::added_cotenant_params(c.params, run)) named.params.push_back(p);
    EXPECT_EQ(cell.name(), named.name());
    EXPECT_NE(cell.name().find("busy_loops:2"), std::string::npos) << cell.name();
    EXPECT_EQ(cell.operation, c.operation);
    EXPECT_EQ(cell.status, "skipped");
    EXPECT_EQ(cell.detail, "not run");
    EXPECT_FALSE(cell.valid());
    EXPECT_TRUE(cell.ns_per_op.empty());
}

TEST(Harness, GlobsSelectContenders) {
    EXPECT_TRUE(lab::glob_match("*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("contend_*,std_*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("?td_mutex", "std_mutex"));
    EXPECT_FALSE(lab::glob_match("contend_*", "std_mutex"));
}

TEST(Harness, HoldSuiteRowsCarryTheirCriticalSectionLength) {
    const auto* hold = lab::find_suite("hold");
    ASSERT_NE(hold, nullptr);
    const lab::contender* point = nullptr;
    for (const auto& c : hold->contenders)
        if (c.id() == "contend_mutex/cs_us:20") point = &c;
    ASSERT_NE(point, nullptr);
    const auto cell = lab::run_cell_in_process(*point, "hold", 2, quick());
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_EQ(cell.name(), "hold/contend_mutex/cs_us:20/workers:2");
    EXPECT_TRUE(cell.has_fairness);
}

TEST(Harness, ContenderIdsAreUniqueWithinEachSuite) {
    for (const auto& s : lab::all_suites()) {
        std::set<std::string> ids;
        for (const auto& c : s.contenders) EXPECT_TRUE(ids.insert(c.id()).second) << s.name << ": " << c.id();
    }
}

// --- The workload contract: a workload's own check and metrics --------------------------------

namespace {

// Items through a queue-like workload: every item must be accounted for, and it reports
// items per ms. `lose` drops one item per repetition.
class item_workload final : public lab::workload {
public:
    explicit item_workload(bool lose) : lose_(lose) {}
    void reset() override { processed_ = 0; }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      lab::progress_counters& progress) override {
        return lab::run_polled(worker, ops, stop, progress, [this] { processed_.fetch_add(1); });
    }
    lab::check_result check(const std::vector<std::uint64_t>& completed) override {
        std::uint64_t sent = 0;
        for (const auto c : completed) sent += c;
        const std::uint64_t arrived = processed_.load() - (lose_ ? 1 : 0);
        if (arrived == sent) return {};
        return {"items_lost", std::to_string(sent - arrived) + " of " + std::to_string(sent) + " items never arrived"};
    }
    void measure(const lab::repetition_facts& facts, lab::metric_list& out) override {
        out.emplace_back("items_per_ms", static_cast<double>(facts.completed) / (facts.wall_ns / 1e6));
        out.emplace_back("workers_seen", static_cast<double>(facts.per_worker->size()));
    }

private:
    bool lose_;
    std::atomic<std::uint64_t> processed_{0};
};

lab::contender item_contender(bool lose) {
    lab::contender c;
    c.name = "items";
    c.operation = "item";
    c.make = [lose] { return std::make_unique<item_workload>(lose); };
    return c;
}

}  // namespace

TEST(Harness, AWorkloadsMetricsAreKeptAsTheMedianOfItsRepetitions) {
    const auto cell = lab::run_cell_in_process(item_contender(false), "pool", 2, quick());
    ASSERT_TRUE(cell.valid()) << cell.detail;
    EXPECT_EQ(cell.operation, "item");
    ASSERT_EQ(cell.metrics.size(), 2u);
    EXPECT_EQ(cell.metrics[0].first, "items_per_ms");
    EXPECT_GT(cell.metric("items_per_ms"), 0);
    EXPECT_EQ(cell.metric("workers_seen"), 2);
    EXPECT_TRUE(std::isnan(cell.metric("no_such_metric")));

    // Through every writer, by name, with no code that knows this workload.
    lab::run_result run;
    run.cells.push_back(cell);
    const auto back = lab::run_from_json(lab::to_json(run));
    EXPECT_EQ(back.cells.at(0).metric("workers_seen"), 2);
    EXPECT_EQ(lab::cell_to_json(cell).at("items_per_ms"), cell.metric("items_per_ms")) << "a row field of its own";
    const std::string csv = lab::to_csv(run);
    EXPECT_NE(csv.substr(0, csv.find('\n')).find(",items_per_ms,workers_seen"), std::string::npos) << csv;
    EXPECT_NE(lab::to_table(run).find("workers_seen 2"), std::string::npos) << lab::to_table(run);
}

TEST(Harness, AWorkloadsOwnCheckMakesTheCellInvalidWithItsReason) {
    const auto cell = lab::run_cell_in_process(item_contender(true), "pool", 1, quick());
    EXPECT_EQ(cell.status, "items_lost");
    EXPECT_NE(cell.detail.find("never arrived"), std::string::npos) << cell.detail;
}

TEST(Harness, EveryContenderIdReadsBackThroughTheOneFormat) {
    for (const auto& s : lab::all_suites())
        for (const auto& c : s.contenders) {
            const auto parsed = lab::parse_id(c.id());
            EXPECT_EQ(parsed.name, c.name);
            EXPECT_EQ(parsed.params, c.params) << c.id();
        }
    EXPECT_THROW(lab::parse_id("a/b"), std::invalid_argument) << "a parameter without ':'";
    EXPECT_THROW(lab::parse_id("a/k:"), std::invalid_argument) << "an empty value";
    EXPECT_THROW(lab::parse_id("a/K:1"), std::invalid_argument) << "an upper-case key";
    EXPECT_THROW(lab::format_params({{"k", "a/b"}}), std::invalid_argument);
    EXPECT_EQ(lab::parse_params("cs_us:20/gap:1:2"), (lab::param_list{{"cs_us", "20"}, {"gap", "1:2"}}));
    EXPECT_THROW(lab::check_metric_name("median_ns"), std::invalid_argument) << "a field's name";
    EXPECT_THROW(lab::check_metric_name("real_time"), std::invalid_argument) << "a field's JSON key";
    EXPECT_THROW(lab::check_metric_name("Items"), std::invalid_argument);
}

// --- Fairness: reported only when the scheduler has run every worker --------------------------

TEST(Fairness, TheReadingMustComeAScheduleSliceAPerCpuOfWorkersAfterTheStart) {
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(64, 2), 96e6) << "32 workers a CPU x 3 ms";
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(16, 2), 24e6);
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(3, 2), 6e6) << "rounded up: one CPU has two";
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(2, 2), 3e6);
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(2, 64), 3e6) << "never less than one slice";
    EXPECT_DOUBLE_EQ(lab::fairness_needed_ns(0, 0), 3e6) << "nonsense in, one slice out";
}

TEST(Fairness, SharesAreReportedOnlyWhenEveryRepetitionReadThemLateEnoughWithEveryWorkerRun) {
    lab::fairness_evidence fine{96e6, 120e6};
    for (int i = 0; i < 5; ++i) fine.add(120e6, 0);
    EXPECT_EQ(fine.reason(64, 2), "");

    lab::fairness_evidence early{96e6, 37.5e6};  // the default run's reading at 64 workers
    early.add(37.5e6, 12);
    early.add(37.4e6, 0);
    EXPECT_EQ(early.reason(64, 2),
              "64 workers on 2 CPUs need the shares read at least 96 ms into a repetition (32 a CPU x a 3 ms "
              "scheduler slice) for the scheduler to have run each, and these were read 37.5 ms in (3/4 of "
              "--min-time): a worker at 0 may only have waited for a CPU (--min-time 128 or more measures them)");

    // Planned late enough, but a repetition's workers all finished first: read at that finish.
    lab::fairness_evidence short_repetition{24e6, 37.5e6};
    short_repetition.add(37.5e6, 0);
    short_repetition.add(20e6, 0);
    EXPECT_EQ(short_repetition.reason(16, 2),
              "16 workers on 2 CPUs need the shares read at least 24 ms into a repetition (8 a CPU x a 3 ms "
              "scheduler slice) for the scheduler to have run each, and in 1 of 2 repetitions every worker finished "
              "before that, the shares read at the first finish (20 ms in): a worker at 0 may only have waited for a "
              "CPU (a longer --min-time helps)");

    lab::fairness_evidence unstarted{24e6, 37.5e6};
    unstarted.add(37.5e6, 0);
    unstarted.add(37.5e6, 3);
    unstarted.add(37.5e6, 1);
    EXPECT_EQ(unstarted.reason(16, 2),
              "in 2 of 3 repetitions, 3 of the 16 workers had not run yet when the shares were read (37.5 ms in): "
              "the scheduler had not run every worker");

    lab::fairness_evidence none{3e6, 37.5e6};
    EXPECT_NE(none.reason(2, 2), "") << "no reading is no figure";
    lab::fairness_evidence nan{3e6, 37.5e6};
    nan.add(std::nan(""), 0);
    EXPECT_NE(nan.reason(2, 2), "") << "a reading at no known time is too early";
}

namespace {
const lab::contender& counter_lock(const std::string& name) {
    for (const auto& c : lab::find_suite("counter")->contenders)
        if (c.name == name) return c;
    throw std::runtime_error("no counter contender " + name);
}
}  // namespace

TEST(Fairness, SixtyFourWorkersInShortRepetitionsGetNoShareButTheReasonWhy) {
    // std::mutex included: the shares were read long before the scheduler could have run
    // every worker, so a least-served share of 0.00 would say nothing about the lock.
    auto o = quick();
    o.repetitions = 2;
    const auto cell = lab::run_cell_in_process(counter_lock("std_mutex"), "counter", 64, o);
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_TRUE(cell.has_fairness);
    EXPECT_TRUE(std::isnan(cell.min_share));
    EXPECT_TRUE(std::isnan(cell.max_share));
    EXPECT_NE(cell.fairness_reason.find("64 workers on " + std::to_string(lab::allowed_cpus().size())),
              std::string::npos)
        << cell.fairness_reason;
    EXPECT_NE(cell.fairness_reason.find("--min-time"), std::string::npos) << cell.fairness_reason;

    const auto row = lab::cell_to_json(cell);
    EXPECT_TRUE(row["min_share"].is_null());
    EXPECT_TRUE(row["max_share"].is_null());
    EXPECT_EQ(row["fairness_reason"], cell.fairness_reason);
}

TEST(Fairness, TwoWorkersInLongEnoughRepetitionsAreMeasured) {
    // Read 30 ms in, ten times the one slice two workers on two CPUs need. The one other
    // outcome the rule allows is a machine too loaded to have started both by then: the
    // reason then says so. No figure is asserted.
    auto o = quick();
    o.min_time_s = 0.04;
    o.repetitions = 2;
    const auto cell = lab::run_cell_in_process(counter_lock("std_mutex"), "counter", 2, o);
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    if (cell.fairness_reason.empty()) {
        EXPECT_GE(cell.min_share, 0);
        EXPECT_LE(cell.min_share, 1);
        EXPECT_GE(cell.max_share, 1);
    } else {
        EXPECT_NE(cell.fairness_reason.find("had not run yet"), std::string::npos) << cell.fairness_reason;
        EXPECT_TRUE(std::isnan(cell.min_share));
    }
    const auto one = lab::run_cell_in_process(counter_lock("std_mutex"), "counter", 1, quick());
    EXPECT_FALSE(one.has_fairness) << "one worker has no share to tell";
    EXPECT_EQ(one.fairness_reason, "");
}

TEST(Fairness, ARepetitionRecordsWhenItReadTheSharesAndWhoHadNotRun) {
    auto w = counter_lock("std_mutex").make();
    const auto r = lab::run_repetition(*w, 2, 1000, {}, 10, 0);
    EXPECT_GT(r.fairness_read_ns, 0) << "read at the first finish";
    EXPECT_GE(r.not_started_at_reading, 0);
    EXPECT_LE(r.not_started_at_reading, 1) << "the worker that finished first had run";
}
