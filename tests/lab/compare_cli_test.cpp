// `contend compare` end to end: exit codes, outputs that must not overwrite inputs, paths
// with quotes, bad input named. No timing is asserted.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_cli.hpp"
#include "temp_dir.hpp"

namespace {

using contend_test::shell_quote;

// A Google Benchmark file with `repetitions` iteration rows per benchmark, each benchmark
// at its given ns per iteration (+/- 1 %, alternating, so the samples have a spread).
std::string gb_file(const std::vector<std::pair<std::string, double>>& benchmarks, int repetitions = 5) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [name, ns] : benchmarks) {
        for (int i = 0; i < repetitions; ++i) {
            const double v = ns * (1 + 0.01 * ((i % 3) - 1));
            rows.push_back({{"name", name},
                            {"run_name", name},
                            {"run_type", "iteration"},
                            {"repetitions", repetitions},
                            {"repetition_index", i},
                            {"iterations", 1000},
                            {"real_time", v},
                            {"cpu_time", v},
                            {"time_unit", "ns"}});
        }
    }
    return nlohmann::json{{"context", {{"date", "2026-11-30T12:00:00+00:00"}, {"num_cpus", 2}}}, {"benchmarks", rows}}
        .dump(2);
}

class CompareCli : public contend_test::temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        write(dir_ / "base.json", gb_file({{"BM_lock/2", 10}, {"BM_unlock/2", 20}, {"BM_idle", 100}}));
        write(dir_ / "same.json", gb_file({{"BM_lock/2", 10.05}, {"BM_unlock/2", 19.95}, {"BM_idle", 100.2}}));
        write(dir_ / "slower.json", gb_file({{"BM_lock/2", 13}, {"BM_unlock/2", 20.05}, {"BM_idle", 99.9}}));
    }
    contend_test::cli_outcome compare(const std::string& base, const std::string& test, const std::string& more = "") {
        return contend_test::run_cli("compare " + shell_quote(path(base)) + " " + shell_quote(path(test)) + " " + more);
    }
};

}  // namespace

TEST_F(CompareCli, NoRegressionExitsZero) {
    const auto o = compare("base.json", "same.json");
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("0 regressions"), std::string::npos) << o.output;
}

