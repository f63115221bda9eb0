// `contend compare` end to end: exit codes, outputs that must not overwrite inputs, paths
// with quotes, bad input named. No timing is asserted.
#include <gtest/gtest.h>

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
