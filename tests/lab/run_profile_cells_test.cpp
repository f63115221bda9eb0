// contend run, the row (run/profile_cells.hpp): the runs of a lock as one cell of the lab's
// model, its metrics and status, and the program's params.
#include <string>
#include <vector>

#include "results/lock_profile.hpp"
#include "run/profile_cells.hpp"
#include "run_profile_fixture.hpp"
#include "store/history.hpp"
#include "store/results_io.hpp"

namespace {

using namespace contend_test;
namespace lab = contend::lab;

// The row as made, as read back from the JSON results, and as read back from a history at
// `db` it is appended to.
std::vector<std::vector<lab::cell_result>> made_and_read_back(const lab::run_result& run, const std::string& db) {
    {
        lab::history_store history(db);
        history.append(run);
    }
    const auto stored = lab::history_store(db, lab::history_access::read_only).runs();
    EXPECT_EQ(stored.size(), 1u);
    return {run.cells, lab::run_from_json(lab::to_json(run)).cells,
            stored.empty() ? std::vector<lab::cell_result>{} : stored[0].cells};
}

TEST_F(RunProfile, TheRowIsOneCellOfSuiteRunWithTheProfilesFiguresAndRoundTripsThroughJson) {
    const auto m = lab::merge_profiles(
        {lab::parse_profile(profile_json(7, {lock_json("0x10", 2000000), lock_json("0x20", 3000)}).dump())}, 7);
    lab::program_status exited;
    exited.pid = 7;
    exited.cpu_ns = 5e6;
    lab::run_result run;
    run.context.date = "2026-01-01T00:00:00Z";
    run.cells.push_back(
        lab::run_cell({{"/usr/bin/prog", "--threads=8", "run"}, "ttas", true, {{exited, 2.5e9, m, 0, ""}}}));
    const auto& c = run.cells[0];
    EXPECT_EQ(c.name().substr(0, 27), "run/ttas/program:prog/args:") << c.name();
    EXPECT_EQ(c.params.back(), (std::pair<std::string, std::string>{"profile", "on"}));
    EXPECT_EQ(c.workers, 1);
    EXPECT_EQ(c.operation, "run");
    EXPECT_EQ(c.status, "ok");
    EXPECT_EQ(c.ns_per_op, std::vector<double>{2.5e9});
    EXPECT_DOUBLE_EQ(c.median_ns, 2.5e9);
    EXPECT_DOUBLE_EQ(c.metric("contentions_per_s"), 200);
    EXPECT_DOUBLE_EQ(c.metric("wait_ms"), 9);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_wait_ms"), 2);
    EXPECT_DOUBLE_EQ(c.metric("wait_p99_us"), 2);
    // The top lock's distributions: the fixture's file has its p99s and its longest wait only.
    EXPECT_DOUBLE_EQ(c.metric("top_lock_wait_p99_us"), 2);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_wait_max_us"), 5);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_hold_p99_us"), 0.7);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_wait_p50_us"), 0);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_hold_ms"), 0.4);
    EXPECT_DOUBLE_EQ(c.metric("locks_contended"), 2);

    const auto back = lab::run_from_json(lab::to_json(run));
    ASSERT_EQ(back.cells.size(), 1u);
    EXPECT_EQ(back.cells[0].name(), c.name());
    EXPECT_EQ(back.cells[0].metrics.size(), c.metrics.size());
    for (const auto& [name, value] : c.metrics) EXPECT_DOUBLE_EQ(back.cells[0].metric(name), value) << name;

    lab::program_status failed;
    failed.value = 3;
    EXPECT_EQ(lab::run_cell({{"prog"}, "glibc", false, {{failed, 1e6, std::nullopt, 0, ""}}}).detail, "exit status 3");
    lab::program_status killed;
    killed.signalled = true;
    killed.value = 9;
    const auto k = lab::run_cell({{"prog"}, "glibc", false, {{killed, 1e6, std::nullopt, 0, ""}}});
    EXPECT_EQ(k.status, "crashed");
    EXPECT_EQ(k.detail.substr(0, 18), "killed by signal 9") << k.detail;
    EXPECT_TRUE(k.metrics.empty());
}

TEST_F(RunProfile, SeveralRunsOfALockAreTheSamplesOfOneCellItsMetricsTheirMediansItsStatusTheFirstFailure) {
    const auto profile_of = [](std::uint64_t wait_ns) {
        auto j = profile_json(7, {lock_json("0x10", 1000)});
        j["wait_ns"] = wait_ns;
        return lab::merge_profiles({lab::parse_profile(j.dump())}, 7);
    };
    lab::program_status ok, failed;
    failed.value = 3;
    const auto c = lab::run_cell({{"prog"},
                                  "contend_mutex",
                                  true,
                                  {{ok, 3e6, profile_of(1'000'000), 0, ""},
                                   {ok, 1e6, profile_of(5'000'000), 0, ""},
                                   {ok, 2e6, std::nullopt, 0, ""},
                                   {ok, 4e6, profile_of(2'000'000), 0, ""}}});
    EXPECT_EQ(c.repetitions, 4);
    EXPECT_EQ(c.ns_per_op, (std::vector<double>{3e6, 1e6, 2e6, 4e6}));
    EXPECT_DOUBLE_EQ(c.median_ns, 2.5e6);
    EXPECT_DOUBLE_EQ(c.metric("wait_ms"), 2);  // the median of 1, 5 and 2: the unprofiled run has none
    EXPECT_EQ(c.status, "ok");
    const auto f =
        lab::run_cell({{"prog"}, "glibc", false, {{ok, 1e6, std::nullopt, 0, ""}, {failed, 1e6, std::nullopt, 0, ""}}});
    EXPECT_EQ(f.status, "failed");
    EXPECT_EQ(f.detail, "exit status 3");
}

