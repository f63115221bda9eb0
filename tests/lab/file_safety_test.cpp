// The CLI never loses a user's files, whatever it is told: each test pins one way it once
// did (an output onto an input, a full disk, a bad path or label found after the run, a
// symbolic link, NaN, a foreign database, a signal, a bad worker list or pin). No timing is
// asserted; every wait has a deadline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "run_cli.hpp"
#include "store/history.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using contend_test::cli_outcome;
using contend_test::run_cli;
using contend_test::shell_quote;

class FileSafety : public contend_test::temp_dir_test {
protected:
    std::string q(const std::string& name) const { return shell_quote(path(name)); }
    // A quick, valid run of the self-test suite.
    static std::string quick() { return "bench --suite selftest --contenders ok --workers 1 --min-time 1 --reps 2 "; }
    // A history holding one run, and its bytes.
    std::string make_history(const std::string& name) {
        const cli_outcome o = run_cli(quick() + "--json " + q("first.json") + " --db " + q(name));
        EXPECT_EQ(o.exit_code, 0) << o.output;
        return read(path(name));
    }
};

void expect_refused(const cli_outcome& o, const std::string& says) {
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
}

// --- 1. An output onto an input or onto another output -------------------------------------

TEST_F(FileSafety, BenchRefusesAJsonOrCsvPathThatIsTheHistory) {
    const std::string history = make_history("same.db");
    expect_refused(run_cli(quick() + "--db " + q("same.db") + " --json " + q("same.db")), "same file");
    expect_refused(run_cli(quick() + "--no-history --db " + q("same.db") + " --csv " + q("same.db")), "same file");
    expect_refused(run_cli(quick() + "--no-history --db " + q("same.db") + " --json " + q("./same.db")), "same file");
    EXPECT_EQ(read(path("same.db")), history);
}

TEST_F(FileSafety, ReportRefusesToWriteItsPageOverItsInput) {
    const std::string history = make_history("r.db");
    expect_refused(run_cli("report --db " + q("r.db") + " -o " + q("r.db")), "same file");
    EXPECT_EQ(read(path("r.db")), history);
    const std::string json = read(path("first.json"));
    expect_refused(run_cli("report --json " + q("first.json") + " -o " + q("first.json")), "same file");
    EXPECT_EQ(read(path("first.json")), json);
}

// --- 2. A full disk, a device that is full ----------------------------------------------------

