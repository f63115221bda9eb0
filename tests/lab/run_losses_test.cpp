// contend run's losses: a profile that survives what used to lose it (a reused address, fork,
// exec, _exit, a dropped privilege), every loss it cannot avoid said and reflected in the
// exit status and the row, programs the library is never loaded into refused or reported,
// signals sent to contend passed on, and the quiet end of a program cut off by a closed pipe.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "run/run_profile.hpp"
#include "run_cli.hpp"
#include "run_environment.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

namespace {

using contend_test::run_cli;
using contend_test::shell_quote;
using RunLosses = contend_test::temp_dir_test;
namespace lab = contend::lab;

const std::string scenarios = CONTEND_TEST_SCENARIOS_PATH;

struct profiled {
    contend_test::cli_outcome cli;
    lab::cell_result cell;
};

// `contend run --profile --json F -- run_scenarios SCENARIO`, and its one row.
profiled run_scenario(const std::string& json, const std::string& scenario, const std::string& lock = "") {
    profiled p;
    p.cli = run_cli("run --profile " + (lock.empty() ? "" : "--lock " + lock + " ") + "--json " + shell_quote(json) +
                    " -- " + shell_quote(scenarios) + " " + scenario);
    std::ifstream in(json);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!text.empty()) {
        const auto run = lab::run_from_json(text);
        if (run.cells.size() == 1) p.cell = run.cells[0];
    }
    return p;
}

// Item 26: a mutex destroyed and made again at its address, then reset by assignment, was
// three records of one address, and the file was refused ("listed twice"): no table, no
// metrics. It is one lock, its three contentions counted.
TEST_F(RunLosses, AMutexReusedAtItsAddressIsOneLockAndTheProfileIsRead) {
    for (const std::string lock : {"contend_mutex", "glibc"}) {
        const auto p = run_scenario(path(lock + ".json"), "reused", lock);
        ASSERT_EQ(p.cli.exit_code, 0) << lock << "\n" << p.cli.output;
        EXPECT_EQ(p.cli.output.find("listed twice"), std::string::npos) << p.cli.output;
        EXPECT_NE(p.cli.output.find("contend run --profile:"), std::string::npos) << p.cli.output;
        EXPECT_EQ(p.cell.metric("contended"), 3) << lock << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.metric("top_lock_contended"), 3) << lock << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.metric("processes_lost"), 0) << p.cli.output;
    }
}

// Item 27: a forked child that does not exec profiles itself from the fork and writes its
// own file, at exit() or at _exit.
TEST_F(RunLosses, AForkedChildThatDoesNotExecIsCountedWhetherItExitsOrCallsUnderscoreExit) {
    for (const std::string scenario : {"fork", "fork_exit"}) {
        const auto p = run_scenario(path(scenario + ".json"), scenario);
        ASSERT_EQ(p.cli.exit_code, 0) << scenario << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.metric("processes"), 2) << scenario << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.metric("contended"), 2) << scenario << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.metric("processes_lost"), 0) << p.cli.output;
    }
}

// Item 27: the counts of an image that execs are written before the exec; the new image
// writes its own.
TEST_F(RunLosses, AProcessThatContendsThenExecsKeepsItsCounts) {
    const auto p = run_scenario(path("exec.json"), "exec");
    ASSERT_EQ(p.cli.exit_code, 0) << p.cli.output;
    EXPECT_EQ(p.cell.metric("contended"), 2) << p.cli.output;
    EXPECT_EQ(p.cell.metric("processes_lost"), 0) << p.cli.output;
}

// Item 27: a loss that cannot be avoided (a child killed by SIGKILL, a write that failed) is
// said, the row counts it, and a run that exited 0 exits 4.
TEST_F(RunLosses, AProcessWhoseProfileIsLostIsSaidCountedAndTheRunExits4) {
    for (const std::string scenario : {"killed", "unwritable"}) {
        const auto p = run_scenario(path(scenario + ".json"), scenario);
        EXPECT_EQ(p.cli.exit_code, 4) << scenario << "\n" << p.cli.output;
        EXPECT_NE(p.cli.output.find("the profile is incomplete: 1 process of"), std::string::npos) << scenario << "\n"
                                                                                                   << p.cli.output;
        EXPECT_EQ(p.cell.metric("processes_lost"), 1) << scenario << "\n" << p.cli.output;
        EXPECT_EQ(p.cell.status, "ok") << "the run itself is valid: " << p.cell.detail;
    }
    // The parent's profile was read: its header says what is missing.
    const auto killed = run_scenario(path("again.json"), "killed");
    EXPECT_NE(killed.cli.output.find("1 process (1 more lost"), std::string::npos) << killed.cli.output;
}

