// The CLI on a PostgreSQL history: two large imports at once, and every command that takes --db.
#include "history_postgres_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <future>
#include <set>
#include <string>

#include "run_cli.hpp"
#include "store/history.hpp"

namespace contend_test {
namespace {

// Two `contend history import` processes of 5,000 benchmarks each, started together: both
// are stored (the report was 60,000 benchmarks, one import failing with a lock timeout).
TEST_F(PostgresHistory, TwoLargeImportsAtOnceAreBothStored) {
    constexpr int benchmarks = 5000;
    std::string rows;
    for (int i = 0; i < benchmarks; ++i)
        rows += std::string(rows.empty() ? "" : ",\n") + R"({"name": "BM_lock/)" + std::to_string(i) +
                R"(", "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "iterations": 1000, )" +
                R"("real_time": )" + std::to_string(10 + i % 7) + R"(, "time_unit": "ns"})";
    write(path("big.json"),
          R"({"context": {"executable": "./bench", "date": "2026-12-01"}, "benchmarks": [)" + rows + "]}");
    const std::string db = shell_quote(uri_);
    auto import = [&](const std::string& label) {
        return std::async(std::launch::async, [&, label] {
            return run_cli("history import " + shell_quote(path("big.json")) + " --label " + label + " --db " + db);
        });
    };
    auto first = import("one");
    auto second = import("two");
    for (auto* result : {&first, &second}) {
        ASSERT_EQ(result->wait_for(std::chrono::seconds(280)), std::future_status::ready) << "an import hangs";
        const cli_outcome o = result->get();
        EXPECT_EQ(o.exit_code, 0) << o.output;
    }
    const history_store store(uri_, history_access::read_only);
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 2u);
    std::set<std::string> labels;
    for (const run_result& run : runs) {
        EXPECT_EQ(run.cells.size(), std::size_t{benchmarks}) << run.context.label;
        labels.insert(run.context.label);
    }
    EXPECT_EQ(labels, (std::set<std::string>{"one", "two"}));
}

// Every command that takes --db, end to end on one PostgreSQL history: two imported runs,
// listed, compared by label (the slower one a regression), found as a change by nothing
// (two runs are too few), and drawn by contend report. Nothing is created under the URI's name.
TEST_F(PostgresHistory, EveryCommandWithDbWorksOnAPostgresHistory) {
    const auto gb = [](double ns) {
        std::string rows;
        for (int i = 0; i < 10; ++i)
            rows += std::string(rows.empty() ? "" : ",") + R"({"name": "BM_lock", "run_name": "BM_lock", )" +
                    R"("run_type": "iteration", "repetitions": 10, "repetition_index": )" + std::to_string(i) +
                    R"(, "real_time": )" + std::to_string(ns * (1 + 0.001 * (i % 3))) + R"(, "time_unit": "ns"})";
        return R"({"context": {"executable": "./bench", "date": "2026-11-30"}, "benchmarks": [)" + rows + "]}";
    };
    write(path("base.json"), gb(10));
    write(path("slow.json"), gb(13));
    const std::string db = shell_quote(uri_);
    auto o = run_cli("history import " + shell_quote(path("base.json")) + " --label base --db " + db);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("history import " + shell_quote(path("slow.json")) + " --label slow --db " + db);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("history list --db " + db);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("2 runs"), std::string::npos) << o.output;
    o = run_cli("compare --db " + db + " base slow");
    EXPECT_EQ(o.exit_code, 1) << o.output;  // the one benchmark, 30 % slower
    EXPECT_NE(o.output.find("1 regressions"), std::string::npos) << o.output;
    o = run_cli("compare --db " + db + " base nosuchlabel");
    EXPECT_EQ(o.exit_code, 2) << o.output;
    o = run_cli("history --changes --db " + db);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    o = run_cli("report --db " + db + " -o " + shell_quote(path("page.html")));
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(read(path("page.html")).find("bench"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists("postgresql:")) << "a folder named after the URI";
}

}  // namespace
}  // namespace contend_test