TEST_F(FileSafety, AFullDiskLeavesThePreviousResultsFileValid) {
    make_history("h.db");
    const std::string previous = read(path("first.json"));
    ASSERT_GT(previous.size(), 1024u);
    // A 1 KiB file size limit fails the write the way a full disk does; SIGXFSZ ignored so
    // that the write returns an error instead of killing the process.
    const cli_outcome o =
        run_cli("bash -c " + shell_quote("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"") + " " +
                    shell_quote(CONTEND_CLI_PATH) + " " + quick() + "--no-history --json " + q("first.json"),
                false);
    EXPECT_EQ(o.exit_code, 4) << o.output;
    EXPECT_NE(o.output.find("could not write --json"), std::string::npos) << o.output;
    EXPECT_EQ(read(path("first.json")), previous) << "the previous file is untouched";
    EXPECT_NO_THROW(contend::lab::run_from_json(read(path("first.json"))));
}

TEST_F(FileSafety, ACsvToAFullDeviceFailsAloneAndSaysSo) {
    const cli_outcome o = run_cli(quick() + "--json " + q("run.json") + " --db " + q("h.db") + " --csv /dev/full");
    EXPECT_EQ(o.exit_code, 4) << o.output;
    EXPECT_NE(o.output.find("could not write --csv /dev/full"), std::string::npos) << o.output;
    EXPECT_NO_THROW(contend::lab::run_from_json(read(path("run.json")))) << "the JSON was still written";
    EXPECT_EQ(contend::lab::history_store(path("h.db")).run_count(), 1u) << "and the history appended";
}

// --- 3. Paths and label checked before the first cell; outputs independent -------------------

TEST_F(FileSafety, ABadOutputPathOrLabelIsRefusedBeforeAnythingRuns) {
    write(path("plain"), "x");
    expect_refused(run_cli(quick() + "--json " + q("plain/run.json") + " --db " + q("h.db")), "not a folder");
    expect_refused(run_cli(quick() + "--json '' --db " + q("h.db")), "empty path");
    expect_refused(run_cli(quick() + "--json " + q("run.json") + " --db " + q("h.db") + " --label $'\\xff\\xfe'"),
                   "label");
    expect_refused(run_cli(quick() + "--json " + q("run.json") + " --db " + q("h.db") + " --label $'a\\nb'"), "label");
    EXPECT_FALSE(fs::exists(path("h.db"))) << "nothing ran, so no history was created";
    EXPECT_FALSE(fs::exists(path("run.json")));
}

// --- 5. A symbolic link, and '-' ---------------------------------------------------------------

TEST_F(FileSafety, ReportFollowsASymbolicLinkAndDashIsStandardOutput) {
    make_history("h.db");
    write(path("real.html"), "old");
    fs::create_symlink("real.html", path("link.html"));
    cli_outcome o = run_cli("report --db " + q("h.db") + " -o " + q("link.html"));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_TRUE(fs::is_symlink(path("link.html")));
    EXPECT_NE(read(path("real.html")).find("<!DOCTYPE html>"), std::string::npos);

    o = run_cli("cd " + shell_quote(dir_.string()) + " && " + shell_quote(CONTEND_CLI_PATH) + " report --db " +
                    q("h.db") + " -o -",
                false);
    ASSERT_EQ(o.exit_code, 0) << o.output.substr(0, 300);
    EXPECT_NE(o.output.find("<!DOCTYPE html>"), std::string::npos);
    EXPECT_FALSE(fs::exists(path("-"))) << "no file named '-'";
}

// --- 6. NaN and friends --------------------------------------------------------------------

TEST_F(FileSafety, NonFiniteOrNonPositiveTimesAreRefused) {
    const std::string files = "--json " + q("run.json") + " --db " + q("h.db") + " ";
    for (const std::string bad : {"--min-time nan", "--min-time inf", "--min-time 0", "--min-time -5", "--deadline nan",
                                  "--deadline -inf", "--deadline 0", "--reps 0", "--reps 1001"}) {
        const cli_outcome o = run_cli("bench --suite selftest --contenders ok --workers 1 " + files + bad);
        EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.output;
    }
    EXPECT_FALSE(fs::exists(path("h.db")));
}

// --- 7. A database of another schema, an empty file -----------------------------------------

void make_foreign_database(const std::string& file) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance REAL);"
                           "INSERT INTO accounts (balance) VALUES (12.5);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
}

TEST_F(FileSafety, AForeignDatabaseIsRefusedUntouchedByBenchAndReport) {
    make_foreign_database(path("other.db"));
    const std::string before = read(path("other.db"));
    cli_outcome o = run_cli(quick() + "--json " + q("run.json") + " --db " + q("other.db"));
    expect_refused(o, "not a contend history");
    EXPECT_FALSE(fs::exists(path("run.json"))) << "refused before the run";
    o = run_cli("report --db " + q("other.db") + " -o " + q("page.html"));
    EXPECT_NE(o.exit_code, 0);
    EXPECT_NE(o.output.find("not a contend history"), std::string::npos) << o.output;
    EXPECT_EQ(read(path("other.db")), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "no journal, no page";
}

TEST_F(FileSafety, ReportOnAnEmptyFileWritesNothingIntoIt) {
    write(path("empty.db"), "");
    const cli_outcome o = run_cli("report --db " + q("empty.db") + " -o " + q("page.html"));
    EXPECT_NE(o.exit_code, 0);
    EXPECT_NE(o.output.find("no contend history"), std::string::npos) << o.output;
    EXPECT_EQ(fs::file_size(path("empty.db")), 0u) << "a read command creates no tables";
    EXPECT_FALSE(fs::exists(path("page.html")));
}

// --- 8. A signal to the parent alone ----------------------------------------------------------

// Starts the CLI with argv (no shell), its output into `log`.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> all = {CONTEND_CLI_PATH};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, all[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -1;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> kids;
    std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
    pid_t k;
    while (in >> k) kids.push_back(k);
    return kids;
}

