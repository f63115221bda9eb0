// `contend history import`: lab and Google Benchmark files into the history, read back the
// way compare --db and history --changes read them; every refusal of the compare reader is a
// refusal of import too, and a refused file leaves the history as it was.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analyze/history_import.hpp"
#include "analyze/history_series.hpp"
#include "analyze/inputs.hpp"
#include "run_cli.hpp"
#include "store/history.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

namespace {

using namespace contend::lab;
using contend_test::shell_quote;

const std::string compare_golden = std::string(CONTEND_LAB_GOLDEN_DIR) + "/compare/";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A Google Benchmark file: each benchmark with its real times, one iteration row each.
std::string gb_file(const std::vector<std::pair<std::string, std::vector<double>>>& benchmarks,
                    const std::string& executable = "/build/bench/lock_bench") {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [name, times] : benchmarks)
        for (std::size_t i = 0; i < times.size(); ++i)
            rows.push_back({{"name", name},
                            {"run_name", name},
                            {"run_type", "iteration"},
                            {"repetitions", times.size()},
                            {"repetition_index", i},
                            {"iterations", 1000},
                            {"real_time", times[i]},
                            {"cpu_time", times[i]},
                            {"time_unit", "ns"}});
    return nlohmann::json{{"context", {{"date", "2026-11-30T12:00:00+00:00"}, {"executable", executable}}},
                          {"benchmarks", rows}}
        .dump();
}

class HistoryImport : public contend_test::temp_dir_test {
protected:
    contend_test::cli_outcome import(const std::string& file, const std::string& label, const std::string& db) {
        return contend_test::run_cli("history import " + shell_quote(file) + " --label " + shell_quote(label) +
                                     " --db " + shell_quote(db));
    }
};

// Every command that takes --db, run in `dir` (so that anything created under the name given
// would be seen there), each with `db` as its --db.
std::vector<std::pair<std::string, contend_test::cli_outcome>> every_db_command(const std::string& dir,
                                                                                const std::string& db) {
    const std::string cd = "cd " + shell_quote(dir) + " && " + shell_quote(CONTEND_CLI_PATH) + " ";
    const std::string d = " --db " + shell_quote(db);
    std::vector<std::pair<std::string, contend_test::cli_outcome>> out;
    for (const std::string& command :
         {"history import good.json --label x" + d, "history list" + d, "history --changes" + d,
          "history --html page.html" + d, "compare a b" + d, "report -o page.html" + d,
          "bench --suite selftest --contenders ok --workers 1 --min-time 1 --reps 2 --json run.json" + d,
          "bench --suite selftest --contenders ok --workers 1 --min-time 1 --reps 2 --json run.json --no-history" + d})
        out.emplace_back(command, contend_test::run_cli(cd + command, false));
    return out;
}

