// The contend CLI end to end, on the self-test suite. No timing is asserted.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "harness/disasm.hpp"
#include "run_cli.hpp"
#include "suites/suites.hpp"
#include "temp_dir.hpp"

namespace {

using contend_test::cli_outcome;
cli_outcome run(const std::string& args) { return contend_test::run_cli(args); }

class Cli : public contend_test::temp_dir_test {
protected:
    std::string files() const { return "--json " + path("run.json") + " --db " + path("history.db"); }
    nlohmann::json result() const { return nlohmann::json::parse(read(dir_ / "run.json")); }
};

}  // namespace

TEST_F(Cli, ADeadlockedCellIsKilledAndTheRunGoesOn) {
    // Cells run per worker count in suite order: ok/1, deadlock/1, ok/2, deadlock/2. The
    // cell after the killed one must still run and be valid; the deadlock at 2 workers is
    // skipped (it timed out at 1), never given a figure.
    const auto o = run(
        "bench --suite selftest --contenders deadlock,ok --workers 1,2 --min-time 1 --reps 2 --deadline 1 " + files());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const auto rows = result()["benchmarks"];
    ASSERT_EQ(rows.size(), 4u) << o.output;
    EXPECT_EQ(rows[1]["name"], "selftest/deadlock/workers:1");
    EXPECT_EQ(rows[1]["status"], "timed_out");
    EXPECT_EQ(rows[2]["name"], "selftest/ok/workers:2");
    EXPECT_EQ(rows[3]["name"], "selftest/deadlock/workers:2");
    EXPECT_EQ(rows[3]["status"], "skipped");
    EXPECT_EQ(rows[3]["real_time"], 0) << "a skipped cell has no figure";
    EXPECT_NE(rows[3]["detail"].get<std::string>().find("timed out at 1 workers"), std::string::npos);
    for (const auto& row : rows) EXPECT_EQ(row["valid"], row["contender"] == "ok") << row["name"];
    EXPECT_NE(o.output.find("1 cells skipped"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("skipped: timed out at 1 workers"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("history run 1"), std::string::npos) << o.output;
}

TEST_F(Cli, FullRunsACellAfterItsContenderTimedOut) {
    const auto o =
        run("bench --full --suite selftest --contenders deadlock --workers 1,2 --min-time 1 --reps 2 "
            "--deadline 1 " +
            files());
    EXPECT_EQ(o.exit_code, 3) << o.output;  // no valid cell
    const auto rows = result()["benchmarks"];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["status"], "timed_out");
    EXPECT_EQ(rows[1]["status"], "timed_out") << "--full runs it again at 2 workers";
}

TEST_F(Cli, SteadyCellsStopEarlyAndSaySoButFullRunsEveryRepetition) {
    // ok is a plain fetch_add loop: its samples agree closely, so three of five are enough
    // when the spread allows; whether it does on this machine is not asserted, only that
    // the count is between the minimum and the maximum and that --full always runs five.
    auto o = run("bench --suite selftest --contenders ok --workers 1 --min-time 2 --reps 5 " + files());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const int reps = result()["benchmarks"][0]["repetitions"];
    EXPECT_GE(reps, 3);
    EXPECT_LE(reps, 5);
    if (reps < 5) {
        EXPECT_NE(o.output.find("stopped after fewer than 5 repetitions"), std::string::npos) << o.output;
    }
    o = run("bench --full --suite selftest --contenders ok --workers 1 --min-time 2 --reps 5 " + files());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_EQ(result()["benchmarks"][0]["repetitions"], 5);
}

TEST_F(Cli, VersionNamesTheReleaseAndCommitAndEveryRunRecordsIt) {
    const auto v = run("--version");
    EXPECT_EQ(v.exit_code, 0) << v.output;
    ASSERT_EQ(v.output.rfind("contend 0.", 0), 0u) << v.output;
    EXPECT_NE(v.output.find("(git "), std::string::npos) << v.output;
    const auto o = run("bench --suite selftest --contenders ok --workers 1 --min-time 1 --reps 1 " + files());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    std::string line = v.output.substr(8);  // after "contend "
    line.erase(line.find_last_not_of("\r\n") + 1);
    EXPECT_EQ(result()["context"]["contend_version"], line);
}

TEST_F(Cli, ARunWithNoValidRecordExitsNonZeroAndSaysSo) {
    const auto o = run("bench --suite selftest --contenders miscount --workers 1 --min-time 1 --reps 2 " + files());
    EXPECT_EQ(o.exit_code, 3) << o.output;
    EXPECT_NE(o.output.find("no valid record"), std::string::npos) << o.output;
    EXPECT_EQ(result()["benchmarks"][0]["status"], "wrong_count");
}

TEST_F(Cli, ListShowsTheSuitesButNotTheSelfTest) {
    const auto o = run("bench --list");
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_NE(o.output.find("counter:"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("contend_mutex"), std::string::npos);
    EXPECT_EQ(o.output.find("selftest"), std::string::npos);
}

TEST_F(Cli, BadArgumentsGetAClearErrorAndNoRun) {
    EXPECT_NE(run("bench --suite nosuch " + files()).exit_code, 0);
    EXPECT_NE(run("bench --pin 3-1 " + files()).exit_code, 0);
    EXPECT_NE(run("bench --contenders 'zzz*' " + files()).exit_code, 0);
    EXPECT_FALSE(std::filesystem::exists(dir_ / "run.json"));
}

TEST(Disasm, OnlyAtomicInstructionsAreMarked) {
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  74bb8:\tlock addq $0x1,(%rdx)"));
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  7c5ac:\tlock cmpxchg %sil,(%rbx)"));
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  1000:\txchg   %eax,(%rdi)"));
    EXPECT_FALSE(contend::lab::is_atomic_instruction("  5e2a9e:\txchg   %ax,%ax"));  // a 2-byte nop
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  4:\tldaddal\tx8, x8, [x0]"));
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  8:\tldaxr\tw1, [x0]"));
    EXPECT_TRUE(contend::lab::is_atomic_instruction("  c:\tbl\t1234 <__aarch64_ldadd8_relax>"));
    EXPECT_FALSE(contend::lab::is_atomic_instruction("  10:\tmov    %rdi,%rax"));
    EXPECT_FALSE(contend::lab::is_atomic_instruction("  14:\tcall   3dec90 <__asan_report_load8@plt>"));
}

TEST_F(Cli, DisasmMarksTheAtomicInstructionsOfTheHotLoop) {
    const auto o = run("disasm counter contend_mutex");
    ASSERT_EQ(o.exit_code, 0) << o.output;
#if !defined(__SANITIZE_THREAD__)  // ThreadSanitizer turns every atomic into a call into its runtime
    EXPECT_NE(o.output.find("<== atomic"), std::string::npos) << o.output;
#endif
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    // One CAS to lock; the unlock fast path is a plain store (no second locked instruction).
    EXPECT_NE(o.output.find("lock cmpxchg"), std::string::npos) << o.output;
    const auto direct = run("disasm counter fetch_add_relaxed");
    EXPECT_NE(direct.output.find("lock add"), std::string::npos) << direct.output;
#if !defined( \
    __SANITIZE_ADDRESS__)  // instrumented code adds checks, not atomics, but keep the count exact only unsanitized
    EXPECT_NE(direct.output.find("1 atomic instruction"), std::string::npos) << direct.output;
#endif
#endif
    EXPECT_NE(run("disasm counter nosuch").exit_code, 0);
}

TEST_F(Cli, DisasmOfAContenderWithParametersNamesItsPoints) {
    // `contend bench --list` shows names only; a name alone is not an id here.
    const auto o = run("disasm hold contend_mutex");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("contend_mutex/cs_us:0"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("contend_mutex/cs_us:20"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("contend_mutex_spin"), std::string::npos) << o.output;  // only its own points
}

TEST_F(Cli, DisasmFindsTheHotLoopOfEveryKindOfWorkload) {
    // One contender per workload template of every suite (its instantiations are named the
    // same way): the function found must be run() itself, not the cold clone of its
    // unlikely blocks that GCC lays out before it (the listing once showed that clone for
    // the pool and pipe suites), and the monitor suite's templates on an enum constant and
    // the sharing suite's std::atomic<unsigned long> must be found at all (they were not).
    // A contender without a hot-loop function (the server suite's) is refused plainly.
    std::set<std::string> seen;
    int found = 0;
    for (const auto& s : contend::lab::all_suites()) {
        for (const auto& c : s.contenders) {
            const std::string kind = s.name + " " + c.workload_type.substr(0, c.workload_type.find('<'));
            if (!seen.insert(kind).second) continue;
            const auto o = run("disasm " + s.name + " " + c.id());
            if (c.workload_type.empty()) {
                EXPECT_NE(o.exit_code, 0) << s.name << "/" << c.id();
                EXPECT_NE(o.output.find("no known hot-loop function"), std::string::npos) << o.output;
                continue;
            }
            EXPECT_EQ(o.exit_code, 0) << s.name << "/" << c.id() << ": " << o.output.substr(0, 400);
            if (o.exit_code != 0) continue;  // every kind that fails is named, not only the first
            const std::string first = o.output.substr(0, o.output.find('\n'));
            EXPECT_NE(first.find("::run("), std::string::npos) << s.name << "/" << c.id() << ": " << first;
            EXPECT_EQ(first.find("[clone"), std::string::npos) << s.name << "/" << c.id() << ": " << first;
            EXPECT_EQ(o.output.find("[clone .cold]>:"), std::string::npos) << s.name << "/" << c.id();
            ++found;
        }
    }
    EXPECT_GE(found, 10);  // every suite's kinds, not a loop that skipped them all
}