TEST_F(CompareCli, ARegressionExitsOneAndIsTheOnlyOneReported) {
    const auto o = compare("base.json", "slower.json", "--json " + shell_quote(path("cmp.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output;
    const auto j = nlohmann::json::parse(read(dir_ / "cmp.json"));
    EXPECT_EQ(j["summary"]["regressions"], 1);
    EXPECT_EQ(j["summary"]["improvements"], 0);
    for (const auto& r : j["rows"])
        EXPECT_EQ(r["verdict"], r["name"] == "BM_lock/2" ? "regression" : "same") << r.dump();
}

TEST_F(CompareCli, NoFailOnRegressionExitsZeroButStillReportsIt) {
    const auto o = compare("base.json", "slower.json", "--no-fail-on-regression");
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("1 regression"), std::string::npos) << o.output;
}

TEST_F(CompareCli, AMalformedInputExitsTwoNamingTheFile) {
    write(dir_ / "broken.json", "{\"benchmarks\": [ {\"name\": \"BM_x\", \"real_time\": ");
    const auto o = compare("base.json", "broken.json");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("broken.json"), std::string::npos) << o.output;
}

TEST_F(CompareCli, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
    const std::string before = read(dir_ / "base.json");
    const auto o = compare("base.json", "same.json", "--markdown " + shell_quote(path("base.json")));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_EQ(read(dir_ / "base.json"), before);
}

TEST_F(CompareCli, PathsWithQuotesAndSpacesWorkAndTheReproQuotesThem) {
    write(dir_ / "it's a base.json", read(dir_ / "base.json"));
    const auto o = compare("it's a base.json", "same.json", "--markdown " + shell_quote(path("report.md")));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    const std::string md = read(dir_ / "report.md");
    EXPECT_NE(md.find("'\\''s a base.json'"), std::string::npos) << md;  // the repro line, shell-quoted
}

TEST_F(CompareCli, BadOptionsExitTwo) {
    EXPECT_EQ(compare("base.json", "same.json", "--threshold -5").exit_code, 2);
    EXPECT_EQ(compare("base.json", "same.json", "--alpha 2").exit_code, 2);
    EXPECT_EQ(contend_test::run_cli("compare " + shell_quote(path("base.json"))).exit_code, 2);  // one input
}

// 200 benchmarks, 3 repetitions a side, each 2x slower: no row is significant alone (the
// samples are spread so that the U test cannot tell), the suite moved as a whole.
TEST_F(CompareCli, AWholeSuiteTwiceAsSlowFailsTheGateAndSaysWhy) {
    std::vector<std::pair<std::string, double>> base, slow;
    for (int i = 0; i < 200; ++i) {
        base.emplace_back("BM_n/" + std::to_string(i), 100 + i);
        slow.emplace_back("BM_n/" + std::to_string(i), 2 * (100 + i));
    }
    write(dir_ / "suite_base.json", gb_file(base, 3));
    write(dir_ / "suite_slow.json", gb_file(slow, 3));
    const auto o = compare("suite_base.json", "suite_slow.json", "--json " + shell_quote(path("s.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output.substr(o.output.size() > 3000 ? o.output.size() - 3000 : 0);
    EXPECT_NE(o.output.find("Suite: regression"), std::string::npos);
    const auto j = nlohmann::json::parse(read(dir_ / "s.json"));
    EXPECT_EQ(j["summary"]["suite"]["verdict"], "regression");
    EXPECT_EQ(compare("suite_base.json", "suite_slow.json", "--no-fail-on-regression").exit_code, 0);
    EXPECT_EQ(compare("suite_base.json", "suite_base.json").exit_code, 0);
}

// One statistic everywhere: a lab row whose real_time is not the median of its samples would
// be "same" to compare (samples) and "50x" to the history (real_time). Both refuse it.
TEST_F(CompareCli, ALabFileWhoseRealTimeDisagreesWithItsSamplesIsRefusedByCompareAndImport) {
    std::string text = read(CONTEND_LAB_GOLDEN_DIR "/compare/lab_counter.json");
    const std::string from = R"("real_time": 19.405778884887695)";
    ASSERT_NE(text.find(from), std::string::npos);
    write(dir_ / "good.json", text);
    text.replace(text.find(from), from.size(), R"("real_time": 970.28)");
    write(dir_ / "edited.json", text);
    const auto c = compare("good.json", "edited.json");
    EXPECT_EQ(c.exit_code, 2) << c.output;
    EXPECT_NE(c.output.find("edited.json: benchmark 'counter/std_mutex/workers:1': result row: real_time 970.28 is "
                            "not the median of its samples"),
              std::string::npos)
        << c.output;
    const auto i = contend_test::run_cli("history import " + shell_quote(path("edited.json")) + " --label x --db " +
                                         shell_quote(path("h.db")));
    EXPECT_EQ(i.exit_code, 2) << i.output;
    EXPECT_NE(i.output.find("not the median of its samples"), std::string::npos) << i.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "h.db"));
}

// A name with a NUL is escaped, not the end of the message; a megabyte name is cut short.
TEST_F(CompareCli, ABenchmarkNameWithANulOrAMegabyteIsEscapedAndCutInTheMessage) {
    const auto failing = [](const std::string& name) {
        nlohmann::json row = {{"name", name},     {"run_name", name},       {"run_type", "iteration"},
                              {"real_time", 1.0}, {"time_unit", "ns"},      {"error_occurred", true},
                              {"iterations", 1},  {"error_message", "boom"}};
        return nlohmann::json{{"benchmarks", nlohmann::json::array({row})}}.dump();
    };
    write(dir_ / "nul.json", failing(std::string("BM_a\0tail", 9)));
    const auto o = compare("base.json", "nul.json");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("benchmark 'BM_a\\x00tail': the benchmark failed: boom"), std::string::npos) << o.output;
    write(dir_ / "huge.json", failing("BM_" + std::string(1 << 20, 'n')));
    const auto h = compare("base.json", "huge.json");
    EXPECT_EQ(h.exit_code, 2);
    EXPECT_LT(h.output.size(), 4000u);
    EXPECT_NE(h.output.find("... (1048579 bytes)': the benchmark failed: boom"), std::string::npos)
        << h.output.substr(0, 400);
}

TEST_F(CompareCli, ALabelWithATabAC1ControlOrABidiControlIsRefused) {
    for (const std::string label : {"a\tb", "a\xc2\x85z", "rev\xe2\x80\xae", "iso\xe2\x81\xa6x"}) {
        const auto o = contend_test::run_cli("history import " + shell_quote(path("base.json")) + " --label " +
                                             shell_quote(label) + " --db " + shell_quote(path("h.db")));
        EXPECT_EQ(o.exit_code, 2) << o.output;
        EXPECT_NE(o.output.find("--label"), std::string::npos) << o.output;
    }
    EXPECT_FALSE(std::filesystem::exists(dir_ / "h.db"));
}

// The report's repro line must run as printed, for a file named like an option too.
TEST_F(CompareCli, TheReproLineOfAFileNamedLikeAnOptionRunsAsPrinted) {
    write(dir_ / "-b.json", read(dir_ / "base.json"));
    const std::string cli = shell_quote(CONTEND_CLI_PATH);
    const auto o = contend_test::run_cli(
        "cd " + shell_quote(dir_.string()) + " && " + cli + " compare --markdown r.md -- -b.json same.json >/dev/null",
        false);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const std::string md = read(dir_ / "r.md");
    const auto at = md.find("\ncontend compare ");
    ASSERT_NE(at, std::string::npos) << md;
    const std::string line = md.substr(at + 1, md.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(" -- -b.json same.json"), std::string::npos) << line;
    const auto again = contend_test::run_cli(
        "cd " + shell_quote(dir_.string()) + " && " + cli + line.substr(std::string("contend").size()) + " >/dev/null",
        false);
    EXPECT_EQ(again.exit_code, 0) << line << "\n" << again.output;
}

// A std::bad_alloc used to abort (exit 134): nlohmann::json's destructor allocates while it
// frees a large document and cannot pass an exception. Under a memory limit a large input is
// refused with exit 5 and a message; the same limit runs a small compare.
TEST_F(CompareCli, AnInputTooLargeForTheMemoryLimitExitsFiveWithAMessage) {
    std::string big = R"({"benchmarks": [)";
    for (int i = 0; i < 120000; ++i) {
        if (i) big += ",\n";
        big += R"({"name": "BM_)" + std::to_string(i / 3) + R"(", "run_type": "iteration", "repetition_index": )" +
               std::to_string(i % 3) + R"(, "real_time": 10.5, "time_unit": "ns"})";
    }
    write(dir_ / "big.json", big + "]}");
    const std::string limited = "ulimit -v 100000; " + shell_quote(CONTEND_CLI_PATH) + " compare ";
    const auto small = contend_test::run_cli(
        limited + shell_quote(path("base.json")) + " " + shell_quote(path("same.json")) + " >/dev/null", false);
    ASSERT_EQ(small.exit_code, 0) << small.output;
    // In a group: stdout (the report) to /dev/null, stderr to run_cli's pipe.
    const auto o =
        contend_test::run_cli("{ " + limited + shell_quote(path("big.json")) + " " + shell_quote(path("big.json")) +
                                  " --json " + shell_quote(path("out.json")) + " >/dev/null; }",
                              false);
    EXPECT_EQ(o.exit_code, 5) << o.output;
    EXPECT_NE(o.output.find("contend compare: out of memory"), std::string::npos) << o.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "out.json"));
}

