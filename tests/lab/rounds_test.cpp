// measure/rounds.hpp: interleaved repetitions (the server suite's), on synthetic cells.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "measure/rounds.hpp"
#include "run/runner.hpp"

namespace lab = contend::lab;

namespace {

lab::cell_result round_of(double ns, double cpu, double metric) {
    lab::cell_result c;
    c.suite = std::string("server");
    c.contender = std::string("asio");
    c.workers = 2;
    c.repetitions = 1;
    c.ns_per_op = {ns};
    c.median_ns = c.p25_ns = c.p75_ns = ns;
    c.cpu_ns_per_op = cpu;
    c.metrics = {{"requests_per_second", metric}, {"absent_here", lab::not_measured}};
    return c;
}

}  // namespace

TEST(Rounds, MergeKeepsEverySampleAndTakesMediansOfTheRest) {
    const auto cell = lab::merge_rounds({round_of(10, 100, 1), round_of(30, 300, 3), round_of(20, 200, 2)});
    EXPECT_TRUE(cell.valid());
    EXPECT_EQ(cell.repetitions, 3);
    EXPECT_EQ(cell.ns_per_op, (std::vector<double>{10, 30, 20}));
    EXPECT_EQ(cell.median_ns, 20);
    EXPECT_EQ(cell.p25_ns, 15);
    EXPECT_EQ(cell.p75_ns, 25);
    EXPECT_EQ(cell.cpu_ns_per_op, 200);
    EXPECT_EQ(cell.metric("requests_per_second"), 2);
    EXPECT_TRUE(std::isnan(cell.metric("absent_here")));
    EXPECT_EQ(cell.name(), "server/asio/workers:2");
}

// What others took of the CPUs, per round: the merged row has the rounds' mean share (each
// round is one repetition of about the same length) and the most runnable threads any round
// saw, so one shared round in four over the 5 % mark marks the row; none measured: NaN.
TEST(Rounds, MergeTakesTheMeanShareOfOthersAndTheMostRunnable) {
    std::vector<lab::cell_result> rounds = {round_of(10, 100, 1), round_of(11, 100, 1), round_of(12, 100, 1),
                                            round_of(13, 100, 1)};
    EXPECT_TRUE(std::isnan(lab::merge_rounds(rounds).others_cpu_share));
    EXPECT_TRUE(std::isnan(lab::merge_rounds(rounds).others_runnable));
    for (auto& r : rounds) r.others_cpu_share = r.others_runnable = 0;
    rounds[2].others_cpu_share = 0.4;
    rounds[2].others_runnable = 3;
    const auto cell = lab::merge_rounds(rounds);
    EXPECT_DOUBLE_EQ(cell.others_cpu_share, 0.1);
    EXPECT_EQ(cell.others_runnable, 3);
    EXPECT_TRUE(cell.shared());
}

TEST(Rounds, AnInvalidRoundEndsTheRowWithItsReasonAndFigures) {
    auto bad = round_of(0, 0, 7);
    bad.status = "wrk_errors";
    bad.detail = "wrk saw 3 socket errors";
    bad.ns_per_op.clear();
    bad.repetitions = 0;
    const auto cell = lab::merge_rounds({round_of(10, 100, 1), bad, round_of(30, 300, 3)});
    EXPECT_EQ(cell.status, "wrk_errors");
    EXPECT_EQ(cell.detail, "wrk saw 3 socket errors");
    EXPECT_EQ(cell.repetitions, 1);
    EXPECT_EQ(cell.ns_per_op, (std::vector<double>{10}));
    EXPECT_EQ(cell.metric("requests_per_second"), 7);
    EXPECT_THROW(lab::merge_rounds({}), std::invalid_argument);
}

TEST(Rounds, EveryRoundVisitsEveryRowOnceForwardThenBackward) {
    lab::harness_options h;
    h.repetitions = 3;
    h.min_repetitions = 3;
    std::vector<std::pair<std::size_t, std::int32_t>> order;
    const auto out = lab::run_rounds(3, h, [&](std::size_t row, std::int32_t round, const lab::harness_options& one) {
        EXPECT_EQ(one.repetitions, 1);
        EXPECT_EQ(one.round, round);  // what a cell reads to make a reference once (the programs suite)
        order.emplace_back(row, round);
        return std::optional(round_of(10.0 + static_cast<double>(row), 1, 1));
    });
    EXPECT_FALSE(out.stopped);
    // Forward, backward, forward: ABBA.
    const std::vector<std::pair<std::size_t, std::int32_t>> expected{{0, 0}, {1, 0}, {2, 0}, {2, 1}, {1, 1},
                                                                     {0, 1}, {0, 2}, {1, 2}, {2, 2}};
    EXPECT_EQ(order, expected);
    ASSERT_EQ(out.cells.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(out.cells[i].repetitions, 3);
        EXPECT_EQ(out.cells[i].median_ns, 10.0 + static_cast<double>(i));
    }
}