// A program's rwlocks in its row: each mode's acquisitions, contended ones and wait, in the JSON
// results and the history's rows; a program that took no rwlock has none of these metrics.
TEST_F(RunProfile, ARowCarriesTheRwlocksReadsAndWritesApartThroughTheJsonAndTheHistory) {
    auto j = profile_json(7, {rwlock_json("0x10", 4000000, 8), lock_json("0x20", 1000)});
    j["read_acquisitions"] = 600;
    j["write_acquisitions"] = 400;
    lab::program_status ok;
    lab::run_result run;
    run.context.date = "2026-01-01T00:00:00Z";
    run.cells.push_back(lab::run_cell(
        {{"prog"}, "contend_mutex", true, {{ok, 1e6, lab::merge_profiles({lab::parse_profile(j.dump())}, 7), 0, ""}}}));
    const std::pair<const char*, double> expected[] = {
        {"rwlock_read_acquisitions", 600}, {"rwlock_write_acquisitions", 400}, {"rwlock_read_contended", 4},
        {"rwlock_write_contended", 4},     {"rwlock_read_wait_ms", 2},         {"rwlock_write_wait_ms", 2}};
    for (const auto& cells : made_and_read_back(run, path("h.db"))) {
        ASSERT_EQ(cells.size(), 1u);
        for (const auto& [name, value] : expected) EXPECT_DOUBLE_EQ(cells[0].metric(name), value) << name;
    }

    const auto mutexes = lab::run_cell(
        {{"prog"},
         "contend_mutex",
         true,
         {{ok, 1e6, lab::merge_profiles({lab::parse_profile(profile_json(7, {lock_json("0x20", 1)}).dump())}, 7), 0,
           ""}}});
    for (const auto& [name, value] : mutexes.metrics) EXPECT_EQ(name.find("rwlock"), std::string::npos) << name;
}

// The row keeps its top locks whole from one run, the profiled run whose total wait is the
// median: their waits' histograms and stacks, named as the table names them, through the JSON
// results and the history alike.
TEST_F(RunProfile, TheRowKeepsTheTopLocksOfItsMedianRunWithTheirHistogramsAndStacks) {
    const auto profile_of = [](std::uint64_t total_wait, std::uint64_t top_wait) {
        auto j = profile_json(7, {with_distributions(with_stacks(lock_json("0x10", top_wait))), lock_json("0x20", 1)});
        j["wait_ns"] = total_wait;
        j["stack_sample_period"] = 4;
        return lab::merge_profiles({lab::parse_profile(j.dump())}, 7);
    };
    lab::program_status ok;
    lab::run_result run;
    run.context.date = "2026-01-01T00:00:00Z";
    // Three runs; the middle total wait (5 ms) is the second one's, whose top lock waited 222 us.
    run.cells.push_back(lab::run_cell({{"prog"},
                                       "contend_mutex",
                                       true,
                                       {{ok, 1e6, profile_of(9000000, 333000), 0, ""},
                                        {ok, 1e6, profile_of(5000000, 222000), 0, ""},
                                        {ok, 1e6, profile_of(1000000, 111000), 0, ""}}}));
    for (const auto& cells : made_and_read_back(run, path("h.db"))) {
        ASSERT_EQ(cells.size(), 1u);
        EXPECT_EQ(cells[0].lock_profile, run.cells[0].lock_profile);
        const auto p = lab::lock_profile_from_text(cells[0].lock_profile);
        EXPECT_EQ(p.stack_sample_period, 4u);
        ASSERT_EQ(p.locks.size(), 2u);
        const auto& top = p.locks[0];
        EXPECT_EQ(top.wait_ns, 222000u) << "the run of the median total wait";
        EXPECT_EQ(top.wait_p50_ns, 300u);
        EXPECT_EQ(top.wait_p90_ns, 1200u);
        EXPECT_EQ(top.wait_histogram, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{256, 6}, {4096, 4}}));
        ASSERT_EQ(top.stacks.size(), 2u);
        EXPECT_EQ(top.stacks[0].frames.size(), 3u);
        EXPECT_NE(top.stacks[0].frames[0].find("worker_loop"), std::string::npos) << top.stacks[0].frames[0];
        EXPECT_EQ(top.stacks[0].samples, 3u);
        EXPECT_EQ(top.stacks_seen, 2u);
        EXPECT_EQ(top.sampled_waits, 4u);
        EXPECT_EQ(top.sampled_wait_ns, 8000u);
        EXPECT_TRUE(p.locks[1].stacks.empty());
        EXPECT_TRUE(p.locks[1].wait_histogram.empty());
    }
    // A row that was not profiled keeps none.
    EXPECT_TRUE(lab::run_cell({{"prog"}, "glibc", false, {{ok, 1e6, std::nullopt, 0, ""}}}).lock_profile.empty());
}

TEST_F(RunProfile, TheProgramParamsAreSafeAndTheArgumentsHashKeepsTheirBoundaries) {
    const auto p = lab::program_params({"/weird dir/na/me\n\x1b\xff", "a"});
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].second, "me___");
    EXPECT_NO_THROW(lab::check_params(p));
    EXPECT_EQ(lab::program_params({"dir/"})[0].second, "_");
    EXPECT_EQ(lab::program_params({std::string(300, 'x')})[0].second.size(), 64u);
    EXPECT_NE(lab::program_params({"p", "a b"})[1].second, lab::program_params({"p", "a", "b"})[1].second);
    EXPECT_EQ(lab::program_params({"p", "x"})[1].second, lab::program_params({"/bin/p", "x"})[1].second);
    EXPECT_EQ(lab::program_params({"p", "x"})[1].second.size(), 12u);
}

}  // namespace