std::vector<std::string> entries_of(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST_F(HistoryImport, ADbThatKeepsNothingIsRefusedByEveryCommandWithExitTwo) {
    write(path("good.json"), gb_file({{"BM_a", {5, 6}}}));
    for (const std::string db :
         {"", ":memory:", "file::memory:", "file::memory:?cache=shared", "file:h.db?mode=memory", "file:h.db"}) {
        SCOPED_TRACE("--db '" + db + "'");
        for (const auto& [command, o] : every_db_command(dir_.string(), db)) {
            EXPECT_EQ(o.exit_code, 2) << command << ": " << o.output;
            EXPECT_NE(o.output.find("--db"), std::string::npos) << command << ": " << o.output;
        }
        EXPECT_EQ(entries_of(dir_.string()), std::vector<std::string>{"good.json"}) << "nothing is written";
    }
    // A file of such a name is still reachable, as ./NAME or by its absolute path.
    const auto o = contend_test::run_cli("cd " + shell_quote(dir_.string()) + " && " + shell_quote(CONTEND_CLI_PATH) +
                                             " history import good.json --label x --db ./file:h.db",
                                         false);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_EQ(import(path("good.json"), "y", path("file:h.db")).exit_code, 0);
    EXPECT_EQ(history_store(path("file:h.db"), history_access::read_only).run_count(), 2u);
}

TEST_F(HistoryImport, APostgresSchemeInAnyCaseIsAUriAndNothingIsCreatedUnderItsName) {
    write(path("good.json"), gb_file({{"BM_a", {5, 6}}}));
    // Port 1 on the loopback: nothing listens there, so every command fails to connect.
    const std::string secret = "S3cretPW";
    for (const std::string scheme : {"POSTGRESQL", "Postgres", "PostgreSQL", "POSTGRES"}) {
        const std::string db = scheme + "://bob:" + secret + "@127.0.0.1:1/contend?connect_timeout=2";
        SCOPED_TRACE(db);
        for (const auto& [command, o] : every_db_command(dir_.string(), db)) {
            if (command.find("--no-history") != std::string::npos) continue;  // never connects: runs
            EXPECT_NE(o.exit_code, 0) << command << ": " << o.output;
            EXPECT_NE(o.output.find("cannot connect"), std::string::npos) << command << ": " << o.output;
            EXPECT_EQ(o.output.find(secret), std::string::npos) << command << ": " << o.output;
        }
        std::filesystem::remove(path("run.json"));  // the --no-history run's
        EXPECT_EQ(entries_of(dir_.string()), std::vector<std::string>{"good.json"}) << "a file made of the URI";
    }
}

TEST_F(HistoryImport, ANearMissOfAPostgresUriIsRefusedByEveryCommandAndCreatesNothing) {
    write(path("good.json"), gb_file({{"BM_a", {5, 6}}}));
    const std::string secret = "S3cretPW";
    for (const std::string& db :
         {"postgresql:/bob:" + secret + "@127.0.0.1/contend", "postgres:bob:" + secret + "@127.0.0.1/contend",
          "POSTGRESQL:/bob:" + secret + "@h/x", "postgressql://bob:" + secret + "@h/x",
          "postgresq://bob:" + secret + "@h/x", "pgsql://bob:" + secret + "@h/x", "mysql://bob:" + secret + "@h/x"}) {
        SCOPED_TRACE(db);
        for (const auto& [command, o] : every_db_command(dir_.string(), db)) {
            EXPECT_EQ(o.exit_code, 2) << command << ": " << o.output;
            EXPECT_EQ(o.output.find(secret), std::string::npos) << command << ": " << o.output;
            EXPECT_NE(o.output.find("./"), std::string::npos) << "says how to name such a file: " << o.output;
        }
        EXPECT_EQ(entries_of(dir_.string()), std::vector<std::string>{"good.json"}) << "a file made of the URI";
    }
    const auto o = contend_test::run_cli("history import good.json --label x --db " + shell_quote("postgresql:/h/x"));
    EXPECT_NE(o.output.find("not a PostgreSQL URI"), std::string::npos) << o.output;
    // ./NAME is a file of that name, created as any history file is.
    const auto file =
        contend_test::run_cli("cd " + shell_quote(dir_.string()) + " && " + shell_quote(CONTEND_CLI_PATH) +
                                  " history import good.json --label x --db ./postgresql:/h.db",
                              false);
    EXPECT_EQ(file.exit_code, 0) << file.output;
    EXPECT_TRUE(std::filesystem::exists(path("postgresql:/h.db")));
}

}  // namespace

TEST(HistoryImportRun, GoogleBenchmarkRowsBecomeLabCellsNamedByProgramAndThreads) {
    const auto imported = import_run_file(compare_golden + "gb_repetitions.json", "base-1");
    EXPECT_EQ(imported.format, "google-benchmark");
    EXPECT_EQ(imported.run.context.label, "base-1");  // replaces the file's own label
    EXPECT_EQ(imported.run.context.host_name, "bench-1");
    EXPECT_EQ(imported.run.context.cpu_model, "AMD EPYC 7B13");
    EXPECT_EQ(imported.run.context.logical_cpus, 2);
    EXPECT_EQ(imported.run.context.library_build_type, "release");
    ASSERT_GE(imported.run.cells.size(), 2u);
    const cell_result& lock = imported.run.cells[0];
    EXPECT_EQ(lock.name(), "bench_mutex/bm_lock/workers:2");  // executable ./bench_mutex, threads:2
    EXPECT_EQ(lock.workers, 2);
    EXPECT_TRUE(lock.valid());
    EXPECT_EQ(lock.ns_per_op, (std::vector<double>{12.5, 12.0, 13.0}));  // the iteration rows only
    EXPECT_DOUBLE_EQ(lock.median_ns, 12.5);
    EXPECT_DOUBLE_EQ(lock.p25_ns, 12.25);
    EXPECT_DOUBLE_EQ(lock.p75_ns, 12.75);
    const cell_result& queue = imported.run.cells[1];
    EXPECT_EQ(queue.name(), "bench_mutex/bm_queue/4096/workers:1");
    EXPECT_EQ(queue.ns_per_op, (std::vector<double>{2250, 2500, 2000}));  // us -> ns
    EXPECT_EQ(imported.benchmarks, imported.run.cells.size());
}