TEST(Rounds, SettledRowsStopAfterTheMinimumAndAFailedRowIsNotRunAgain) {
    lab::harness_options h;
    h.repetitions = 10;
    h.min_repetitions = 2;
    h.spread_to_stop = 0.02;
    h.time_to_stop_s = 1e9;  // only the spread stops the rounds
    std::vector<int> runs(2, 0);
    const auto out = lab::run_rounds(2, h, [&](std::size_t row, std::int32_t, const lab::harness_options&) {
        ++runs[row];
        auto c = round_of(100, 1, 1);  // identical samples: settled at once
        if (row == 1) c.status = "server_exit";
        return std::optional(c);
    });
    EXPECT_EQ(runs[0], 2);  // the minimum, then settled
    EXPECT_EQ(runs[1], 1);  // failed in its first round
    ASSERT_EQ(out.cells.size(), 2u);
    EXPECT_TRUE(out.cells[0].valid());
    EXPECT_EQ(out.cells[1].status, "server_exit");
}

TEST(Rounds, AStopKeepsTheRowsThatFinishedARound) {
    lab::harness_options h;
    h.repetitions = 5;
    h.min_repetitions = 5;
    int calls = 0;
    const auto out = lab::run_rounds(3, h, [&](std::size_t, std::int32_t, const lab::harness_options&) {
        return ++calls <= 4 ? std::optional(round_of(10, 1, 1)) : std::nullopt;  // stopped in round 2
    });
    EXPECT_TRUE(out.stopped);
    ASSERT_EQ(out.cells.size(), 3u);
    EXPECT_EQ(out.cells[0].repetitions, 1);
    EXPECT_EQ(out.cells[1].repetitions, 1);
    EXPECT_EQ(out.cells[2].repetitions, 2);  // the second round, backward, began with it
}

// contend bench --interleave: any suite, not only the server suite, in rounds.
TEST(Interleave, AnySuiteRunsOneRepetitionOfEveryRowPerRound) {
    lab::bench_options o;
    o.suite = "counter";
    o.contenders = "fetch_add_relaxed,cas_weak";
    o.workers = {1};
    o.in_process = true;
    o.interleave = true;
    o.harness.min_time_s = 0.002;
    o.harness.repetitions = 3;
    o.harness.min_repetitions = 3;
    std::vector<std::string> started;
    lab::run_hooks hooks;
    hooks.on_cell = [&](std::size_t, std::size_t, const std::string& row) { started.push_back(row); };
    const auto run = lab::run_suite(o, hooks);
    ASSERT_EQ(run.cells.size(), 2u);
    for (const auto& cell : run.cells) {
        EXPECT_TRUE(cell.valid()) << cell.name() << ": " << cell.detail;
        EXPECT_EQ(cell.repetitions, 3) << cell.name();
    }
    // One of each row per round, forward then backward: a, b, b, a, a, b, each start naming
    // its round.
    ASSERT_EQ(started.size(), 6u);
    const auto row = [](const std::string& s) { return s.substr(0, s.find(" (round")); };
    for (std::size_t i = 0; i < started.size(); ++i) {
        const std::size_t round = i / 2, place = i % 2;
        EXPECT_NE(started[i].find(" (round " + std::to_string(round + 1) + ")"), std::string::npos) << started[i];
        EXPECT_EQ(row(started[i]), row(started[round % 2 == 0 ? place : 1 - place])) << started[i];
    }
    EXPECT_NE(row(started[0]), row(started[1]));
}

TEST(Rounds, ARowWhoseRoundsFallIntoSeparateModesIsFlaggedModal) {
    // One repetition per round, so no round alone can show the modes: the merged row must.
    std::vector<lab::cell_result> rounds;
    for (const double ns : {512.0, 4096.0, 530.0, 4200.0, 3900.0}) rounds.push_back(round_of(ns, 1, 1));
    EXPECT_TRUE(lab::merge_rounds(rounds).modal);
    rounds.clear();
    for (const double ns : {512.0, 515.0, 530.0, 520.0, 525.0}) rounds.push_back(round_of(ns, 1, 1));
    EXPECT_FALSE(lab::merge_rounds(rounds).modal);
}

TEST(Rounds, FairnessIsReportedOnlyWhenEveryRoundMeasuredIt) {
    std::vector<lab::cell_result> rounds;
    for (const double share : {0.5, 0.7, 0.6}) {
        auto r = round_of(10, 1, 1);
        r.has_fairness = true;
        r.min_share = share;
        r.max_share = 2 - share;
        rounds.push_back(r);
    }
    auto merged = lab::merge_rounds(rounds);
    EXPECT_EQ(merged.min_share, 0.6);
    EXPECT_EQ(merged.fairness_reason, "");
    rounds[1].min_share = rounds[1].max_share = lab::not_measured;
    rounds[1].fairness_reason = "read too early";
    merged = lab::merge_rounds(rounds);
    EXPECT_TRUE(std::isnan(merged.min_share));
    EXPECT_TRUE(std::isnan(merged.max_share));
    EXPECT_EQ(merged.fairness_reason, "read too early");
}