// Item 27: run as root, the program may become nobody before it writes its profile.
TEST_F(RunLosses, AProgramThatDropsItsPrivilegesStillWritesItsProfile) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root, to drop privileges";
    const auto p = run_scenario(path("drop.json"), "drop");
    ASSERT_EQ(p.cli.exit_code, 0) << p.cli.output;
    EXPECT_EQ(p.cli.output.find("Permission denied"), std::string::npos) << p.cli.output;
    EXPECT_EQ(p.cell.metric("contended"), 2) << p.cli.output;
}

// Item 28: a statically linked program never runs the loader that reads LD_PRELOAD: refused
// before it runs. The file here is an ELF header of a static executable, with no interpreter.
TEST_F(RunLosses, AStaticProgramIsRefusedBeforeItRuns) {
    std::string elf(64 + 56, '\0');
    const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    std::copy(std::begin(ident), std::end(ident), elf.begin());
    const auto put16 = [&](std::size_t at, unsigned v) {
        elf[at] = static_cast<char>(v & 0xff);
        elf[at + 1] = static_cast<char>(v >> 8);
    };
    put16(16, 2);  // ET_EXEC
    put16(18, 62);  // x86-64
    elf[32] = 64;  // e_phoff
    put16(52, 64);  // e_ehsize
    put16(54, 56);  // e_phentsize
    put16(56, 1);  // e_phnum: one PT_LOAD, no PT_INTERP
    elf[64] = 1;  // PT_LOAD
    const std::string program = path("static_program");
    write(program, elf);
    chmod(program.c_str(), 0755);
    const auto o = run_cli("run -- " + shell_quote(program));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("statically linked"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("nothing run"), std::string::npos) << o.output;
}

// Item 28: a set-user-ID program of another user runs in the loader's secure mode, which
// ignores the library: refused.
TEST_F(RunLosses, ASetUserIdProgramOfAnotherUserIsRefusedBeforeItRuns) {
    const std::string program = path("setuid_true");
    std::filesystem::copy_file("/bin/true", program);
    if (geteuid() == 0) {
        ASSERT_EQ(chown(program.c_str(), 65534, 65534), 0);
    } else {
        GTEST_SKIP() << "needs root, to give the file to another user";
    }
    ASSERT_EQ(chmod(program.c_str(), 04755), 0);
    const auto o = run_cli("run -- " + shell_quote(program));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("set-user-ID"), std::string::npos) << o.output;
}

// Item 28: a library that is not contend's (here libm) is loaded but never says so: the run
// is said not to be interposed, exits 3, and its row is not valid.
TEST_F(RunLosses, ARunThatNeverLoadedTheLibraryIsSaidExits3AndItsRowIsNotValid) {
    std::string libm;
    for (const char* candidate : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                                  "/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"})
        if (std::filesystem::exists(candidate)) libm = candidate;
    if (libm.empty()) GTEST_SKIP() << "no libm.so.6 found";
    const std::string json = path("run.json");
    const auto o = run_cli("env CONTEND_INTERPOSE_LIBRARY=" + libm + " " + shell_quote(CONTEND_CLI_PATH) +
                               " run --json " + shell_quote(json) + " -- true",
                           false);
    EXPECT_EQ(o.exit_code, 3) << o.output;
    EXPECT_NE(o.output.find("loaded the interposition library"), std::string::npos) << o.output;
    const auto run = lab::run_from_json(read(json));
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].status, "not_interposed");
}

// Item 28: a process that took another lock than the one asked for (here the program changed
// it for the program it runs) makes the run invalid too.
TEST_F(RunLosses, AProcessOnAnotherLockThanAskedIsSaidAndExits3) {
    const auto o = run_cli("run --lock contend_mutex -- env CONTEND_INTERPOSE_LOCK=glibc true");
    EXPECT_EQ(o.exit_code, 3) << o.output;
    EXPECT_NE(o.output.find("ran its mutexes on glibc, not contend_mutex"), std::string::npos) << o.output;
}