TEST(HistoryImportRun, AggregatesOnlyKeepsTheMedianWithoutSamples) {
    const auto in = read_comparison_input(compare_golden + "gb_aggregates_only.json");
    const auto imported = import_run_file(compare_golden + "gb_aggregates_only.json", "agg");
    ASSERT_EQ(imported.run.cells.size(), in.benchmarks.size());
    for (std::size_t i = 0; i < in.benchmarks.size(); ++i) {
        EXPECT_TRUE(imported.run.cells[i].ns_per_op.empty());
        EXPECT_EQ(imported.run.cells[i].repetitions, 0);
        EXPECT_DOUBLE_EQ(imported.run.cells[i].median_ns, in.benchmarks[i].median_ns);
    }
}

TEST(HistoryImportRun, ALabFileIsStoredWholeWithOnlyItsLabelReplaced) {
    const std::string text = read_file(compare_golden + "lab_counter.json");
    const run_result original = run_from_json(text);
    const auto imported = import_run(text, "lab_counter.json", "ci-42");
    EXPECT_EQ(imported.format, "contend-lab");
    ASSERT_EQ(imported.run.cells.size(), original.cells.size());  // invalid cells kept
    EXPECT_EQ(imported.benchmarks + imported.skipped, original.cells.size());
    EXPECT_EQ(imported.run.context.label, "ci-42");
    EXPECT_EQ(imported.run.context.cpu_model, original.context.cpu_model);
    for (std::size_t i = 0; i < original.cells.size(); ++i) {
        EXPECT_EQ(imported.run.cells[i].name(), original.cells[i].name());
        EXPECT_EQ(imported.run.cells[i].status, original.cells[i].status);
        EXPECT_EQ(imported.run.cells[i].ns_per_op, original.cells[i].ns_per_op);
    }
}

TEST(HistoryImportRun, AThreadsPartThatIsNotACountStaysInTheName) {
    const auto imported = import_run(gb_file({{"BM_a/threads:x", {5, 6}}, {"BM_b/threads:0", {5, 6}}}), "f", "l");
    EXPECT_EQ(imported.run.cells[0].name(), "lock_bench/bm_a/threads:x/workers:1");
    EXPECT_EQ(imported.run.cells[1].name(), "lock_bench/bm_b/threads:0/workers:1");
}

TEST(HistoryImportRun, WithoutAnExecutableTheSuiteIsGoogleBenchmark) {
    const auto imported = import_run(gb_file({{"BM_a", {5, 6}}}, ""), "f", "l");
    EXPECT_EQ(imported.run.cells[0].name(), "google_benchmark/bm_a/workers:1");
}

// Issue item 20: the program's name became the suite as it was, capitals and spaces kept,
// where docs/lab.md promises a row name in lower case (spaces and '-' as '_', as a
// contender's part of the name already was).
TEST(HistoryImportRun, TheProgramsNameIsLowerCasedAsEveryRowName) {
    const auto imported = import_run(gb_file({{"BM_a", {5, 6}}}, "/opt/My Lock-Bench"), "f", "l");
    EXPECT_EQ(imported.run.cells[0].suite, "my_lock_bench");
    EXPECT_EQ(imported.run.cells[0].name(), "my_lock_bench/bm_a/workers:1");
}

TEST(HistoryImportRun, TwoBenchmarksOfOneRowNameAreADuplicate) {
    // Row names are lower case: BM_A and bm_a would be one series with nothing to tell them apart.
    try {
        import_run(gb_file({{"BM_A", {5, 6}}, {"bm_a", {7, 8}}}), "f.json", "l");
        FAIL() << "imported";
    } catch (const input_error& e) {
        EXPECT_EQ(e.kind(), input_error_kind::duplicate);
        EXPECT_EQ(e.benchmark(), "bm_a");
        EXPECT_NE(std::string(e.what()).find("f.json"), std::string::npos) << e.what();
    }
}

TEST(HistoryImportRun, AnEmptyLabelIsRefused) {
    EXPECT_THROW(import_run(gb_file({{"BM_a", {5, 6}}}), "f", ""), input_error);
}

TEST(HistoryImportRun, EveryFileTheCompareReaderRefusesIsRefusedWithTheSameKind) {
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(compare_golden + "bad")) {
        const std::string file = entry.path().string();
        input_error_kind expected = input_error_kind::other;
        try {
            read_comparison_input(file);
            ADD_FAILURE() << file << " is read by compare";
            continue;
        } catch (const input_error& e) {
            expected = e.kind();
        }
        try {
            import_run_file(file, "l");
            ADD_FAILURE() << file << " was imported";
        } catch (const input_error& e) {
            EXPECT_EQ(e.kind(), expected) << file << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
        }
        ++files;
    }
    EXPECT_GE(files, 15u);
}

