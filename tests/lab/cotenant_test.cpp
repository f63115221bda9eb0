// Co-tenants (measure/cotenant.hpp): the settings and their checks, the busy loops' life
// (started at their nice level, gone after, gone by themselves when the lab dies or their time
// is up), one CPU for a cell and everything it starts, and the suites' busy-loop rows. Every
// wait is bounded. No timing is asserted.
#include "measure/cotenant.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure/harness.hpp"
#include "measure/machine_share.hpp"
#include "run/runner.hpp"
#include "run_cli.hpp"
#include "store/results_io.hpp"
#include "suites/suites.hpp"

namespace lab = contend::lab;

namespace {

using steady = std::chrono::steady_clock;

// Fields of /proc/PID/stat after the name: [0] state, [1] ppid, ... [16] nice. Empty when the
// process is gone.
std::vector<std::string> stat_fields(pid_t pid, std::string* name = nullptr) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return {};
    const auto open = line.find('('), close = line.rfind(')');
    if (name) *name = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> fields;
    for (std::string f; rest >> f;) fields.push_back(f);
    return fields;
}

// Polls `done` every 10 ms for at most `limit`; whether it held.
template <class Done>
bool within(std::chrono::milliseconds limit, Done done) {
    const auto end = steady::now() + limit;
    while (!done()) {
        if (steady::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// Exited: gone, or a zombie that only its parent's wait would clear.
bool exited(pid_t pid) {
    const auto f = stat_fields(pid);
    return f.empty() || f[0] == "Z" || f[0] == "X";
}

int cpus_of_this_thread() {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

// Waits for `pid` at most `limit`; kills it if it overstays. Its exit status, or -1.
int wait_bounded(pid_t pid, std::chrono::milliseconds limit) {
    int status = 0;
    const bool ended = within(limit, [&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
    if (!ended) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Cotenant, ParametersNameTheSettingsAndARowKeepsItsOwnBusyLoops) {
    EXPECT_TRUE(lab::cotenant_params({}).empty()) << "a quiet cell's name does not change";
    EXPECT_EQ(lab::cotenant_params({2, 10, true}),
              (lab::param_list{{"one_cpu", "yes"}, {"busy_loops", "2"}, {"busy_nice", "10"}}));
    EXPECT_EQ(lab::cotenant_params({0, 5, false}), lab::param_list{}) << "a nice level without loops says nothing";

    const lab::param_list busy_row{{"chunk", "4096"}, {"busy_loops", "1"}, {"busy_nice", "19"}};
    EXPECT_EQ(lab::added_cotenant_params(busy_row, {3, 0, true}), (lab::param_list{{"one_cpu", "yes"}}));
    EXPECT_EQ(lab::added_cotenant_params({{"chunk", "64"}}, {3, 0, false}),
              (lab::param_list{{"busy_loops", "3"}, {"busy_nice", "0"}}));

    const auto own = lab::effective_cotenant({1, 19, false}, {4, 0, true});
    EXPECT_EQ(own, (lab::cotenant_options{1, 19, true})) << "the row's own loops, the run's CPU";
    EXPECT_EQ(lab::effective_cotenant({}, {4, 0, false}), (lab::cotenant_options{4, 0, false}));

    EXPECT_EQ(lab::describe_cotenant(0, 0, -1), "none");
    EXPECT_EQ(lab::describe_cotenant(1, 19, -1), "1 busy loop at nice 19");
    EXPECT_EQ(lab::describe_cotenant(2, -5, 3), "2 busy loops at nice -5, on CPU 3");
}

TEST(Cotenant, SettingsOutOfRangeAreRefusedSayingWhich) {
    for (const lab::cotenant_options bad : {lab::cotenant_options{-1, 19, false}, lab::cotenant_options{65, 19, false},
                                            lab::cotenant_options{1, 20, false}, lab::cotenant_options{1, -21, false},
                                            lab::cotenant_options{0, 99, false}}) {
        try {
            lab::check_cotenant(bad);
            ADD_FAILURE() << bad.busy_loops << " loops at nice " << bad.busy_nice << " passed";
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            EXPECT_TRUE(what.find("--busy-loops") != std::string::npos || what.find("--busy-nice") != std::string::npos)
                << what;
        }
    }
    EXPECT_NO_THROW(lab::check_cotenant({lab::max_busy_loops, 19, true}));
    EXPECT_NO_THROW(lab::check_cotenant({0, 0, false}));
    EXPECT_THROW(lab::busy_loops(65, 19, 1), std::invalid_argument) << "the class checks too";
}

TEST(Cotenant, ANiceLevelThisProcessMayNotGiveIsRefusedWithTheReason) {
    // In a child that may not lower its nice level (root gives itself up first), the check
    // must say so, and no busy loop may be left behind by the attempt.
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(report[0]);
        if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
        const rlimit none{0, 0};
        ::setrlimit(RLIMIT_NICE, &none);
        std::string what = "no error";
        try {
            lab::check_cotenant({1, -20, false});
        } catch (const std::invalid_argument& e) {
            what = e.what();
        }
        (void)!::write(report[1], what.data(), what.size());
        ::_exit(0);
    }
    ::close(report[1]);
    ASSERT_EQ(wait_bounded(pid, std::chrono::seconds(10)), 0);
    std::string what;
    char buf[512];
    for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) what.append(buf, static_cast<std::size_t>(n));
    ::close(report[0]);
    EXPECT_NE(what.find("--busy-nice -20"), std::string::npos) << what;
    EXPECT_NE(what.find("CAP_SYS_NICE"), std::string::npos) << what;
}

TEST(Cotenant, BusyLoopsRunAtTheirNiceLevelAndAreGoneOnceStopped) {
    std::vector<pid_t> pids;
    {
        lab::busy_loops busy(2, 17, 60);
        pids = busy.pids();
        ASSERT_EQ(pids.size(), 2u);
        for (const pid_t pid : pids) {
            std::string name;
            const auto f = stat_fields(pid, &name);
            ASSERT_GT(f.size(), 16u) << pid;
            EXPECT_EQ(name, "contend_busy");
            EXPECT_EQ(f[1], std::to_string(::getpid())) << "a child of the process that started it";
            EXPECT_EQ(f[16], "17") << "its nice level";
        }
    }
    for (const pid_t pid : pids) {
        EXPECT_TRUE(stat_fields(pid).empty()) << pid << " is still there: not killed, or not reaped";
        errno = 0;
        EXPECT_EQ(::kill(pid, 0), -1);
        EXPECT_EQ(errno, ESRCH);
    }
    lab::busy_loops none(0, 19, 1);
    EXPECT_TRUE(none.pids().empty());
}

TEST(Cotenant, BusyLoopsEndByThemselvesWhenTheirTimeIsUp) {
    lab::busy_loops busy(1, 19, 0.2);
    const pid_t pid = busy.pids().at(0);
    EXPECT_TRUE(within(std::chrono::seconds(10), [&] { return exited(pid); })) << "a busy loop outlived its time bound";
}

TEST(Cotenant, BusyLoopsDieWithTheProcessThatStartedThem) {
    // This test adopts whatever its children leave behind (a subreaper), so a busy loop that
    // outlived the process that started it would show up here as a child of ours.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    const pid_t lab_pid = ::fork();
    ASSERT_GE(lab_pid, 0);
    if (lab_pid == 0) {  // the "lab": starts two busy loops for a minute, says which, waits
        ::close(report[0]);
        lab::busy_loops busy(2, 19, 60);
        for (const pid_t pid : busy.pids()) (void)!::write(report[1], &pid, sizeof pid);
        ::close(report[1]);
        ::pause();
        ::_exit(0);
    }
    ::close(report[1]);
    std::vector<pid_t> pids(2);
    std::size_t got = 0;
    for (ssize_t n; got < sizeof(pid_t) * 2 &&
                    (n = ::read(report[0], reinterpret_cast<char*>(pids.data()) + got, sizeof(pid_t) * 2 - got)) > 0;)
        got += static_cast<std::size_t>(n);
    ::close(report[0]);
    ::kill(lab_pid, SIGKILL);  // as a lab killed outright: nothing of it runs to clean up
    ::waitpid(lab_pid, nullptr, 0);
    ASSERT_EQ(got, sizeof(pid_t) * 2);
    for (const pid_t pid : pids) {
        const bool ended = within(std::chrono::seconds(10), [&] { return ::waitpid(pid, nullptr, WNOHANG) == pid; });
        if (!ended) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        EXPECT_TRUE(ended) << "busy loop " << pid << " outlived the process that started it";
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Cotenant, OneCpuHoldsTheThreadAndEverythingItStartsThenGivesTheCpusBack) {
    const int before = cpus_of_this_thread();
    {
        lab::one_cpu_scope one;
        EXPECT_EQ(one.cpu(), lab::allowed_cpus().front());
        EXPECT_EQ(cpus_of_this_thread(), 1);
        int started = 0;
        std::thread([&] { started = cpus_of_this_thread(); }).join();
        EXPECT_EQ(started, 1) << "a thread started meanwhile inherits the one CPU";
        lab::busy_loops busy(1, 19, 60);
        cpu_set_t set;
        CPU_ZERO(&set);
        ASSERT_EQ(sched_getaffinity(busy.pids().at(0), sizeof set, &set), 0);
        EXPECT_EQ(CPU_COUNT(&set), 1) << "so does a busy loop";
        EXPECT_TRUE(CPU_ISSET(one.cpu(), &set));
    }
    EXPECT_EQ(cpus_of_this_thread(), before);
}

// --- In a cell --------------------------------------------------------------------------------

namespace {

// A row of the selftest suite, by name.
const lab::contender& selftest_row(const std::string& name) {
    for (const auto& c : lab::find_suite("selftest")->contenders)
        if (c.name == name) return c;
    throw std::runtime_error("no selftest row " + name);
}

const lab::contender& probe() { return selftest_row("cotenant_probe"); }

lab::harness_options cotenant_quick() {
    lab::harness_options o;
    o.min_time_s = 0.002;
    o.repetitions = 2;
    o.deadline_s = 10;
    return o;
}

// Children of this process named as busy loops.
int busy_children() {
    int n = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = entry.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string name;
        const auto f = stat_fields(static_cast<pid_t>(std::stol(pid)), &name);
        n += f.size() > 1 && name == "contend_busy" && f[1] == std::to_string(::getpid());
    }
    return n;
}

}  // namespace

TEST(Cotenant, ACellOnOneCpuBesideBusyLoopsSaysSoInItsNameAndLeavesNothingRunning) {
    auto o = cotenant_quick();
    o.cotenant = {2, 19, true};
    const auto cell = lab::run_cell_in_process(probe(), "selftest", 2, o);
    ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
    EXPECT_EQ(cell.name(), "selftest/cotenant_probe/one_cpu:yes/busy_loops:2/busy_nice:19/workers:2");
    EXPECT_EQ(cell.metric("worker_cpus"), 1);
    EXPECT_EQ(cell.metric("own_thread_cpus"), 1) << "the workload's own thread too";
    EXPECT_EQ(cell.metric("busy_loops_seen"), 2);
    EXPECT_EQ(cell.affinity, std::to_string(lab::allowed_cpus().front()));
    EXPECT_TRUE(cell.oversubscribed) << "two workers on one CPU";
    EXPECT_EQ(busy_children(), 0);

    const auto quiet = lab::run_cell_in_process(probe(), "selftest", 2, cotenant_quick());
    ASSERT_TRUE(quiet.valid()) << quiet.detail;
    EXPECT_EQ(quiet.name(), "selftest/cotenant_probe/workers:2");
    EXPECT_EQ(quiet.metric("busy_loops_seen"), 0);
    EXPECT_EQ(quiet.metric("worker_cpus"), static_cast<double>(lab::allowed_cpus().size()));
}

TEST(Cotenant, OneCpuWithAPinIsRefusedInTheCellToo) {
    auto o = cotenant_quick();
    o.cotenant.one_cpu = true;
    o.pin = "compact";
    const auto cell = lab::run_cell_in_process(probe(), "selftest", 2, o);
    EXPECT_EQ(cell.status, "affinity_mismatch");
    EXPECT_EQ(cell.name(), "selftest/cotenant_probe/one_cpu:yes/workers:2");
}

TEST(Cotenant, ThePlanChecksTheSettingsAndLeavesOutTheSuitesOwnBusyRowsUnderBusyLoops) {
    lab::bench_options o;
    o.suite = "pipe";
    o.harness.cotenant = {1, 19, false};
    for (const auto* c : lab::plan_suite(o).contenders) EXPECT_EQ(c->cotenant.busy_loops, 0) << c->id();
    o.contenders = "*/busy_loops:*";
    EXPECT_THROW(lab::plan_suite(o), std::invalid_argument) << "nothing but busy rows left";
    o.harness.cotenant = {0, 19, true};
    EXPECT_EQ(lab::plan_suite(o).contenders.size(), 4u) << "one CPU adds to the busy rows (nice 19 and nice 0)";
    o.harness.pin = "compact";
    EXPECT_THROW(lab::plan_suite(o), std::invalid_argument);
    o.harness.pin = "none";
    o.harness.cotenant = {65, 19, false};
    EXPECT_THROW(lab::plan_suite(o), std::invalid_argument);
}

// Each of the three suites runs its row beside a nice-19 busy loop (a co-tenant that yields
// to it), and beside a nice-0 one (a co-tenant with a fair claim to a CPU), the rows the
// comparison needs with it; each busy row comes right after its quiet row or another busy
// row of it. No other suite has busy rows.
TEST(Cotenant, ThePipePoolAndServerSuitesRunTheirBusyLoopRowsBesideTheirQuietRows) {
    using busy_rows = std::vector<std::pair<std::string, int>>;  // quiet row, nice
    const std::map<std::string, busy_rows> expected = {
        {"pipe",
         {{"contend/chunk:4096", 0},
          {"contend/chunk:4096", 19},
          {"mutex_ring/chunk:4096", 0},
          {"socketpair/chunk:4096", 0}}},
        {"pool",
         {{"contend/queue:global/mode:sustained", 0},
          {"contend/queue:global/mode:sustained", 19},
          {"contend/queue:local/mode:sustained", 0},
          {"mutex_pool/queue:global/mode:sustained", 0}}},
        {"server", {{"contend/route:json/connections:16", 0}, {"contend/route:json/connections:16", 19}}}};
    for (const auto& s : lab::all_suites()) {
        busy_rows found;
        for (std::size_t i = 0; i < s.contenders.size(); ++i) {
            const auto& row = s.contenders[i];
            if (row.cotenant.busy_loops == 0) continue;
            const int nice = row.cotenant.busy_nice;
            const std::string tail = "/busy_loops:1/busy_nice:" + std::to_string(nice);
            const std::string id = row.id();
            ASSERT_GT(id.size(), tail.size()) << id;
            ASSERT_EQ(id.substr(id.size() - tail.size()), tail) << id;
            const std::string quiet = id.substr(0, id.size() - tail.size());
            found.emplace_back(quiet, nice);
            EXPECT_EQ(row.cotenant, (lab::cotenant_options{1, nice, false})) << id;
            EXPECT_NE(row.description.find("busy loop at nice " + std::to_string(nice)), std::string::npos)
                << row.description;
            ASSERT_GT(i, 0u);
            const std::string before = s.contenders[i - 1].id();
            EXPECT_EQ(before.substr(0, quiet.size()), quiet)
                << id << ": right after its quiet row or its other busy row";
        }
        const auto it = expected.find(s.name);
        EXPECT_EQ(found, it == expected.end() ? busy_rows{} : it->second) << s.name;
    }
    lab::suite s{"x", "", {}, {1}};
    EXPECT_THROW(lab::add_busy_loop_row(s, "nosuch"), std::logic_error);
}

// --- Co-tenants the lab did not start -----------------------------------------------------

namespace {

const lab::contender& counting() { return selftest_row("ok"); }

lab::harness_options long_enough() {
    lab::harness_options o;
    o.min_time_s = 0.05;
    o.repetitions = o.min_repetitions = 3;
    o.deadline_s = 10;
    return o;
}

}  // namespace

// A cell measured beside busy loops that the test starts itself (the cell knows nothing of
// them: no busy_loops parameter) is marked shared, with what they took of its CPUs; a cell
// on the machine left quiet is not. A quiet cell may still meet another program's burst on a
// loaded machine: up to five tries for one without it.
TEST(Cotenant, ACellBesideBusyLoopsItDidNotStartIsMarkedSharedAndAQuietCellIsNot) {
    lab::cell_result quiet;
    for (int attempt = 0; attempt < 5; ++attempt) {
        quiet = lab::run_cell_in_process(counting(), "selftest", 2, long_enough());
        ASSERT_TRUE(quiet.valid()) << quiet.status << ": " << quiet.detail;
        ASSERT_TRUE(std::isfinite(quiet.others_cpu_share)) << "measured where /proc can be read";
        if (!quiet.shared()) break;
    }
    EXPECT_FALSE(quiet.shared()) << "others took " << quiet.others_cpu_share << " of a quiet cell's CPUs";
    EXPECT_GE(quiet.others_cpu_share, 0);

    lab::cell_result beside;
    {
        lab::busy_loops busy(static_cast<std::int32_t>(lab::allowed_cpus().size()), 0, 60);
        beside = lab::run_cell_in_process(counting(), "selftest", 2, long_enough());
    }
    ASSERT_TRUE(beside.valid()) << beside.status << ": " << beside.detail;
    EXPECT_EQ(beside.name(), "selftest/ok/workers:2") << "the cell knows nothing of the loops";
    EXPECT_TRUE(beside.shared()) << "others took only " << beside.others_cpu_share;
    EXPECT_LE(beside.others_cpu_share, 1);
    EXPECT_GE(beside.others_runnable, 0);

    lab::run_result run;
    run.cells = {quiet, beside};
    const std::string table = lab::to_table(run);
    EXPECT_NE(table.find("! shared: other processes took more than 5 %"), std::string::npos) << table;
    EXPECT_NE(table.find("    selftest/ok/workers:2: "), std::string::npos) << table;
    const auto back = lab::run_from_json(lab::to_json(run));
    ASSERT_EQ(back.cells.size(), 2u);
    EXPECT_DOUBLE_EQ(back.cells[1].others_cpu_share, beside.others_cpu_share);
    EXPECT_TRUE(back.cells[1].shared());
    EXPECT_FALSE(back.cells[0].shared());
}

// The lab's own busy loops (--busy-loops, a suite's busy-loop row) are declared in the row's
// name: their CPU time is the cell's, so a cell beside them alone is not marked, even at nice 0
// where they take half its CPUs.
TEST(Cotenant, TheLabsOwnBusyLoopsAreTheCellsOwnAndDoNotMarkIt) {
    auto o = long_enough();
    o.cotenant = {static_cast<std::int32_t>(lab::allowed_cpus().size()), 0, false};
    lab::cell_result cell;
    for (int attempt = 0; attempt < 5; ++attempt) {
        cell = lab::run_cell_in_process(counting(), "selftest", 2, o);
        ASSERT_TRUE(cell.valid()) << cell.status << ": " << cell.detail;
        if (!cell.shared() && cell.others_runnable < o.cotenant.busy_loops) break;  // else: a burst of others
    }
    EXPECT_NE(cell.name().find("/busy_loops:"), std::string::npos) << cell.name();
    EXPECT_FALSE(cell.shared()) << "others took " << cell.others_cpu_share;
    EXPECT_LT(cell.others_runnable, o.cotenant.busy_loops) << "its own loops are not others' runnable threads";
}

// --wait-quiet: a look at CPUs that busy loops the test started keep busy is never quiet, and
// the wait ends after the time given; with the loops gone it is quiet within a few looks.
TEST(Cotenant, WaitUntilQuietWaitsItsTimeBesideBusyLoopsAndEndsOnceTheyAreGone) {
    const auto cpus = lab::allowed_cpus();
    {
        lab::busy_loops busy(static_cast<std::int32_t>(cpus.size()), 0, 60);
        const auto w = lab::wait_until_quiet(cpus, 0.5);
        EXPECT_FALSE(w.quiet);
        EXPECT_GE(w.waited_s, 0.5);
        EXPECT_GT(w.last_share, lab::shared_above);
    }
    const auto w = lab::wait_until_quiet(cpus, 10);
    EXPECT_TRUE(w.quiet) << "others took " << w.last_share << " after " << w.waited_s << " s";
    EXPECT_LE(w.last_share, lab::shared_above);
    std::atomic<int> stop{15};
    lab::busy_loops busy(static_cast<std::int32_t>(cpus.size()), 0, 60);
    EXPECT_LT(lab::wait_until_quiet(cpus, 30, &stop).waited_s, 10) << "a stop ends the wait";
}

// The option end to end: refused out of range (exit 2, nothing measured), and beside busy
// loops the run says the CPUs never were quiet, then measures anyway and marks the cell.
TEST(Cotenant, TheWaitQuietOptionRefusesBadSecondsAndSaysWhenTheCpusNeverWereQuiet) {
    for (const char* bad : {"nan", "-1", "1e300", "inf", "soon"}) {
        const auto o = contend_test::run_cli(std::string("bench --suite selftest --contenders ok --workers 2 "
                                                         "--no-history --json /dev/null --wait-quiet ") +
                                             bad);
        EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.output;
    }
    lab::busy_loops busy(static_cast<std::int32_t>(lab::allowed_cpus().size()), 0, 60);
    const auto o = contend_test::run_cli(
        "bench --suite selftest --contenders ok --workers 2 --min-time 20 --no-history --json - --wait-quiet 0.3");
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("contend bench: never quiet in "), std::string::npos) << o.output;
    EXPECT_NE(o.output.find(" before selftest/ok/workers:2: other processes took "), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("\"others_cpu_share\""), std::string::npos) << o.output;
}
