// contend run --profile, merging and the table (run/profile_table.hpp): processes merged, the
// table's top locks and its escaping of hostile names.
#include <string>
#include <vector>

#include "run/profile_table.hpp"
#include "run_profile_fixture.hpp"

namespace {

using namespace contend_test;
namespace lab = contend::lab;

TEST_F(RunProfile, TwoProcessesMergeTotalsTakeTheLongestSecondsAndKeepTheirLocksApart) {
    std::vector<lab::process_profile> processes = {
        lab::parse_profile(profile_json(10, {lock_json("0x1000", 50), lock_json("0x2000", 900)}, 2.0).dump()),
        lab::parse_profile(profile_json(11, {lock_json("0x1000", 400)}, 4.0).dump())};
    const auto m = lab::merge_profiles(processes, 11);
    EXPECT_EQ(m.processes, 2u);
    EXPECT_EQ(m.acquisitions, 8000u);
    EXPECT_EQ(m.contended, 600u);
    EXPECT_EQ(m.trylock_busy, 4u);
    EXPECT_EQ(m.timeouts, 2u);
    EXPECT_EQ(m.wait_ns, 18000000u);
    EXPECT_DOUBLE_EQ(m.seconds, 4.0);
    EXPECT_DOUBLE_EQ(m.contentions_per_second(), 600 / 4.0);
    ASSERT_EQ(m.locks.size(), 3u) << "the same address in two processes is two locks";
    EXPECT_EQ(m.locks[0].wait_ns, 900u);
    EXPECT_EQ(m.locks[1].pid, 11);
    EXPECT_EQ(m.locks[2].pid, 10);
    EXPECT_EQ(m.locks_named, std::vector<std::string>{"contend_mutex"});
}

TEST_F(RunProfile, TheTableShowsTheTop20ByContendedWaitAndCountsTheRest) {
    std::vector<json> locks;
    for (int i = 1; i <= 25; ++i) {
        char address[32];
        std::snprintf(address, sizeof address, "0x%x", 0x1000 * i);
        locks.push_back(lock_json(address, static_cast<std::uint64_t>(i) * 1000000, static_cast<std::uint64_t>(i)));
    }
    const auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, locks).dump())}, 7);
    const std::string table = lab::profile_table(m);
    EXPECT_NE(table.find("/usr/bin/prog, lock contend_mutex, 1 process, 1.500 s"), std::string::npos) << table;
    EXPECT_NE(table.find("200 contentions/s"), std::string::npos) << table;
    EXPECT_NE(table.find("holds timed on 1 in 64 acquisitions on average (random gaps), of locks once contended"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("... and 5 more contended locks (15.000 ms of wait)"), std::string::npos) << table;
    // Rank 1 is the longest wait (0x19000, 25 ms), rank 20 the 20th (0x6000); 0x5000 is not shown.
    const auto first = table.find("    1  0x19000 ");
    const auto twentieth = table.find("   20  0x6000 ");
    EXPECT_NE(first, std::string::npos) << table;
    EXPECT_NE(twentieth, std::string::npos) << table;
    EXPECT_LT(first, twentieth);
    EXPECT_EQ(table.find("  0x5000 "), std::string::npos) << table;
    EXPECT_NE(table.find("25.000"), std::string::npos) << "wait ms of the top lock:\n" << table;
    EXPECT_NE(table.find("worker_loop"), std::string::npos) << "the library's function name as the site:\n" << table;
}

TEST_F(RunProfile, ARwlocksRowHasALineWithItsReadsAndWritesAndAProgramOfMutexesOnlyHasNone) {
    auto j = profile_json(7, {rwlock_json("0x10", 4000000, 8), lock_json("0x20", 1000)});
    j["read_acquisitions"] = 600;
    j["write_acquisitions"] = 400;
    const std::string table = lab::profile_table(lab::merge_profiles({lab::parse_profile(j.dump())}, 7));
    EXPECT_NE(table.find("  of the acquisitions, rwlock reads 600 and writes 400\n"), std::string::npos) << table;
    const auto row = table.find("    1  0x10 ");
    const auto line = table.find(
        "        rwlock: reads 600 (4 contended, 2.000 ms), writes 400 (4 contended, 2.000 ms, "
        "1 timed out)\n");
    ASSERT_NE(row, std::string::npos) << table;
    ASSERT_NE(line, std::string::npos) << table;
    EXPECT_LT(row, line);
    EXPECT_LT(line, table.find("    2  0x20 ")) << "the line is under its own row:\n" << table;
    EXPECT_NE(table.find("a rwlock's row counts its reads and writes together"), std::string::npos) << table;

    const std::string mutexes =
        lab::profile_table(lab::merge_profiles({lab::parse_profile(profile_json(7, {lock_json("0x20", 1)}).dump())}));
    EXPECT_EQ(mutexes.find("rwlock"), std::string::npos) << mutexes;
}

