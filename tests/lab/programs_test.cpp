// The programs suite: its rows, what it reads from a program's output, and its checks of each
// run against a stand-in for sysbench that lies, crashes or hangs under contend's library (it
// tells them apart by LD_PRELOAD) while its plain run tells the truth, or lies every time.
// The stand-in is a shell script first in PATH; no real program runs, and nothing is timed.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

#include <set>
#include <string>

#include "measure/placement.hpp"
#include "run/runner.hpp"
#include "suites/programs_suite.hpp"
#include "suites/suites.hpp"
#include "temp_dir.hpp"
#include "text/fnv1a.hpp"

namespace lab = contend::lab;
namespace fs = std::filesystem;

TEST(ProgramsSuite, ListsEveryProgramUnderEveryLockOfContendRun) {
    const auto* s = lab::find_suite("programs");
    ASSERT_NE(s, nullptr);
    std::set<std::string> ids, locks, programs;
    for (const auto& c : s->contenders) {
        ids.insert(c.id());
        locks.insert(c.name);
        ASSERT_EQ(c.params.size(), 1u) << c.id();
        programs.insert(c.params.front().second);
        EXPECT_TRUE(static_cast<bool>(c.measure_cell)) << c.id();
    }
    EXPECT_EQ(ids.size(), s->contenders.size());
    EXPECT_EQ(locks.count("glibc"), 1u);
    EXPECT_EQ(locks.count("contend_mutex"), 1u);
    for (const char* p : {"sysbench_mutex", "sysbench_threads", "sort", "xz", "pigz", "python_queue", "memcached",
                          "db_bench_read", "db_bench_write"})
        EXPECT_EQ(programs.count(p), 1u) << p;
    EXPECT_EQ(s->contenders.size(), locks.size() * programs.size());
    EXPECT_TRUE(s->interleave_rounds);
    ASSERT_EQ(s->default_workers.size(), 2u);
    EXPECT_EQ(s->default_workers[0], 2);
    EXPECT_EQ(s->default_workers[1], 4 * static_cast<int>(lab::allowed_cpus().size()));
}