// Alive and not a zombie waiting for a reaper.
bool running(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return false;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Waits, up to `limit`, for `done`.
template <class F>
bool eventually(F done, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

// Starts a run whose second cell deadlocks (with a long deadline) and returns once that
// cell's process runs: the first cell is then done. The first cell's repetitions last
// 100 ms, so that its process lives long enough to be seen (at least three repetitions).
pid_t start_run_stuck_in_second_cell(const std::string& dir, pid_t& second_child) {
    const pid_t pid =
        spawn_cli({"bench", "--suite", "selftest", "--contenders", "ok,deadlock", "--workers", "1", "--min-time", "100",
                   "--reps", "2", "--deadline", "300", "--json", dir + "/run.json", "--db", dir + "/h.db"},
                  dir + "/log.txt");
    if (pid < 0) return pid;
    // Cell processes only: before the first cell the CLI also starts a shell (git describe).
    auto is_cell = [](pid_t k) {
        std::ifstream in("/proc/" + std::to_string(k) + "/cmdline");
        const std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        return cmdline.find("__cell") != std::string::npos;
    };
    pid_t first = 0;
    second_child = 0;
    eventually([&] {
        for (const pid_t k : children_of(pid)) {
            if (!is_cell(k)) continue;
            if (first == 0) first = k;
            if (k != first) second_child = k;
        }
        return second_child != 0;
    });
    return pid;
}

TEST_F(FileSafety, ASignalToTheParentEndsTheCellChildAndKeepsTheCellsDone) {
    for (const int sig : {SIGINT, SIGTERM}) {
        SCOPED_TRACE(sig);
        fs::remove(path("run.json"));
        pid_t child = 0;
        const pid_t pid = start_run_stuck_in_second_cell(dir_.string(), child);
        ASSERT_GT(pid, 0);
        ASSERT_NE(child, 0) << "the second cell never started: " << read(path("log.txt"));
        ASSERT_EQ(kill(pid, sig), 0);  // the parent alone, not its process group
        int status = 0;
        ASSERT_TRUE(eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; })) << "the parent did not exit";
        ASSERT_TRUE(WIFEXITED(status)) << "the first signal is handled, not fatal";
        EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << read(path("log.txt"));
        EXPECT_TRUE(eventually([&] { return !running(child); }, std::chrono::seconds(10))) << "cell child left running";
        const auto run = contend::lab::run_from_json(read(path("run.json")));
        ASSERT_EQ(run.cells.size(), 1u) << "the finished cell is kept";
        EXPECT_EQ(run.cells[0].contender, "ok");
        EXPECT_NE(run.context.run_status.find("interrupted by SIG"), std::string::npos) << run.context.run_status;
        EXPECT_NE(run.context.run_status.find("after 1 of 2 cells"), std::string::npos) << run.context.run_status;
    }
    EXPECT_EQ(contend::lab::history_store(path("h.db")).run_count(), 2u);
}

TEST_F(FileSafety, ACellChildDiesWithItsKilledParent) {
    pid_t child = 0;
    const pid_t pid = start_run_stuck_in_second_cell(dir_.string(), child);
    ASSERT_GT(pid, 0);
    ASSERT_NE(child, 0) << read(path("log.txt"));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(eventually([&] { return !running(child); }, std::chrono::seconds(10)))
        << "the cell's process outlived its parent";
    if (running(child)) kill(child, SIGKILL);
}

// --- 10. Worker lists, pins, numbers out of range ------------------------------------------------

TEST_F(FileSafety, BadWorkerListsAndPinsAreRefusedBeforeTheRun) {
    const std::string files = " --json " + q("run.json") + " --db " + q("h.db");
    const std::string base = "bench --suite selftest --contenders ok --min-time 1 --reps 2";
    expect_refused(run_cli(base + " --workers 1,1" + files), "given twice");
    expect_refused(run_cli(base + " --workers 1,,2" + files), "not a worker count");
    expect_refused(run_cli(base + " --workers 1,2," + files), "empty item");
    expect_refused(run_cli(base + " --workers 0" + files), "outside 1..4096");
    expect_refused(run_cli(base + " --workers 5000" + files), "outside 1..4096");
    expect_refused(run_cli(base + " --workers two" + files), "not a worker count");
    expect_refused(run_cli(base + " --workers 1 --pin 9999" + files), "not one this process may run on");
    expect_refused(run_cli(base + " --workers 1 --pin 0,9999" + files), "not one this process may run on");
    EXPECT_FALSE(fs::exists(path("h.db")));
}