// Item 28: C11's mtx_lock runs on glibc's mutex through an internal call: said before the run.
TEST_F(RunLosses, AProgramThatCallsC11LocksIsWarnedThatTheyAreNotInterposed) {
    const auto o = run_cli("run -- " + shell_quote(CONTEND_TEST_C11_LOCKS_PATH));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("calls the C11 mtx_lock"), std::string::npos) << o.output;
    const auto plain = run_cli("run -- true");
    EXPECT_EQ(plain.output.find("C11"), std::string::npos) << plain.output;
}

// Item 29: SIGUSR1, SIGUSR2 and SIGALRM killed contend and orphaned the program; a SIGINT
// sent to contend's pid was ignored. Each is passed on: the program's trap decides.
TEST_F(RunLosses, SignalsSentToContendArePassedToTheProgram) {
    for (const auto& [sig, name] : {std::pair{SIGUSR1, "USR1"}, std::pair{SIGUSR2, "USR2"}, std::pair{SIGALRM, "ALRM"},
                                    std::pair{SIGINT, "INT"}}) {
        const int status = contend_test::contend_run_status_after_signal(
            std::string("trap 'exit 42' ") + name + "; echo started; while :; do sleep 0.05; done", sig);
        ASSERT_NE(status, -1) << name << ": contend run did not end within 10 s of the signal";
        EXPECT_TRUE(WIFEXITED(status)) << name << ": contend was killed by signal " << WTERMSIG(status);
        if (WIFEXITED(status)) {
            EXPECT_EQ(WEXITSTATUS(status), 42) << name;
        }
    }
}

// Item 31: `contend run -- yes | head -1`: yes dies of SIGPIPE, which a shell does not report;
// nor does contend, and its status is the shell's 141.
TEST_F(RunLosses, AProgramCutOffByAClosedPipeEndsQuietlyWithStatus141) {
    const std::string err = shell_quote(path("stderr"));
    const auto o = run_cli(shell_quote(CONTEND_CLI_PATH) + " run -- yes 2> " + err +
                               " | head -1; echo \"status=${PIPESTATUS[0]}\"; cat " + err,
                           false);
    EXPECT_NE(o.output.find("status=141"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("killed by signal"), std::string::npos) << o.output;
}

// Item 31: an addr2line that takes too long is stopped with what it started.
TEST_F(RunLosses, ASymbolizerThatTimesOutIsStoppedWithItsChildren) {
    const std::string tool = path("slow_addr2line");
    const std::string pidfile = path("child.pid");
    write(tool, "#!/bin/sh\nsleep 300 &\necho $! > " + shell_quote(pidfile) + "\nwait\n");
    chmod(tool.c_str(), 0755);
    write(path("module"), "x");
    nlohmann::json lock = {
        {"address", "0x10"},
        {"acquisitions", 1},
        {"contended", 1},
        {"wait_ns", 1},
        {"wait_p99_ns", 1},
        {"wait_max_ns", 1},
        {"hold_samples", 0},
        {"hold_sampled_ns", 0},
        {"hold_p99_ns", 0},
        {"site", {{"address", "0x1"}, {"module", path("module")}, {"module_address", "0x1"}, {"function", ""}}}};
    nlohmann::json file = {{"format", "contend-interpose-profile/1"},
                           {"pid", 7},
                           {"executable", "/x"},
                           {"lock", "glibc"},
                           {"seconds", 1},
                           {"hold_sample_period", 64},
                           {"acquisitions", 1},
                           {"contended", 1},
                           {"trylock_busy", 0},
                           {"timeouts", 0},
                           {"wait_ns", 1},
                           {"locks_dropped", 0},
                           {"locks", {lock}}};
    auto m = lab::merge_profiles({lab::parse_profile(file.dump())});
    const auto failures = lab::symbolize_sites(m, 20, tool, 1);
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_NE(failures[0].find("did not finish"), std::string::npos) << failures[0];
    const std::string pid = read(pidfile);
    ASSERT_FALSE(pid.empty());
    const std::string proc = "/proc/" + std::to_string(std::stol(pid)) + "/stat";
    bool gone = false;
    for (int i = 0; i < 1000 && !gone; ++i) {  // at most 10 s
        const std::string stat = read(proc);
        const auto close_paren = stat.rfind(')');
        gone = stat.empty() || (close_paren != std::string::npos && stat.substr(close_paren + 2, 1) == "Z");
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the symbolizer's child " << pid << " is still running";
    if (!gone) kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
}

}  // namespace
