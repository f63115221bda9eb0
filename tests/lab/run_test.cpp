// contend run: the program runs with the interposition library preloaded and the chosen
// lock, its exit status (or 128 + N for a signal) comes back as contend's own, and a program
// that cannot be started, an unknown lock or a missing program is said so.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "run/preload_run.hpp"
#include "run_cli.hpp"
#include "run_environment.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

namespace {

using contend_test::run_cli;
using contend_test::shell_quote;
using ContendRun = contend_test::temp_dir_test;

const std::string torture = CONTEND_TEST_TORTURE_PATH;
const std::string dlopened = CONTEND_TEST_DLOPENED_PATH;

// Our multi-threaded program that uses every interposed function (tests/interpose/), under
// each lock, named by its name and by its older name: it checks its own counts and that the
// interposer runs the lock it was told, which it reports by its name.
TEST_F(ContendRun, OurTortureProgramPassesUnderEveryLockAndSeesThatLockActive) {
    for (const auto& lock : contend::lab::interpose_locks()) {
        for (const std::string& given : {lock.name, lock.alias}) {
            if (given.empty()) continue;
            const auto o = run_cli("run --lock " + given + " -- env CONTEND_INTERPOSE_EXPECT=" + lock.name + " " +
                                   shell_quote(torture) + " " + shell_quote(dlopened));
            EXPECT_EQ(o.exit_code, 0) << given << ":\n" << o.output;
        }
    }
}

TEST_F(ContendRun, TheProgramsExitStatusIsContendsOwn) {
    EXPECT_EQ(run_cli("run -- sh -c 'exit 7'").exit_code, 7);
    EXPECT_EQ(run_cli("run -- true").exit_code, 0);
}

TEST_F(ContendRun, AProgramKilledBySignalNExits128PlusNAndSaysSo) {
    const auto o = run_cli("run -- sh -c 'kill -SEGV $$'");
    EXPECT_EQ(o.exit_code, 128 + SIGSEGV) << o.output;
    EXPECT_NE(o.output.find("killed by signal 11"), std::string::npos) << o.output;
}

TEST_F(ContendRun, AProgramNotFoundExits127AndOneNotExecutable126) {
    const auto missing = run_cli("run -- /no/such/program");
    EXPECT_EQ(missing.exit_code, 127) << missing.output;
    EXPECT_NE(missing.output.find("cannot run /no/such/program"), std::string::npos) << missing.output;
    const std::string plain = path("not_executable");
    std::ofstream(plain) << "#!/bin/sh\nexit 0\n";
    EXPECT_EQ(run_cli("run -- " + shell_quote(plain)).exit_code, 126);
}

TEST_F(ContendRun, AnUnknownLockOrNoProgramIsBadUsageAndRunsNothing) {
    const std::string witness = path("ran");
    const auto o = run_cli("run --lock no_such_lock -- touch " + shell_quote(witness));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    for (const auto& lock : contend::lab::interpose_lock_names())
        EXPECT_NE(o.output.find(lock), std::string::npos) << "the message lists the locks:\n" << o.output;
    EXPECT_NE(access(witness.c_str(), F_OK), 0) << "the program ran";
    EXPECT_EQ(run_cli("run").exit_code, 2);
}

// `contend run --lock glibc,contend_mutex --repetitions N --json F -- sh -c SCRIPT`, where
// SCRIPT appends a line to a log and its status comes after ("; exit 3").
struct ab_run {
    contend_test::cli_outcome cli;
    std::string log;
    contend::lab::run_result recorded;
};
std::string slurp(const std::string& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
ab_run run_ab(const std::string& log, const std::string& json, int repetitions, const std::string& line,
              const std::string& status) {
    ab_run r;
    r.cli = run_cli("run --lock glibc,contend_mutex --repetitions " + std::to_string(repetitions) + " --json " +
                    shell_quote(json) + " -- sh -c 'echo " + line + " >> " + shell_quote(log) + status + "'");
    r.log = slurp(log);
    r.recorded = contend::lab::run_from_json(slurp(json));
    return r;
}

// An A/B: the locks run in turn within each repetition (the program logs the lock it was
// given), and each lock is one row of the results, a sample per repetition.
TEST_F(ContendRun, ALockListRunsEachLockInTurnAndRecordsOneRowPerLockWithASamplePerRepetition) {
    const auto r = run_ab(path("log"), path("run.json"), 2, "$CONTEND_INTERPOSE_LOCK", "");
    ASSERT_EQ(r.cli.exit_code, 0) << r.cli.output;
    EXPECT_EQ(r.log, "glibc\ncontend_mutex\nglibc\ncontend_mutex\n");
    ASSERT_EQ(r.recorded.cells.size(), 2u);
    EXPECT_EQ(r.recorded.cells[0].contender, "glibc");
    EXPECT_EQ(r.recorded.cells[1].contender, "contend_mutex");
    for (const auto& c : r.recorded.cells) {
        EXPECT_EQ(c.suite, "run");
        EXPECT_EQ(c.repetitions, 2);
        EXPECT_EQ(c.ns_per_op.size(), 2u);
        EXPECT_EQ(c.status, "ok");
    }
}

// A failing program ends the comparison at once: the rest would compare nothing.
TEST_F(ContendRun, TheFirstFailingRunEndsALockListWithItsStatusAndIsRecorded) {
    const auto r = run_ab(path("log"), path("run.json"), 3, "ran", "; exit 3");
    EXPECT_EQ(r.cli.exit_code, 3) << r.cli.output;
    EXPECT_EQ(r.log, "ran\n");
    ASSERT_EQ(r.recorded.cells.size(), 1u);
    EXPECT_EQ(r.recorded.cells[0].status, "failed");
}

TEST_F(ContendRun, ALockListWithAnUnknownOrRepeatedNameOrRepetitionsOutOfRangeIsBadUsageAndRunsNothing) {
    const std::string witness = path("ran");
    for (const std::string args : {"--lock glibc,no_such_lock", "--lock glibc,glibc", "--lock glibc,",
                                   "--repetitions 0", "--repetitions 1001", "--repetitions x"}) {
        const auto o = run_cli("run " + args + " -- touch " + shell_quote(witness));
        EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.output;
        EXPECT_NE(access(witness.c_str(), F_OK), 0) << args << ": the program ran";
    }
}

// The child sees the library after whatever LD_PRELOAD held (a sanitizer's runtime must stay
// first), and the lock it was given, by the lock's name (`ticket` is ticket_lock's older name).
TEST_F(ContendRun, TheProgramSeesTheLibraryAfterTheInheritedPreloadAndTheLock) {
    const auto o = run_cli("env LD_PRELOAD=libm.so.6 " + shell_quote(CONTEND_CLI_PATH) +
                               " run --lock ticket -- sh -c 'echo \"$LD_PRELOAD|$CONTEND_INTERPOSE_LOCK\"'",
                           false);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("libm.so.6 /"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("libcontend_interpose.so|ticket_lock\n"), std::string::npos) << o.output;
    EXPECT_EQ(contend::lab::preload_value("/l.so", nullptr), "/l.so");
    EXPECT_EQ(contend::lab::preload_value("/l.so", ""), "/l.so");
}

// CONTEND_INTERPOSE_LIBRARY must name the library by an absolute path (the program may change
// its directory before the loader reads LD_PRELOAD); a relative one, or one that is not
// there, is bad usage and nothing runs.
TEST_F(ContendRun, ALibraryNamedByARelativeOrMissingPathIsRefusedAndNothingRuns) {
    const std::string witness = path("ran");
    for (const std::string library : {"build/libcontend_interpose.so", "/no/such/libcontend_interpose.so"}) {
        const auto o = run_cli("env CONTEND_INTERPOSE_LIBRARY=" + shell_quote(library) + " " +
                                   shell_quote(CONTEND_CLI_PATH) + " run -- touch " + shell_quote(witness),
                               false);
        EXPECT_EQ(o.exit_code, 2) << library << "\n" << o.output;
        EXPECT_NE(o.output.find("CONTEND_INTERPOSE_LIBRARY=" + library), std::string::npos) << o.output;
        EXPECT_NE(access(witness.c_str(), F_OK), 0) << library << ": the program ran";
    }
}

// The program starts with the signal dispositions contend started with: SIGPIPE at its default
// (the lab ignores it for itself), and a SIGHUP ignored by the caller (nohup) still ignored.
TEST_F(ContendRun, TheProgramInheritsTheSignalDispositionsContendWasStartedWith) {
    const auto pipe_default = run_cli("run -- sh -c 'kill -PIPE $$; exit 0'");
    EXPECT_EQ(pipe_default.exit_code, 128 + SIGPIPE) << pipe_default.output;
    const auto hup_ignored =
        run_cli("trap '' HUP; " + shell_quote(CONTEND_CLI_PATH) + " run -- sh -c 'kill -HUP $$; exit 0'", false);
    EXPECT_EQ(hup_ignored.exit_code, 0) << hup_ignored.output;
}

// SIGTERM sent to contend reaches the program, which dies of it: contend exits 143.
TEST_F(ContendRun, SigtermToContendIsPassedToTheProgram) {
    const int status = contend_test::contend_run_status_after_signal("echo started; exec sleep 30", SIGTERM);
    ASSERT_NE(status, -1) << "the program never started, or contend run did not end within 10 s of SIGTERM";
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
}

}  // namespace