// A repetition can never last less than --min-time, so one at least as long as its deadline
// would be killed every time: the run is refused before it starts (it used to spend a deadline
// per cell and then report every cell invalid), however large the number (1e300 ms too).
TEST_F(FileSafety, ARepetitionTimeThatCannotEndBeforeItsDeadlineIsRefusedBeforeTheRun) {
    const std::string files = " --json " + q("run.json") + " --db " + q("h.db");
    const std::string base = "bench --suite selftest --contenders ok --workers 1 --reps 1";
    for (const std::string times : {"--min-time 1000 --deadline 1", "--min-time 5000 --deadline 2", "--min-time 1e300",
                                    "--min-time 1e300 --full"})
        expect_refused(run_cli(base + " " + times + files), "shorter than the deadline");
    EXPECT_FALSE(fs::exists(path("h.db")));
    EXPECT_FALSE(fs::exists(path("run.json")));
}

TEST_F(FileSafety, AWorkerCountOutOfRangeInAResultsFileIsRefusedNotWrapped) {
    make_history("h.db");
    auto doc = nlohmann::json::parse(read(path("first.json")));
    doc["benchmarks"][0]["workers"] = 4294967294ull;
    write(path("bad.json"), doc.dump());
    const cli_outcome o = run_cli("report --json " + q("bad.json") + " -o " + q("page.html"));
    EXPECT_NE(o.exit_code, 0);
    EXPECT_NE(o.output.find("out of range"), std::string::npos) << o.output;
    EXPECT_FALSE(fs::exists(path("page.html")));
}

// --- 11. Import and compare cut short: a signal, kill -9 -----------------------------------------

// A Google Benchmark file of `benchmarks` benchmarks, three repetitions each, at `ns` a
// repetition: big enough (about 20 MB at 50,000) that reading and storing it takes a while.
std::string big_google_benchmark_file(int benchmarks, double ns) {
    std::string text = R"({"context": {"executable": "./big", "date": "2026-11-30"}, "benchmarks": [)";
    for (int b = 0; b < benchmarks; ++b)
        for (int r = 0; r < 3; ++r) {
            const std::string name = "BM_case/" + std::to_string(b);
            text += std::string(b || r ? ",\n" : "\n") + R"({"name": ")" + name + R"(", "run_name": ")" + name +
                    R"(", "run_type": "iteration", "repetitions": 3, "repetition_index": )" + std::to_string(r) +
                    R"(, "iterations": 1000, "real_time": )" + std::to_string(ns + r * 0.01) + R"(, "cpu_time": )" +
                    std::to_string(ns) + R"(, "time_unit": "ns"})";
        }
    return text + "]}";
}

// Waits (bounded) until `pid` has its handler for SIGTERM installed (SigCgt in its status):
// from then on a signal is the CLI's to handle, not the default action's.
bool catches_sigterm(pid_t pid) {
    return eventually([&] {
        std::ifstream in("/proc/" + std::to_string(pid) + "/status");
        std::string line;
        while (std::getline(in, line))
            if (line.starts_with("SigCgt:"))
                return ((std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1) != 0;
        return false;
    });
}

// Waits (bounded) for `pid` to exit; its wait status, or -1 (then it is killed).
int exit_status_of(pid_t pid) {
    int status = 0;
    if (eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; })) return status;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

// The files of `dir` whose names hold ".tmp.": write_output_file's temporary files.
std::vector<std::string> temporary_files(const fs::path& dir) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(entry.path());
    return found;
}

