// `contend report` end to end: the page of a results file and of the history, what it
// refuses (writing nothing), its help, and a results file with hostile names.
#include "report_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_cli.hpp"
#include "store/history.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

using namespace contend_test::report;

// --- The CLI -------------------------------------------------------------------------------

namespace {

using contend_test::cli_outcome;
using contend_test::run_cli;

class ReportCli : public contend_test::temp_dir_test {
protected:
    std::string page() const { return (dir_ / "out" / "page.html").string(); }
    // Fails unless the command fails, says `says`, and leaves no page behind.
    void expect_refused(const std::string& args, const std::string& says) const {
        const cli_outcome o = run_cli("report " + args + " -o " + page());
        EXPECT_NE(o.exit_code, 0) << o.output;
        EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
        EXPECT_FALSE(fs::exists(page())) << args;
        EXPECT_FALSE(fs::exists(dir_ / "out")) << "nothing half-written";
    }
};

}  // namespace

TEST_F(ReportCli, WritesThePageOfAResultsFileAndSaysWhere) {
    const cli_outcome o = run_cli("report --json " + fixture_path() + " -o " + page());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("wrote " + page()), std::string::npos) << o.output;
    const std::string html = read_file(page());
    EXPECT_EQ(count(html, "<section class=\"suite\""), 2u);
    EXPECT_NE(html.find("Chart.js v4"), std::string::npos) << "the real library is inlined";
    EXPECT_EQ(html.find("sourceMappingURL"), std::string::npos);
    for (const auto& entry : fs::directory_iterator(dir_ / "out"))
        EXPECT_EQ(entry.path().filename(), "page.html") << "no temporary file left";
}

TEST_F(ReportCli, WritesThePageOfTheHistory) {
    const std::string db = (dir_ / "history.db").string();
    {
        lab::history_store store(db);
        lab::run_result old = fixture();
        old.context.label = "older";
        store.append(old);
        store.append(fixture());
    }
    cli_outcome o = run_cli("report --db " + db + " -o " + page());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    std::string html = read_file(page());
    EXPECT_NE(html.find("history run 2"), std::string::npos);
    EXPECT_EQ(html.find("history run 1"), std::string::npos) << "run 2 is newer for both suites";

    o = run_cli("report --db " + db + " --run 1 -o " + page());
    ASSERT_EQ(o.exit_code, 0) << o.output;
    html = read_file(page());
    EXPECT_NE(html.find("history run 1"), std::string::npos);
    EXPECT_NE(html.find("older"), std::string::npos);
}

TEST_F(ReportCli, RefusesWhatItCannotReportAndWritesNothing) {
    const std::string db = (dir_ / "history.db").string();
    expect_refused("--db " + db, "no history at " + db);
    EXPECT_FALSE(fs::exists(db)) << "a report never creates a history";

    { lab::history_store empty(db); }
    expect_refused("--db " + db, "holds no results yet");
    {
        lab::history_store store(db);
        store.append(fixture());
    }
    expect_refused("--db " + db + " --run 7", "has no run 7");

    const fs::path bad = dir_ / "bad.json";
    std::ofstream(bad) << "{\"context\": {}, \"benchmarks\": []}";
    expect_refused("--json " + bad.string(), "lacks 'date'");
    std::ofstream(bad) << "not json";
    expect_refused("--json " + bad.string(), "not JSON");
    expect_refused("--json " + (dir_ / "missing.json").string(), "missing.json: cannot open");
    expect_refused("--json " + fixture_path() + " --run 1", "excludes");

    lab::run_result no_cells = fixture();
    no_cells.cells.clear();
    std::ofstream(dir_ / "empty.json") << lab::to_json(no_cells);
    expect_refused("--json " + (dir_ / "empty.json").string(), "nothing to report");
}

TEST_F(ReportCli, HelpListsTheOptions) {
    const cli_outcome o = run_cli("report --help");
    EXPECT_EQ(o.exit_code, 0);
    for (const char* option : {"--db", "--json", "--run", "--output"})
        EXPECT_NE(o.output.find(option), std::string::npos) << option;
}

TEST_F(ReportCli, AResultsFileWithHostileNamesIsReadAndEscaped) {
    // A suite may not hold the '/' that separates a row name's parts (a results file's
    // reader refuses it): the suite here is as hostile as it may be, the rest as in
    // hostile_run (the page itself is checked with a '/' in the suite by escaping_test.cpp).
    lab::run_result run = hostile_run();
    for (auto& cell : run.cells) cell.suite = "<img src=x onerror=alert(1)>\"'&suite";
    const fs::path results = dir_ / "hostile.json";
    std::ofstream(results) << lab::to_json(run);
    const std::string out = (dir_ / "page.html").string();
    const cli_outcome o = run_cli("report --json " + results.string() + " -o " + out);
    ASSERT_EQ(o.exit_code, 0) << o.output << ": the reader accepts such names";
    const std::string page = read_file(out);
    EXPECT_EQ(page.find("<img"), std::string::npos);
    EXPECT_EQ(page.find("<i>"), std::string::npos);
    EXPECT_EQ(page.find("onerror=alert(1)>"), std::string::npos) << "only escaped forms";
    EXPECT_NE(page.find("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;a"), std::string::npos)
        << "the contender shown as text in the table";
    EXPECT_NE(page.find("data-suite=\"&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;suite\""), std::string::npos);
}
