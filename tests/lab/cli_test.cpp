// The contend CLI end to end, on the self-test suite. No timing is asserted.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure/harness.hpp"
#include "run_cli.hpp"
#include "store/history.hpp"
#include "suites/suites.hpp"
#include "temp_dir.hpp"
#include "tools/disasm/disasm.hpp"

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

// --- Co-tenants: --one-cpu, --busy-loops, --busy-nice ------------------------------------------

namespace {

// The children this process has (it adopts orphans below while a subreaper): reaps those that
// have exited and returns how many are left; with `kill`, kills those too.
int children_left(bool kill = false) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    int n = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        std::ifstream in(entry.path() / "stat");
        std::string line;
        if (!std::getline(in, line) || line.rfind(')') == std::string::npos) continue;
        std::istringstream rest(line.substr(line.rfind(')') + 1));
        std::string state, ppid;
        rest >> state >> ppid;
        if (ppid != std::to_string(::getpid())) continue;
        ++n;
        if (kill) ::kill(static_cast<pid_t>(std::stol(entry.path().filename().string())), SIGKILL);
    }
    // SIGKILL is not ignored: each ends soon; reap them (bounded, as every wait here).
    for (int tries = 0; kill && tries < 500 && ::waitpid(-1, nullptr, WNOHANG) >= 0; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return n;
}

// Adopts, for the life of the object, every process a descendant leaves behind: a busy loop
// that outlived its cell would show up as this process's child.
struct adopt_orphans {
    adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
    ~adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// Polls `done` every 20 ms for at most `seconds`.
template <class Done>
bool within_seconds(double seconds, Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

}  // namespace

TEST_F(Cli, OneCpuAndBusyLoopsAreInTheContextTheRowNameAndTheHistoryAndLeaveNothingRunning) {
    const adopt_orphans adopting;
    const auto o =
        run("bench --suite selftest --contenders cotenant_probe --workers 2 --min-time 1 --reps 2 --one-cpu "
            "--busy-loops 2 --busy-nice 18 " +
            files());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const int cpu = contend::lab::allowed_cpus().front();
    EXPECT_NE(o.output.find("co-tenant: 2 busy loops at nice 18, on CPU " + std::to_string(cpu)), std::string::npos)
        << o.output;
    const auto doc = result();
    EXPECT_EQ(doc["context"]["busy_loops"], 2);
    EXPECT_EQ(doc["context"]["busy_nice"], 18);
    EXPECT_EQ(doc["context"]["one_cpu"], cpu);
    const auto& row = doc["benchmarks"][0];
    EXPECT_EQ(row["name"], "selftest/cotenant_probe/one_cpu:yes/busy_loops:2/busy_nice:18/workers:2");
    EXPECT_EQ(row["worker_cpus"], 1.0) << "every thread of the cell on one CPU";
    EXPECT_EQ(row["own_thread_cpus"], 1.0);
    EXPECT_EQ(row["busy_loops_seen"], 2.0) << "the busy loops ran beside the cell";
    EXPECT_EQ(children_left(), 0) << "a busy loop or a cell's process outlived the run";

    // A quiet run into the same history: the two are different series, and each run keeps
    // its co-tenant.
    ASSERT_EQ(run("bench --suite selftest --contenders cotenant_probe --workers 2 --min-time 1 --reps 1 " + files())
                  .exit_code,
              0);
    const contend::lab::history_store store(path("history.db"), contend::lab::history_access::read_only);
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].context.busy_loops, 2);
    EXPECT_EQ(runs[0].context.busy_nice, 18);
    EXPECT_EQ(runs[0].context.one_cpu, cpu);
    EXPECT_EQ(runs[1].context.busy_loops, 0);
    EXPECT_EQ(runs[1].context.one_cpu, -1);
    EXPECT_NE(runs[0].cells.at(0).name(), runs[1].cells.at(0).name());
    EXPECT_EQ(runs[1].cells.at(0).name(), "selftest/cotenant_probe/workers:2");
}