namespace {

// The lab fixture with every valid cell turned into one that timed out: a test run that
// deadlocked. The cell keeps its figures (a timed-out cell's are partial), as the lab writes it.
std::string lab_file_all_timed_out(const std::string& lab_file) {
    auto j = nlohmann::json::parse(lab_file);
    for (auto& row : j["benchmarks"]) {
        if (row["status"] != "ok") continue;
        row["status"] = "timed_out";
        row["valid"] = false;
        row["detail"] = "no repetition finished within 3 s";
    }
    return j.dump(2);
}

}  // namespace

TEST_F(CompareCli, ATestRunThatTimedOutEverywhereFailsTheGateAndListsEachCellWithItsReason) {
    const std::string fixture = read(CONTEND_LAB_GOLDEN_DIR "/compare/lab_counter.json");
    write(dir_ / "lab_base.json", fixture);
    write(dir_ / "lab_dead.json", lab_file_all_timed_out(fixture));
    const auto o = compare("lab_base.json", "lab_dead.json", "--json " + shell_quote(path("dead.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_NE(o.output.find("nothing was compared: the test measured none of its 3 cells"), std::string::npos)
        << o.output;
    EXPECT_NE(
        o.output.find("- in the test: counter/std\\_mutex/workers:1: timed\\_out: no repetition finished within 3 s "
                      "(**measured in the baseline: fails the gate**)"),
        std::string::npos)
        << o.output;
    EXPECT_NE(o.output.find("- in the test: counter/contend\\_mutex/workers:1: timed\\_out"), std::string::npos)
        << o.output;
    // The ticket lock timed out in both: listed, no failure of its own.
    EXPECT_NE(o.output.find("- in the baseline: counter/ticket\\_lock/workers:1: timed\\_out"), std::string::npos)
        << o.output;
    const auto j = nlohmann::json::parse(read(dir_ / "dead.json"));
    EXPECT_EQ(j["summary"]["gate"]["passes"], false);
    EXPECT_EQ(j["not_measured_in_test"].size(), 3u);
    EXPECT_EQ(compare("lab_base.json", "lab_dead.json", "--no-fail-on-regression").exit_code, 0);
    // The fixture against itself: the ticket lock timed out on both sides, the rest compared.
    EXPECT_EQ(compare("lab_base.json", "lab_base.json").exit_code, 0);
}

TEST_F(CompareCli, ATestRunThatTimedOutEverywhereFailsTheGateFromTheHistoryToo) {
    const std::string fixture = read(CONTEND_LAB_GOLDEN_DIR "/compare/lab_counter.json");
    write(dir_ / "lab_base.json", fixture);
    write(dir_ / "lab_dead.json", lab_file_all_timed_out(fixture));
    const std::string db = shell_quote(path("h.db"));
    for (const auto& [file, label] : {std::pair{"lab_base.json", "good"}, std::pair{"lab_dead.json", "dead"}}) {
        const auto imported =
            contend_test::run_cli("history import " + shell_quote(path(file)) + " --label " + label + " --db " + db);
        ASSERT_EQ(imported.exit_code, 0) << imported.output;
    }
    const auto o = contend_test::run_cli("compare --db " + db + " good dead");
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_NE(o.output.find("nothing was compared"), std::string::npos) << o.output;
    EXPECT_NE(
        o.output.find("- in the test: counter/std\\_mutex/workers:1: timed\\_out: no repetition finished within 3 s"),
        std::string::npos)
        << o.output;
    EXPECT_EQ(contend_test::run_cli("compare --db " + db + " good good").exit_code, 0);
}

TEST_F(CompareCli, AnEmptyTestOrOneSharingNoBenchmarkFailsTheGate) {
    write(dir_ / "empty.json", R"({"context": {}, "benchmarks": []})");
    write(dir_ / "other.json", gb_file({{"BM_other", 10}}));
    for (const char* test : {"empty.json", "other.json"}) {
        const auto o = compare("base.json", test);
        EXPECT_EQ(o.exit_code, 1) << test << "\n" << o.output;
        EXPECT_NE(o.output.find("nothing was compared"), std::string::npos) << o.output;
    }
}

// 40 benchmarks at 3 repetitions, 8 of them from 1,000 to 2,000 ns, the rest +-1 %: no row can
// be significant (3 against 3: p >= 0.1), the sign test sees 24 against 16. Undecided, and the
// gate fails, unless --no-fail-on-undecided.
TEST_F(CompareCli, APartialDoublingAtThreeRepetitionsFailsTheGateUnlessNoFailOnUndecided) {
    std::vector<std::pair<std::string, double>> base, test;
    for (int i = 0; i < 40; ++i) {
        const std::string name = "BM_part/" + std::to_string(i);
        base.emplace_back(name, 1000);
        test.emplace_back(name, i < 8 ? 2000 : (i % 2 ? 1010 : 990));
    }
    write(dir_ / "part_base.json", gb_file(base, 3));
    write(dir_ / "part_test.json", gb_file(test, 3));
    const auto o = compare("part_base.json", "part_test.json", "--json " + shell_quote(path("p.json")));
    EXPECT_EQ(o.exit_code, 1) << o.output.substr(0, 4000);
    EXPECT_NE(o.output.find("8 benchmarks undecided and slower"), std::string::npos) << o.output.substr(0, 4000);
    EXPECT_NE(o.output.find("## Undecided"), std::string::npos);
    const auto j = nlohmann::json::parse(read(dir_ / "p.json"));
    EXPECT_EQ(j["summary"]["undecided"], 8);
    EXPECT_EQ(j["summary"]["regressions"], 0);
    const auto warned = compare("part_base.json", "part_test.json", "--no-fail-on-undecided");
    EXPECT_EQ(warned.exit_code, 0) << warned.output.substr(0, 4000);
    EXPECT_NE(warned.output.find("8 undecided"), std::string::npos);
    EXPECT_NE(warned.output.find("Gate: passes, with a warning: 8 benchmarks are undecided and slower"),
              std::string::npos);
    EXPECT_NE(warned.output.find("compare --threshold 5 --noise 0.5 --alpha 0.05 --no-fail-on-undecided"),
              std::string::npos)
        << "the repro keeps the flag";
}

TEST_F(CompareCli, IdenticalInputsAtAZeroThresholdAndNoiseFloorAreAllTheSame) {
    const auto o = compare("base.json", "base.json", "--threshold 0 --noise 0 --json " + shell_quote(path("z.json")));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("3 compared, 0 regressions, 0 improvements, 3 same, 0 noisy, 0 undecided"),
              std::string::npos)
        << o.output;
    const auto j = nlohmann::json::parse(read(dir_ / "z.json"));
    for (const auto& r : j["rows"]) {
        EXPECT_EQ(r["verdict"], "same") << r.dump();
        EXPECT_EQ(r["reason"].get<std::string>().find("past the threshold"), std::string::npos) << r.dump();
    }
    EXPECT_EQ(j["summary"]["suite"]["verdict"], "same");
}