TEST_F(HistoryImport, TwoImportedRunsCompareByLabelAsTheirFilesDo) {
    write(path("base.json"), gb_file({{"BM_lock", {10, 10.1, 9.9, 10, 10.2, 9.8, 10, 10.1, 9.9, 10}},
                                      {"BM_idle", {100, 101, 99, 100, 100, 101, 99, 100, 100, 100}}}));
    write(path("slow.json"), gb_file({{"BM_lock", {13, 13.1, 12.9, 13, 13.2, 12.8, 13, 13.1, 12.9, 13}},
                                      {"BM_idle", {100, 101, 99, 100, 100, 101, 99, 100, 100, 100}}}));
    const std::string db = path("h.db");
    auto o = import(path("base.json"), "base", db);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("2 benchmarks"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("history run 1 labelled 'base'"), std::string::npos) << o.output;
    o = import(path("slow.json"), "slow", db);
    ASSERT_EQ(o.exit_code, 0) << o.output;

    o = contend_test::run_cli("history list --db " + shell_quote(db));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("base"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("slow"), std::string::npos) << o.output;

    o = contend_test::run_cli("compare --db " + shell_quote(db) + " base slow --json " + shell_quote(path("c.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output;  // one regression
    const auto c = nlohmann::json::parse(read(path("c.json")));
    std::size_t regressions = 0;
    for (const auto& row : c["rows"]) {
        if (row["verdict"] == "regression") {
            ++regressions;
            EXPECT_EQ(row["name"], "lock_bench/bm_lock/workers:1");
        }
    }
    EXPECT_EQ(regressions, 1u) << c.dump(2);
}

TEST_F(HistoryImport, ARefusedFileLeavesTheHistoryAsItWas) {
    const std::string db = path("h.db");
    // No history yet: a refused file creates none.
    auto o = import(compare_golden + "bad/negative_time.json", "x", db);
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("negative_time.json"), std::string::npos) << o.output;
    EXPECT_FALSE(std::filesystem::exists(db));

    write(path("good.json"), gb_file({{"BM_a", {5, 6}}}));
    ASSERT_EQ(import(path("good.json"), "good", db).exit_code, 0);
    const auto before = read(db);
    for (const char* bad : {"bad/truncated.json", "bad/null_time.json", "bad/mixed_units.json", "bad/error_row.json"}) {
        o = import(compare_golden + bad, "x", db);
        EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.output;
    }
    o = import(path("missing.json"), "x", db);
    EXPECT_EQ(o.exit_code, 2) << o.output;
    o = import(path(""), "x", db);  // a directory
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_EQ(history_store(db, history_access::read_only).run_count(), 1u);
    EXPECT_EQ(read(db), before);
}

TEST_F(HistoryImport, BadArgumentsExitTwoAndWriteNothing) {
    write(path("good.json"), gb_file({{"BM_a", {5, 6}}}));
    // The history would overwrite its own input.
    auto o = import(path("good.json"), "x", path("good.json"));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_EQ(read(path("good.json")), gb_file({{"BM_a", {5, 6}}}));
    // A label that would break a line of `history list` or a table row.
    o = import(path("good.json"), "two\nlines", path("h.db"));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    o = contend_test::run_cli("history import " + shell_quote(path("good.json")) + " --db " +
                              shell_quote(path("h.db")));
    EXPECT_EQ(o.exit_code, 2) << o.output;  // --label is required
    EXPECT_FALSE(std::filesystem::exists(path("h.db")));
    // A database of another program is not made a history.
    write(path("other.db"), "not an sqlite file at all, but someone's data");
    o = import(path("good.json"), "x", path("other.db"));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_EQ(read(path("other.db")), "not an sqlite file at all, but someone's data");
}

TEST_F(HistoryImport, APathWithQuotesAndSpacesIsImportedAndNamed) {
    const std::string file = path("it's a \"file\" $HOME.json");
    write(file, gb_file({{"BM_a", {5, 6}}}));
    const auto o = import(file, "l'abel \"q\"", path("h b.db"));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find(file), std::string::npos) << o.output;
    history_store store(path("h b.db"), history_access::read_only);
    ASSERT_EQ(store.run_count(), 1u);
    EXPECT_EQ(store.runs().front().context.label, "l'abel \"q\"");
}