TEST_F(Cli, BadCotenantSettingsAreRefusedBeforeAnythingRuns) {
    const std::string base = "bench --suite selftest --contenders ok --workers 1 --min-time 1 --reps 1 " + files();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--busy-loops 65", "outside 0..64"},
        {"--busy-loops -1", "not a whole number"},
        {"--busy-loops 4294967297", "not a whole number"},
        {"--busy-loops 0x10", "not a whole number"},
        {"--busy-loops 1e3", "not a whole number"},
        {"--busy-loops ''", "not a whole number"},
        {"--busy-loops nan", "not a whole number"},
        {"--busy-loops 1 --busy-nice 20", "not a nice level"},
        {"--busy-loops 1 --busy-nice -21", "not a nice level"},
        {"--busy-loops 1 --busy-nice 1.5", "not a whole number"},
        {"--busy-nice 5", "give --busy-loops N too"},
        {"--busy-loops 0 --busy-nice 5", "give --busy-loops N too"},
        {"--busy-loops 1 --busy-loops 2", "--busy-loops"},
        {"--busy-loops 1 --busy-nice 1 --busy-nice 2", "--busy-nice"},
        {"--one-cpu --pin compact", "cannot be combined with --pin"},
        {"--one-cpu --pin 0", "cannot be combined with --pin"},
    };
    for (const auto& [args, message] : cases) {
        const auto o = run(base + " " + args);
        EXPECT_EQ(o.exit_code, 2) << args << ": " << o.output;
        EXPECT_NE(o.output.find(message), std::string::npos) << args << ": " << o.output;
    }
    const auto busy_rows = run("bench --suite pipe --contenders '*/busy_loops:*' --busy-loops 1 " + files());
    EXPECT_EQ(busy_rows.exit_code, 2) << busy_rows.output;
    EXPECT_NE(busy_rows.output.find("runs its own busy loops"), std::string::npos) << busy_rows.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "run.json"));
    EXPECT_FALSE(std::filesystem::exists(dir_ / "history.db"));
}

TEST_F(Cli, BusyLoopsDieWithALabKilledOutright) {
    // A cell that stalls for its whole 20 s deadline beside two busy loops; the lab is killed
    // with SIGKILL once they run. Nothing of it may survive: its cell's process dies with it,
    // and the busy loops with the cell's process.
    const adopt_orphans adopting;
    const std::string json = path("run.json");
    const pid_t lab_pid = ::fork();
    ASSERT_GE(lab_pid, 0);
    if (lab_pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        ::execl(CONTEND_CLI_PATH, CONTEND_CLI_PATH, "bench", "--suite", "selftest", "--contenders", "stall_polite",
                "--workers", "1", "--min-time", "1", "--reps", "1", "--deadline", "20", "--busy-loops", "2",
                "--no-history", "--json", json.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // The busy loops are the lab's grandchildren: children of its cell's process.
    const auto grandchildren_busy = [&] {
        int n = 0;
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
            std::ifstream comm(entry.path() / "comm"), stat(entry.path() / "stat");
            std::string name, line;
            if (!std::getline(comm, name) || name != "contend_busy" || !std::getline(stat, line)) continue;
            std::istringstream rest(line.substr(line.rfind(')') + 1));
            std::string state, ppid;
            rest >> state >> ppid;
            std::ifstream parent("/proc/" + ppid + "/stat");
            std::string parent_line;
            if (!std::getline(parent, parent_line)) continue;
            std::istringstream parent_rest(parent_line.substr(parent_line.rfind(')') + 1));
            std::string parent_state, grandparent;
            parent_rest >> parent_state >> grandparent;
            n += grandparent == std::to_string(lab_pid);
        }
        return n;
    };
    const bool started = within_seconds(15, [&] { return grandchildren_busy() == 2; });
    ::kill(lab_pid, SIGKILL);
    ::waitpid(lab_pid, nullptr, 0);
    ASSERT_TRUE(started) << "the busy loops never ran";
    const bool gone = within_seconds(10, [] { return children_left() == 0; });
    EXPECT_TRUE(gone) << children_left(true) << " processes of the killed lab were still running";
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