TEST_F(FileSafety, ASignalStopsAHistoryImportWhichStoresNothingAndExitsWith128PlusTheSignal) {
    write(path("small.json"), big_google_benchmark_file(2, 10));
    ASSERT_EQ(run_cli("history import " + q("small.json") + " --label first --db " + q("h.db")).exit_code, 0);
    const std::string before = read(path("h.db"));
    write(path("big.json"), big_google_benchmark_file(50000, 10));
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        SCOPED_TRACE(sig);
        const pid_t pid =
            spawn_cli({"history", "import", path("big.json"), "--label", "big", "--db", path("h.db")}, path("log.txt"));
        ASSERT_GT(pid, 0);
        ASSERT_TRUE(catches_sigterm(pid)) << read(path("log.txt"));
        // Held still while the signal is sent: it then arrives wherever the import is, which
        // is reading or storing the file (it takes far longer than this takes).
        ASSERT_EQ(kill(pid, SIGSTOP), 0);
        ASSERT_EQ(kill(pid, sig), 0);
        ASSERT_EQ(kill(pid, SIGCONT), 0);
        const int status = exit_status_of(pid);
        ASSERT_TRUE(WIFEXITED(status)) << "the first signal is handled, not fatal: " << status;
        EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << read(path("log.txt"));
        EXPECT_NE(read(path("log.txt")).find("nothing was stored"), std::string::npos) << read(path("log.txt"));
        EXPECT_EQ(read(path("h.db")), before) << "the history changed";
        EXPECT_FALSE(fs::exists(path("h.db-journal")));
    }
    EXPECT_EQ(contend::lab::history_store(path("h.db"), contend::lab::history_access::read_only).run_count(), 1u);
}

TEST_F(FileSafety, ASignalStopsACompareWhichReplacesNoOutputAndExitsWith128PlusTheSignal) {
    write(path("base.json"), big_google_benchmark_file(20000, 10));
    write(path("test.json"), big_google_benchmark_file(20000, 20));
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        SCOPED_TRACE(sig);
        write(path("out.json"), "old json");
        write(path("out.md"), "old markdown");
        const pid_t pid = spawn_cli(
            {"compare", path("base.json"), path("test.json"), "--json", path("out.json"), "--markdown", path("out.md")},
            path("log.txt"));
        ASSERT_GT(pid, 0);
        ASSERT_TRUE(catches_sigterm(pid)) << read(path("log.txt"));
        ASSERT_EQ(kill(pid, SIGSTOP), 0);
        ASSERT_EQ(read(path("out.json")), "old json") << "compare finished before the signal: a bigger input needed";
        ASSERT_EQ(kill(pid, sig), 0);
        ASSERT_EQ(kill(pid, SIGCONT), 0);
        const int status = exit_status_of(pid);
        ASSERT_TRUE(WIFEXITED(status)) << "the first signal is handled, not fatal: " << status;
        EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << read(path("log.txt"));
        EXPECT_EQ(read(path("out.json")), "old json");
        EXPECT_EQ(read(path("out.md")), "old markdown");
        EXPECT_EQ(temporary_files(dir_), std::vector<std::string>{});
    }
}

// Issue item 14: compare and import read their input whole before looking at the signal, and
// an input that never ends (a FIFO, or `<(...)` whose writer hangs) held them in that read for
// good: the first SIGINT did nothing. (The parse of a big file looks at it too: tested with
// the readers, CompareInputs.AStopSignalEndsTheParseOfEitherFormat.)
TEST_F(FileSafety, TheFirstSignalStopsCompareAndImportReadingAnInputThatNeverEnds) {
    write(path("test.json"), big_google_benchmark_file(2, 20));
    ASSERT_EQ(::mkfifo(path("in.fifo").c_str(), 0600), 0);
    const std::vector<std::vector<std::string>> commands = {
        {"compare", path("in.fifo"), path("test.json"), "--json", path("out.json")},
        {"history", "import", path("in.fifo"), "--label", "l", "--db", path("h.db")}};
    for (const auto& args : commands) {
        SCOPED_TRACE(args[0]);
        // Held open by the test for reading and writing (so its open waits for no reader): the
        // CLI reads the start of a results file, then waits for the rest, which never comes.
        const int fifo = ::open(path("in.fifo").c_str(), O_RDWR | O_CLOEXEC);
        ASSERT_GE(fifo, 0);
        const std::string start = big_google_benchmark_file(2, 10).substr(0, 200);
        ASSERT_EQ(::write(fifo, start.data(), start.size()), static_cast<ssize_t>(start.size()));
        const pid_t pid = spawn_cli(args, path("log.txt"));
        ASSERT_GT(pid, 0);
        const bool catches = catches_sigterm(pid);
        const bool read_start = eventually([&] {
            int unread = -1;
            return (::ioctl(fifo, FIONREAD, &unread) == 0 && unread == 0) || !running(pid);
        });
        const bool waiting = running(pid);
        kill(pid, SIGINT);
        const int status = exit_status_of(pid);
        ::close(fifo);
        ASSERT_TRUE(catches && read_start && waiting) << read(path("log.txt"));
        ASSERT_TRUE(WIFEXITED(status)) << "still reading after the signal (killed): " << status;
        EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << read(path("log.txt"));
        EXPECT_FALSE(fs::exists(path("out.json")));
        EXPECT_FALSE(fs::exists(path("h.db")));
    }
}