TEST(ProgramsSuite, ReadsWhatMustNotDependOnTheLock) {
    EXPECT_EQ(lab::sysbench_outcome("General statistics:\n    total time:  0.1s\n    total number of events:   8\n"),
              "events 8");
    EXPECT_EQ(lab::sysbench_outcome("no such line"), "");
    const std::string db =
        "... finished 100 ops\r... finished 200 ops\rInitializing RocksDB Options\n"
        "fillrandom   :      17.813 micros/op 108829 ops/sec 0.919 seconds 100000 operations;   12.0 MB/s\n"
        "DB path: [/tmp/x]\n"
        "readrandom   :       4.016 micros/op 447079 ops/sec 0.224 seconds 100000 operations;   42.7 MB/s (43209 of "
        "50000 found)\n";
    EXPECT_EQ(lab::db_bench_outcome(db),
              "fillrandom 100000 operations\nreadrandom 100000 operations (43209 of 50000 found)\n");
    EXPECT_EQ(lab::fnv1a(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(lab::fnv1a("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(lab::fnv1a("bc", lab::fnv1a("a")), lab::fnv1a("abc")) << "a hash continued is the hash of both";
}

namespace {

class ProgramsCells : public contend_test::temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        // Prints sysbench's event line for its --threads=N (one event a thread), or, under the
        // library, does what FAKE_MODE says; FAKE_PLAIN=lie makes the plain run lie too.
        // Notes each run in runs.log, plain or preloaded; from its third run on, with
        // FAKE_LATER=fail, every run fails, plain or not.
        write(path("sysbench"), R"sh(#!/bin/sh
threads=0
for a in "$@"; do case $a in --threads=*) threads=${a#--threads=};; esac; done
mode=truth
case "$LD_PRELOAD" in *contend_interpose*) mode=${FAKE_MODE:-truth}; echo preloaded >> "${0%/*}/runs.log";; *) mode=${FAKE_PLAIN:-truth}; echo plain >> "${0%/*}/runs.log";; esac
if [ "${FAKE_LATER:-}" = fail ] && [ "$(/usr/bin/wc -l < "${0%/*}/runs.log")" -gt 2 ]; then echo "disk quota exceeded"; exit 3; fi
case $mode in
  truth) echo "    total number of events:              $threads";;
  lie) echo "    total number of events:              $((threads + 1))";;
  crash) kill -SEGV $$;;
  fail) printf 'bad \033[31mred\342\200\256 gnirts\n'; exit 3;;
  hang) echo $$ > "${0%/*}/hung.pid"; exec /bin/sleep 600;;
esac
)sh");
        ::chmod(path("sysbench").c_str(), 0755);
        // memcached: under the library does what FAKE_SERVER says (listen: write its port and
        // run until SIGTERM; die: listen, then exit 1 during the load; silent: never listen;
        // refuse: exit 2 at once; chatty: listen, then write 1 MiB, more than a pipe holds,
        // before it waits), plainly it listens. Notes in server.log whether it ran
        // under the library.
        write(path("memcached"), R"sh(#!/bin/sh
mode=listen
case "$LD_PRELOAD" in *contend_interpose*) mode=${FAKE_SERVER:-listen}; echo preloaded >> "${0%/*}/server.log";; *) echo plain >> "${0%/*}/server.log";; esac
trap 'exit 0' TERM
case $mode in
  refuse) echo "failed to listen on TCP port" >&2; exit 2;;
  silent) ;;
  *) echo "TCP INET: 41234" > "$MEMCACHED_PORT_FILENAME";;
esac
[ "$mode" = die ] && { /bin/sleep 0.1; echo "out of memory"; exit 1; }
[ "$mode" = chatty ] && /bin/dd if=/dev/zero bs=65536 count=16 status=none
while :; do /bin/sleep 0.05; done
)sh");
        ::chmod(path("memcached").c_str(), 0755);
        // memcaslap: must run plainly and be given the port the server wrote; prints its
        // counts, with FAKE_CLIENT=corrupt three values read back wrong.
        write(path("memcaslap"), R"sh(#!/bin/sh
case "$LD_PRELOAD" in *contend_interpose*) echo "the client ran under the library"; exit 4;; esac
case " $* " in *" 127.0.0.1:41234 "*) ;; *) echo "not given the server's port: $*"; exit 5;; esac
/bin/sleep 0.3
echo "cmd_get: 45000"
echo "cmd_set: 5000"
[ "${FAKE_CLIENT:-}" = corrupt ] && echo "verify_failed: 3" || echo "verify_failed: 0"
)sh");
        ::chmod(path("memcaslap").c_str(), 0755);
        old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
        ::setenv("PATH", dir_.c_str(), 1);  // the stand-in, and nothing else
    }
    void TearDown() override {
        ::setenv("PATH", old_path_.c_str(), 1);
        ::unsetenv("FAKE_MODE");
        ::unsetenv("FAKE_PLAIN");
        ::unsetenv("FAKE_LATER");
        ::unsetenv("FAKE_SERVER");
        ::unsetenv("FAKE_CLIENT");
        temp_dir_test::TearDown();
    }

    // The cell of `program` under glibc's lock (through the library), 2 threads, --quick's sizes.
    // `adjust`, when given, changes the harness's settings first.
    static lab::cell_result cell(const std::string& program,
                                 const std::function<void(lab::harness_options&)>& adjust = {}) {
        lab::bench_options o;
        o.suite = "programs";
        o.contenders = "glibc/program:" + program;
        o.workers = {2};
        o.in_process = true;  // the cell's own children are the programs
        o.harness.min_time_s = 0.005;
        o.harness.repetitions = 2;
        o.harness.min_repetitions = 2;
        o.harness.deadline_s = 2;
        if (adjust) adjust(o.harness);
        const auto run = lab::run_suite(o);
        EXPECT_EQ(run.cells.size(), 1u);
        return run.cells.empty() ? lab::cell_result{} : run.cells.front();
    }

    std::string old_path_;
};

}  // namespace

TEST_F(ProgramsCells, AProgramThatAgreesWithItsPlainRunAndTheAnswerMakesAValidCell) {
    const auto c = cell("sysbench_mutex");
    ASSERT_TRUE(c.valid()) << c.status << ": " << c.detail;
    EXPECT_EQ(c.repetitions, 2);
    EXPECT_EQ(c.operation, "lock");
    EXPECT_GT(c.median_ns, 0);
    EXPECT_GT(c.metric("seconds"), 0);
    EXPECT_GT(c.metric("per_second"), 0);
    EXPECT_GT(c.metric("plain_seconds"), 0);
}

TEST_F(ProgramsCells, AProgramThatPrintsAnotherAnswerUnderTheLockMakesTheCellWrongOutput) {
    ::setenv("FAKE_MODE", "lie", 1);
    const auto c = cell("sysbench_mutex");
    EXPECT_EQ(c.status, "wrong_output") << c.detail;
    EXPECT_NE(c.detail.find("events 3"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("glibc"), std::string::npos) << c.detail;
}

TEST_F(ProgramsCells, AProgramThatLiesInItsPlainRunTooIsCaughtByTheKnownAnswer) {
    ::setenv("FAKE_MODE", "lie", 1);
    ::setenv("FAKE_PLAIN", "lie", 1);
    const auto c = cell("sysbench_mutex");
    EXPECT_EQ(c.status, "plain_run_failed") << c.detail;
    EXPECT_NE(c.detail.find("the answer is \"events 2\""), std::string::npos) << c.detail;
}

TEST_F(ProgramsCells, AProgramThatCrashesUnderTheLockMakesTheCellProgramFailedWithTheSignal) {
    ::setenv("FAKE_MODE", "crash", 1);
    // In the tsan-lab build the preloaded library is instrumented, and ThreadSanitizer's
    // runtime, loaded into the stand-in's shell with it, would catch the SIGSEGV, report it and
    // exit 66: told not to, the crash stays a crash, as in every other build.
    const char* tsan = std::getenv("TSAN_OPTIONS");
    const std::string saved = tsan ? tsan : "";
    ::setenv("TSAN_OPTIONS", (saved.empty() ? std::string() : saved + ":").append("handle_segv=0").c_str(), 1);
    const auto c = cell("sysbench_mutex");
    if (tsan) ::setenv("TSAN_OPTIONS", saved.c_str(), 1);
    else ::unsetenv("TSAN_OPTIONS");
    EXPECT_EQ(c.status, "program_failed") << c.detail;
    EXPECT_NE(c.detail.find("signal 11"), std::string::npos) << c.detail;
}

TEST_F(ProgramsCells, AProgramThatFailsSaysWhyAndItsControlBytesReachTheReasonEscaped) {
    ::setenv("FAKE_MODE", "fail", 1);
    const auto c = cell("sysbench_mutex");
    EXPECT_EQ(c.status, "program_failed") << c.detail;
    EXPECT_NE(c.detail.find("exited with status 3"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("red"), std::string::npos) << "what it printed is in the reason: " << c.detail;
    EXPECT_EQ(c.detail.find('\x1b'), std::string::npos) << "an escape sequence reached the reason";
    EXPECT_EQ(c.detail.find("\u202e"), std::string::npos) << "a right-to-left override reached the reason";
}

TEST_F(ProgramsCells, AProgramThatHangsUnderTheLockIsKilledAtTheDeadlineAndTheCellTimedOut) {
    ::setenv("FAKE_MODE", "hang", 1);
    const auto c = cell("sysbench_mutex");
    EXPECT_EQ(c.status, "timed_out") << c.detail;
    EXPECT_NE(c.detail.find("deadline"), std::string::npos) << c.detail;
    // The hung program (the sleep it became) is gone: killed with its group and reaped.
    const std::string pid = read(path("hung.pid"));
    ASSERT_FALSE(pid.empty()) << "the stand-in never hung";
    EXPECT_NE(::kill(std::stoi(pid), 0), 0) << "process " << pid << " still runs";
    EXPECT_EQ(errno, ESRCH);
}

TEST_F(ProgramsCells, AProgramThatIsNotInstalledIsSkippedWithThePackageToInstall) {
    const auto c = cell("xz");  // PATH holds the stand-in only
    EXPECT_EQ(c.status, "skipped") << c.detail;
    EXPECT_NE(c.detail.find("apt-get install xz-utils"), std::string::npos) << c.detail;
}

// A server program (memcached): started under the lock and ready before its plain load client
// runs against the port it wrote, stopped after it; every way it can go wrong makes the cell
// invalid with the reason.
TEST_F(ProgramsCells, AServerUnderTheLockLoadedByAPlainClientMakesAValidCell) {
    const auto c = cell("memcached");
    ASSERT_TRUE(c.valid()) << c.status << ": " << c.detail;
    EXPECT_EQ(c.operation, "operation");
    EXPECT_EQ(c.repetitions, 2);
    EXPECT_GT(c.metric("per_second"), 0);
    // Each round (one repetition each, measure/rounds.hpp): its plain run's server, then its
    // repetition's under the library.
    EXPECT_EQ(read(path("server.log")), "plain\npreloaded\nplain\npreloaded\n");
}

TEST_F(ProgramsCells, AJobWithAKnownAnswerRunsPlainlyInItsFirstRoundOnly) {
    const auto c = cell("sysbench_mutex");
    ASSERT_TRUE(c.valid()) << c.status << ": " << c.detail;
    EXPECT_EQ(read(path("runs.log")), "plain\npreloaded\npreloaded\n");
    EXPECT_GT(c.metric("plain_seconds"), 0);  // the first round's
}

TEST_F(ProgramsCells, ARunThatFailsInALaterRoundIsBlamedOnTheProgramWhenItsPlainRunFailsToo) {
    // The second round's run under the lock fails; so does the plain run it is checked with.
    ::setenv("FAKE_LATER", "fail", 1);
    const auto c = cell("sysbench_mutex");
    EXPECT_EQ(c.status, "plain_run_failed") << c.detail;
    EXPECT_NE(c.detail.find("without contend's library: sysbench exited with status 3: disk quota exceeded"),
              std::string::npos)
        << c.detail;
    EXPECT_EQ(read(path("runs.log")), "plain\npreloaded\npreloaded\nplain\n");
}

TEST_F(ProgramsCells, EveryRoundRunsThoughTheSpreadIsSmallAndTheRoundsLastLong) {
    // The harness's rule stops other suites' rounds after min_repetitions once their samples'
    // spread is within 2 % or they have lasted time_to_stop_s: set here to stop at once.
    const auto c = cell("sysbench_mutex", [](lab::harness_options& h) {
        h.repetitions = 4;
        h.min_repetitions = 1;
        h.spread_to_stop = 10;
        h.time_to_stop_s = 0;
    });
    ASSERT_TRUE(c.valid()) << c.status << ": " << c.detail;
    EXPECT_EQ(c.repetitions, 4);
}

TEST_F(ProgramsCells, AFullDiskWhileTheInputIsWrittenMakesTheCellInputFailedAndLeavesNoFolder) {
    // A file size limit of 1 MiB fails the 4 MiB input's write as a full disk would (EFBIG,
    // SIGXFSZ ignored), in this process, where an in-process cell makes its input.
    write(path("sort"), "#!/bin/sh\nexec /usr/bin/sort \"$@\"\n");
    ::chmod(path("sort").c_str(), 0755);
    const fs::path scratch = dir_ / "tmp";
    fs::create_directory(scratch);
    const char* old_tmpdir = std::getenv("TMPDIR");
    const std::string kept = old_tmpdir ? old_tmpdir : "";
    ::setenv("TMPDIR", scratch.c_str(), 1);
    rlimit old_limit{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    rlimit small = old_limit;
    small.rlim_cur = 1 << 20;
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    const bool limited = ::setrlimit(RLIMIT_FSIZE, &small) == 0;
    EXPECT_TRUE(limited) << std::strerror(errno);  // and the state is restored below either way
    const auto c = limited ? cell("sort") : lab::cell_result{};
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    std::signal(SIGXFSZ, old_handler);
    if (old_tmpdir) ::setenv("TMPDIR", kept.c_str(), 1);
    else ::unsetenv("TMPDIR");
    EXPECT_EQ(c.status, "input_failed") << c.detail;
    EXPECT_NE(c.detail.find("(a full disk?)"), std::string::npos) << c.detail;
    EXPECT_TRUE(fs::is_empty(scratch)) << "the cell's scratch folder was left in " << scratch;
}

TEST_F(ProgramsCells, AServerThatDiesDuringTheLoadMakesTheCellProgramFailed) {
    ::setenv("FAKE_SERVER", "die", 1);
    const auto c = cell("memcached");
    EXPECT_EQ(c.status, "program_failed") << c.detail;
    EXPECT_NE(c.detail.find("memcached exited with status 1 while it was loaded: out of memory"), std::string::npos)
        << c.detail;
}

TEST_F(ProgramsCells, AServerThatWritesMoreThanAPipeHoldsDuringTheLoadIsNotBlockedByIt) {
    // Its output unread, the stand-in would block in dd, and its shell would take the SIGTERM
    // only once dd was done: never.
    ::setenv("FAKE_SERVER", "chatty", 1);
    const auto c = cell("memcached");
    ASSERT_TRUE(c.valid()) << c.status << ": " << c.detail;
    EXPECT_EQ(c.repetitions, 2);
}

TEST_F(ProgramsCells, AServerThatCannotListenSaysWhatItPrinted) {
    ::setenv("FAKE_SERVER", "refuse", 1);
    const auto c = cell("memcached");
    EXPECT_EQ(c.status, "program_failed") << c.detail;
    EXPECT_NE(c.detail.find("exited with status 2 before it listened: failed to listen on TCP port"), std::string::npos)
        << c.detail;
}

TEST_F(ProgramsCells, AServerThatNeverListensIsKilledAndTheCellTimedOut) {
    ::setenv("FAKE_SERVER", "silent", 1);
    const auto c = cell("memcached");
    EXPECT_EQ(c.status, "timed_out") << c.detail;
    EXPECT_NE(c.detail.find("memcached did not listen within 2 s; killed"), std::string::npos) << c.detail;
}

TEST_F(ProgramsCells, AClientThatReadsBackValuesOtherThanItStoredMakesTheCellWrongOutput) {
    ::setenv("FAKE_CLIENT", "corrupt", 1);
    const auto c = cell("memcached");
    EXPECT_EQ(c.status, "plain_run_failed") << c.detail;
    EXPECT_NE(c.detail.find("3 values read back were not the ones stored"), std::string::npos) << c.detail;
}

TEST_F(ProgramsCells, AMissingLoadClientIsSkippedWithItsPackage) {
    ASSERT_EQ(::unlink(path("memcaslap").c_str()), 0);
    const auto c = cell("memcached");
    EXPECT_EQ(c.status, "skipped") << c.detail;
    EXPECT_NE(c.detail.find("memcaslap is not installed: apt-get install libmemcached-tools"), std::string::npos)
        << c.detail;
}