TEST_F(RunProfile, HostileNamesInAProfileReachTheTerminalEscaped) {
    auto l = lock_json("0x10", 1);
    l["site"]["function"] = "evil\x1b]0;pwned\x07\n\u202e";
    auto p = profile_json(7, {l});
    p["executable"] = "/bin/\x1b[2Jx";
    const std::string table = lab::profile_table(lab::merge_profiles({lab::parse_profile(p.dump())}));
    EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
    EXPECT_EQ(table.find('\x07'), std::string::npos) << table;
    EXPECT_EQ(table.find("\u202e"), std::string::npos) << table;
    EXPECT_NE(table.find("evil\\x1B]0;pwned"), std::string::npos) << table;
}

}  // namespace

TEST_F(RunProfile, ARowHasALineWithItsWaitAndHoldDistributionsWhenTheFileHasThem) {
    auto with = with_distributions(lock_json("0x10", 4000000));
    const std::string table = lab::profile_table(
        lab::merge_profiles({lab::parse_profile(profile_json(7, {with, lock_json("0x20", 1000)}).dump())}, 7));
    const auto row = table.find("    1  0x10 ");
    const auto line = table.find(
        "        wait us: p50 0.3, p90 1.2, p99 2.0, max 5.0; hold us: p50 0.090, p90 0.400, p99 0.700, max 0.900\n");
    ASSERT_NE(row, std::string::npos) << table;
    ASSERT_NE(line, std::string::npos) << table;
    EXPECT_LT(row, line);
    // The second lock's file had none of them: no such line under its row.
    EXPECT_EQ(table.find("wait us:", line + 10), std::string::npos) << table;
}

TEST_F(RunProfile, ARowWithSampledStacksListsTheFirstTwoWithTheirShareAndFrames) {
    auto file = profile_json(7, {with_stacks(lock_json("0x10", 4000000)), lock_json("0x20", 1000)});
    file["stack_sample_period"] = 4;
    const std::string table = lab::profile_table(lab::merge_profiles({lab::parse_profile(file.dump())}, 7));
    const auto first = table.find(
        "        stack 1 of 2: 75 % of the sampled waits' time (3 of 4 sampled waits)\n"
        "          worker_loop\n"
        "          run_jobs\n"
        "          main\n"
        "        stack 2 of 2: 25 % of the sampled waits' time (1 of 4 sampled waits)\n"
        "          worker_loop\n"
        "          drain\n");
    ASSERT_NE(first, std::string::npos) << table;
    EXPECT_LT(table.find("    1  0x10 "), first);
    EXPECT_EQ(table.find("stack 1 of", first + 10), std::string::npos) << "a stack under the lock without any";
    EXPECT_NE(table.find("stacks: the call stacks of sampled contended waits (one in 4 per thread)"), std::string::npos)
        << table;
}

// A share that rounds to 100 % while other stacks waited too, or to 0 % while this one waited,
// is not printed as either.
TEST_F(RunProfile, AStackShareNeverRoundsToAllOrNothingWhenItIsNeither) {
    auto lock = with_stacks(lock_json("0x10", 4000000));
    lock["stacks"][0]["wait_ns"] = 999000;
    lock["stacks"][1]["wait_ns"] = 1000;
    const std::string table =
        lab::profile_table(lab::merge_profiles({lab::parse_profile(profile_json(7, {lock}).dump())}, 7));
    EXPECT_NE(table.find("stack 1 of 2: >99 % of the sampled waits' time"), std::string::npos) << table;
    EXPECT_NE(table.find("stack 2 of 2: <1 % of the sampled waits' time"), std::string::npos) << table;
}