TEST_F(FileSafety, SignalsWhileAnOutputIsWrittenLeaveTheOldOutputAndNoTemporaryFile) {
    // Caught while its temporary file exists: compare is held still as soon as the file
    // appears, then sent two signals, the second of which ends it at once. A large --json output (tens of MB, flushed
    // to disk) stays a temporary file long enough to be caught; a try that misses it is tried again.
    write(path("base.json"), big_google_benchmark_file(50000, 10));
    write(path("test.json"), big_google_benchmark_file(50000, 20));
    bool caught = false;
    for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
        write(path("out.json"), "old json");
        const pid_t pid =
            spawn_cli({"compare", path("base.json"), path("test.json"), "--json", path("out.json")}, path("log.txt"));
        ASSERT_GT(pid, 0);
        // Looked at every 100 us, not eventually's 20 ms: the file lives for milliseconds.
        bool appeared = false;
        for (const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
             !appeared && running(pid) && std::chrono::steady_clock::now() < end;
             std::this_thread::sleep_for(std::chrono::microseconds(100)))
            appeared = !temporary_files(dir_).empty();
        ASSERT_EQ(kill(pid, SIGSTOP), 0);
        caught = appeared && !temporary_files(dir_).empty();
        ASSERT_EQ(kill(pid, SIGTERM), 0);
        ASSERT_EQ(kill(pid, SIGINT), 0);  // another signal: two of one kind would be one
        ASSERT_EQ(kill(pid, SIGCONT), 0);
        const int status = exit_status_of(pid);
        EXPECT_NE(status, -1);
        EXPECT_EQ(temporary_files(dir_), std::vector<std::string>{}) << read(path("log.txt"));
        if (!caught) continue;
        EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) > 128)) << status;
        EXPECT_EQ(read(path("out.json")), "old json") << "replaced after a signal: " << read(path("log.txt"));
    }
    EXPECT_TRUE(caught) << "compare never caught while writing its output: nothing was tested";
}

TEST_F(FileSafety, AHistoryImportKilledWhileStoringLeavesAHistoryTheNextCommandReads) {
    write(path("small.json"), big_google_benchmark_file(2, 10));
    ASSERT_EQ(run_cli("history import " + q("small.json") + " --label first --db " + q("h.db")).exit_code, 0);
    write(path("big.json"), big_google_benchmark_file(50000, 10));
    // Killed outright (as a second signal or a full disk's crash would end it) once its
    // journal is hot: SQLite has written the journal's header (its first byte 0xd9) before
    // changing the file itself, so the file now holds part of the uncommitted append.
    const auto hot = [&] {
        const std::string journal = read(path("h.db-journal"));
        return !journal.empty() && static_cast<unsigned char>(journal[0]) == 0xd9;
    };
    const pid_t pid =
        spawn_cli({"history", "import", path("big.json"), "--label", "big", "--db", path("h.db")}, path("log.txt"));
    ASSERT_GT(pid, 0);
    eventually([&] { return hot() || !running(pid); });
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    exit_status_of(pid);
    ASSERT_TRUE(hot()) << "the import was not caught storing: " << read(path("log.txt"));
    // Every command reads it again, the half-stored run gone; the journal is rolled back.
    cli_outcome o = run_cli("history list --db " + q("h.db"));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("1 run in"), std::string::npos) << o.output;
    o = run_cli("history import " + q("small.json") + " --label second --db " + q("h.db"));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_FALSE(fs::exists(path("h.db-journal")));
    EXPECT_EQ(contend::lab::history_store(path("h.db"), contend::lab::history_access::read_only).run_count(), 2u);
}

// --- 12. The history's own files, its kind, its permissions (issue items 15, 16, 18, 19) --------

TEST_F(FileSafety, AnOutputOntoTheHistorysJournalOrWalIsRefused) {
    const std::string history = make_history("h.db");
    for (const std::string suffix : {"-journal", "-wal", "-shm"}) {
        SCOPED_TRACE(suffix);
        expect_refused(run_cli(quick() + "--db " + q("h.db") + " --json " + q("h.db" + suffix)), "same file");
        expect_refused(run_cli(quick() + "--no-history --db " + q("h.db") + " --csv " + q("h.db" + suffix)),
                       "same file");
        expect_refused(run_cli("report --db " + q("h.db") + " -o " + q("h.db" + suffix)), "same file");
        expect_refused(run_cli("history --html " + q("h.db" + suffix) + " --db " + q("h.db")), "same file");
    }
    EXPECT_EQ(read(path("h.db")), history);
}

TEST_F(FileSafety, AFifoAsTheHistoryIsRefusedNotWaitedOn) {
    ASSERT_EQ(::mkfifo(path("fifo.db").c_str(), 0600), 0);
    // Bounded: SQLite's open of a FIFO used to block until a writer came, past any signal.
    for (const std::string& command :
         std::vector<std::string>{"history list", "history --changes", "report -o " + q("page.html")}) {
        SCOPED_TRACE(command);
        const cli_outcome o = run_cli(
            "timeout -s KILL 60 " + shell_quote(CONTEND_CLI_PATH) + " " + command + " --db " + q("fifo.db"), false);
        expect_refused(o, "not a regular file (a FIFO)");
    }
    expect_refused(run_cli("timeout -s KILL 60 " + shell_quote(CONTEND_CLI_PATH) + " " + quick() + "--json " +
                               q("run.json") + " --db " + q("fifo.db"),
                           false),
                   "not a regular file");
    EXPECT_FALSE(fs::exists(path("run.json")));
}

// A history one of whose runs carries terminal escapes, a bidirectional override and newlines
// in its date, CPU model and status, as an imported file could.
TEST_F(FileSafety, HistoryListPrintsNoTerminalEscapeOrFakeLine) {
    make_history("h.db");
    auto run = contend::lab::run_from_json(read(path("first.json")));
    run.context.cpu_model = "\x1b]0;owned\x07\x1b[2J CPU";
    run.context.date =
        "2026\xe2\x80\xae"
        "01";
    run.context.run_status = "complete\n3  2026-01-01  fake  cpu  9 cells (9 valid)  complete";
    contend::lab::history_store(path("h.db")).append(run);
    const cli_outcome o = run_cli("history list --db " + q("h.db"));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_EQ(o.output.find('\x1b'), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("\xe2\x80\xae"), std::string::npos) << o.output;
    EXPECT_EQ(std::count(o.output.begin(), o.output.end(), '\n'), 3) << "two runs and the total: " << o.output;
    EXPECT_NE(o.output.find("\\x1B"), std::string::npos) << "shown escaped: " << o.output;
}

// Run as another user when this one is root, whom no permission stops.
std::string as_unprivileged(const std::string& command) {
    if (::geteuid() != 0) return command;
    return "setpriv --reuid=65534 --regid=65534 --clear-groups " + command;
}

TEST_F(FileSafety, AHistoryThatCannotBeWrittenIsRefusedBeforeTheRun) {
    make_history("h.db");
    fs::permissions(dir_, fs::perms::all);  // the other user may enter the folder
    fs::permissions(path("h.db"), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const std::string before = read(path("h.db"));
    const cli_outcome o = run_cli(as_unprivileged(shell_quote(CONTEND_CLI_PATH) + " " + quick() + "--json " +
                                                  q("run.json") + " --db " + q("h.db")),
                                  false);
    expect_refused(o, "--db");
    EXPECT_FALSE(fs::exists(path("run.json"))) << "refused only after the run: " << o.output;
    EXPECT_EQ(read(path("h.db")), before);
}

// --- 13. Stop signals while the outputs are written (issue item 13) -----------------------------

// Whether `pid` is blocked opening a file (openat), as on a FIFO nobody reads.
bool blocked_in_open(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
    long number = -1;
    return (in >> number) && number == SYS_openat;
}

TEST_F(FileSafety, ASignalWhileBenchWaitsForTheHistorysLockStopsItStoringNothing) {
    make_history("h.db");
    const pid_t pid = spawn_cli({"bench", "--suite", "selftest", "--contenders", "ok", "--workers", "1", "--min-time",
                                 "100", "--reps", "2", "--json", path("run.json"), "--db", path("h.db")},
                                path("log.txt"));
    ASSERT_GT(pid, 0);
    // Locked once a cell runs (the check of the history is done), before the run is written.
    const auto cell_running = [&] {
        for (const pid_t k : children_of(pid)) {
            std::ifstream in("/proc/" + std::to_string(k) + "/cmdline");
            const std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
            if (cmdline.find("__cell") != std::string::npos) return true;
        }
        return false;
    };
    ASSERT_TRUE(eventually([&] { return cell_running() || !running(pid); }));
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(path("h.db").c_str(), &holder), SQLITE_OK);
    sqlite3_busy_timeout(holder, 60000);
    ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    const bool json_written = eventually([&] { return fs::exists(path("run.json")) || !running(pid); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the wait for the lock
    const bool waiting = running(pid);
    kill(pid, SIGTERM);
    const int status = exit_status_of(pid);
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    ASSERT_TRUE(json_written && waiting) << "not caught writing: " << read(path("log.txt"));
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read(path("log.txt"));
    EXPECT_NE(read(path("log.txt")).find("nothing was stored"), std::string::npos) << read(path("log.txt"));
    EXPECT_EQ(contend::lab::history_store(path("h.db")).run_count(), 1u) << "stored after the signal";
}

TEST_F(FileSafety, ASignalWhileBenchWaitsOnAFifoNobodyReadsExitsWith128PlusTheSignal) {
    ASSERT_EQ(::mkfifo(path("out.fifo").c_str(), 0600), 0);
    const pid_t pid = spawn_cli({"bench", "--suite", "selftest", "--contenders", "ok", "--workers", "1", "--min-time",
                                 "1", "--reps", "2", "--no-history", "--json", path("out.fifo")},
                                path("log.txt"));
    ASSERT_GT(pid, 0);
    const bool blocked = eventually([&] { return blocked_in_open(pid) || !running(pid); }) && running(pid);
    kill(pid, SIGTERM);
    const int status = exit_status_of(pid);
    ASSERT_TRUE(blocked) << read(path("log.txt"));
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read(path("log.txt"));
}

// Issue item 14: `history list` on a big history went on to its end after the first SIGINT.
TEST_F(FileSafety, TheFirstSignalStopsHistoryList) {
    make_history("h.db");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path("h.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
                           "INSERT INTO runs (date, label) SELECT '2026-01-01', 'r' || i FROM n; "
                           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60) "
                           "INSERT INTO cells (run_id, name, workers) SELECT r.id, 'a/b/' || n.i, n.i FROM runs r, n "
                           "WHERE r.id > 1; COMMIT;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    const pid_t pid = spawn_cli({"history", "list", "--db", path("h.db")}, path("log.txt"));
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(catches_sigterm(pid));
    ASSERT_EQ(kill(pid, SIGSTOP), 0);
    ASSERT_EQ(kill(pid, SIGINT), 0);
    ASSERT_EQ(kill(pid, SIGCONT), 0);
    const int status = exit_status_of(pid);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << read(path("log.txt")).substr(0, 500);
}

}  // namespace
