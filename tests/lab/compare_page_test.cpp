// The pages of `contend history --html` and `contend compare --html` (pages/html_page.hpp):
// what they hold, that no name from an input becomes markup or leaves its script element,
// that they are the same bytes every time, that the history page marks a step and nothing on
// a flat history; then the CLI's --html options and their refusals. Rendering is checked here
// on the text of the page; tests/lab/compare_page_browser_test.sh runs it in a browser.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "analyze/inputs.hpp"
#include "compare_page_fixture.hpp"
#include "pages/html_page.hpp"
#include "run_cli.hpp"
#include "temp_dir.hpp"

namespace {

namespace lab = contend::lab;
using contend_test::hostile_name;
using contend_test::shell_quote;
using nlohmann::json;

// A stand-in for Chart.js: these tests read the page, they do not run it.
constexpr const char* fake_chart_js = "/*! Chart.js v9.8.7 */ window.Chart = function () {};";

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

json history_page_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"page-data\">";
    const auto begin = page.find(open);
    if (begin == std::string::npos) return nullptr;
    const auto end = page.find("</script>", begin);
    return json::parse(page.substr(begin + open.size(), end - begin - open.size()));
}

std::string body_attribute(const std::string& page, const std::string& name) {
    const auto body = page.find("<body ");
    const auto at = page.find(" " + name + "=\"", body);
    if (body == std::string::npos || at == std::string::npos || at > page.find('>', body)) return "<missing>";
    const auto begin = at + name.size() + 3;
    return page.substr(begin, page.find('"', begin) - begin);
}

// No name from an input has become markup: the page holds no <img>, <b> or <i> element
// (it makes none of its own), no comment opener, and "<script" and "</script" exactly where
// its own four scripts begin and end (the error trap, the data, the library, the drawing).
void expect_no_markup_from_data(const std::string& page) {
    EXPECT_EQ(occurrences(page, "<img"), 0u);
    EXPECT_EQ(occurrences(page, "<b>"), 0u);
    EXPECT_EQ(occurrences(page, "<i>"), 0u);
    EXPECT_EQ(occurrences(page, "<!--"), 0u);
    EXPECT_EQ(occurrences(page, "<script"), 4u);
    EXPECT_EQ(occurrences(page, "</script"), 4u);
    EXPECT_EQ(occurrences(page, "\xff"), 0u);  // a stray byte became U+FFFD
    EXPECT_EQ(occurrences(page, "\xfe"), 0u);
}

class ComparePage : public contend_test::temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        db_ = path("history.db");
        contend_test::write_page_history(db_, true);
        write(dir_ / "base.json", contend_test::page_gb_base());
        write(dir_ / "test.json", contend_test::page_gb_test());
    }

    static std::string history_page(const std::string& db) {
        const lab::history_store store(db, lab::history_access::read_only);
        const auto runs = store.stored_runs();
        const auto series = lab::history_series(runs, "", {});
        return lab::render_history_page(runs, series, {db, "", {}}, fake_chart_js);
    }

    std::string file_compare_page() const {
        const auto base = lab::read_comparison_input(path("base.json"));
        const auto test = lab::read_comparison_input(path("test.json"));
        const auto c = lab::compare_inputs(base, test, {});
        return lab::render_compare_page(c, "contend compare base.json test.json", {&base, &test, nullptr, 0, 0},
                                        fake_chart_js);
    }

    std::string db_;
};

}  // namespace

TEST_F(ComparePage, HistoryPageHasTheRunsTheChangesAndOneChartPerBenchmarkChangedFirst) {
    const std::string page = history_page(db_);
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
    EXPECT_NE(page.find("window.Chart = function"), std::string::npos);  // the library, inlined
    EXPECT_LT(page.find("data-errors"), page.find("<script>"));  // the error trap comes first
    EXPECT_EQ(body_attribute(page, "data-charts-expected"), "3");
    EXPECT_EQ(body_attribute(page, "data-change-points-expected"), "2");
    EXPECT_EQ(body_attribute(page, "data-charts-rendered"), "0");
    EXPECT_EQ(body_attribute(page, "data-change-points-marked"), "0");
    EXPECT_EQ(body_attribute(page, "data-errors"), "0");
    // The runs: every label and id.
    for (int i = 1; i <= contend_test::page_run_count; ++i)
        EXPECT_NE(page.find("<td>r" + std::to_string(i) + "</td>"), std::string::npos) << i;
    // The changes table: old -> new, the percentage, the bracketing labels.
    EXPECT_NE(page.find("<a href=\"#bench-0\">counter/step_lock/workers:2</a></td><td class=\"num\">10.00</td>"
                        "<td class=\"num\">12.0</td><td class=\"num\">+20.0 %</td><td>r6</td><td>r7</td>"),
              std::string::npos)
        << page;
    const json data = history_page_data(page);
    ASSERT_EQ(data["charts"].size(), 3u);
    // Benchmarks with changes first: the flat one is last.
    EXPECT_EQ(data["charts"][2]["title"], "counter/flat_lock/workers:2");
    EXPECT_EQ(data["charts"][0]["title"], "counter/step_lock/workers:2");
    EXPECT_EQ(data["charts"][0]["labels"].size(), 12u);
    EXPECT_EQ(data["charts"][0]["labels"][0], "r1");
    EXPECT_NEAR(data["charts"][0]["p25"][0].get<double>(), 10.05 * 0.995, 1e-9);
}

TEST_F(ComparePage, HistoryPageMarksTheStepWithAChangePointAndSegmentMeans) {
    const json chart = history_page_data(history_page(db_))["charts"][0];
    ASSERT_EQ(chart["changes"].size(), 1u);
    EXPECT_EQ(chart["changes"][0]["index"], 6);  // between r6 (index 5) and r7 (index 6)
    EXPECT_EQ(chart["changes"][0]["text"], "+20.0 %");
    ASSERT_EQ(chart["steps"].size(), 12u);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(chart["steps"][i].get<double>(), i < 6 ? 10 : 12, 0.05) << i;
}

TEST_F(ComparePage, AFlatHistoryHasNoChangePointNoStepLineAndSaysSo) {
    const std::string flat_db = path("flat.db");
    contend_test::write_page_history(flat_db, false);
    const std::string page = history_page(flat_db);
    EXPECT_EQ(body_attribute(page, "data-change-points-expected"), "0");
    EXPECT_NE(page.find("<h2>Changes</h2>\n<p>None.</p>"), std::string::npos);
    const json data = history_page_data(page);
    ASSERT_EQ(data["charts"].size(), 3u);
    for (const auto& chart : data["charts"]) {
        EXPECT_TRUE(chart["changes"].empty()) << chart["title"];
        EXPECT_TRUE(chart["steps"].is_null()) << chart["title"];
    }
}

TEST_F(ComparePage, HostileNamesAreEscapedInTheHtmlAndCarriedIntactInTheJson) {
    const std::string history = history_page(db_);
    expect_no_markup_from_data(history);
    // As HTML text: escaped; in the JSON: the name itself, its stray byte replaced.
    EXPECT_NE(history.find("counter/hostile_lock/tag:&lt;script&gt;alert(2)&lt;img src=x onerror=alert(1)&gt; "
                           "&quot;q&quot; &#39;a&#39; &amp; &lt;!-- \xEF\xBF\xBD/workers:2"),
              std::string::npos);
    EXPECT_NE(history.find("Test CPU &lt;b&gt;9000&lt;/b&gt; &amp; &quot;co&quot;"), std::string::npos);
    EXPECT_NE(history.find("host-&lt;i&gt;0&lt;/i&gt;\xEF\xBF\xBD"), std::string::npos);
    EXPECT_EQ(history_page_data(history)["charts"][1]["title"],
              "counter/hostile_lock/tag:<script>alert(2)<img src=x onerror=alert(1)> \"q\" 'a' & <!-- "
              "\xEF\xBF\xBD/workers:2");

    const std::string files = file_compare_page();
    expect_no_markup_from_data(files);
    EXPECT_NE(files.find("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
    const json data = history_page_data(files);
    ASSERT_EQ(data["charts"].size(), 2u);
    EXPECT_EQ(data["charts"][0]["title"], hostile_name);
}

TEST_F(ComparePage, PagesAreTheSameBytesEveryTime) {
    EXPECT_EQ(history_page(db_), history_page(db_));
    EXPECT_EQ(file_compare_page(), file_compare_page());
}

TEST_F(ComparePage, ComparePageFromFilesHoldsTheReportAndAStripChartPerChange) {
    const std::string page = file_compare_page();
    for (const char* heading :
         {"<h2>Run information</h2>", "<h2>Summary</h2>", "<h2>Regressions</h2>", "<h2>Improvements</h2>",
          "<h2>Undecided</h2>", "<h2>Noisy</h2>", "<h2>On one side only</h2>", "<h2>Not measured</h2>",
          "<h2>What the columns mean</h2>", "<h2>Repro</h2>"})
        EXPECT_NE(page.find(heading), std::string::npos) << heading;
    EXPECT_LT(page.find("<h2>Regressions</h2>"), page.find("&lt;/script&gt;&lt;img"));
    EXPECT_LT(page.find("<h2>Improvements</h2>"), page.find("<a href=\"#improvement-0\">BM_fast</a>"));
    EXPECT_NE(page.find("<h3>BM_fast</h3>"), std::string::npos);  // grouped by suite
    EXPECT_NE(page.find("<li>only in the baseline: BM_gone &lt;/script&gt;"), std::string::npos);
    EXPECT_NE(page.find("<li>only in the test: BM_new</li>"), std::string::npos);
    EXPECT_NE(page.find("3 benchmarks compared: <strong class=\"bad\">1 regression</strong>, <strong>1 "
                        "improvement</strong>, 1 same, 0 noisy, 0 undecided."),
              std::string::npos);
    EXPECT_NE(page.find("<strong class=\"bad\">Gate: fails</strong>: 1 regression."), std::string::npos);
    EXPECT_NE(page.find("<pre><code>contend compare base.json test.json</code></pre>"), std::string::npos);
    EXPECT_EQ(page.find("<th>History</th>"), std::string::npos);  // no history, no edge detector
    EXPECT_EQ(body_attribute(page, "data-charts-expected"), "2");
    const json data = history_page_data(page);
    for (const auto& chart : data["charts"]) {
        EXPECT_EQ(chart["kind"], "strip");
        EXPECT_EQ(chart["base"].size(), 5u);
        EXPECT_EQ(chart["test"].size(), 5u);
    }
}

// An undecided row gets its table and strip chart as a regression does; each cell a side
// could not measure is listed with its reason, the one that fails the gate marked.
TEST_F(ComparePage, ComparePageShowsUndecidedRowsWithChartsAndEachCellNotMeasured) {
    lab::comparison_input base, test;
    base.source = "base.json";
    test.source = "test.json";
    lab::benchmark_series b{"counter/short/workers:2", {100, 101, 99}, 100, "", false};
    lab::benchmark_series t{"counter/short/workers:2", {200, 202, 198}, 200, "", false};
    base.benchmarks = {b, {"counter/dead/workers:2", {10, 10.1, 9.9}, 10, "", false}};
    test.benchmarks = {t};
    test.skipped = {{"counter/dead/workers:2", "timed_out: no repetition finished within 3 s", "timed_out"},
                    {"counter/" + hostile_name, "crashed: " + hostile_name, "crashed"}};
    const auto c = lab::compare_inputs(base, test, {});
    const std::string page = lab::render_compare_page(c, "contend compare base.json test.json",
                                                      {&base, &test, nullptr, 0, 0}, fake_chart_js);
    EXPECT_NE(page.find("<h2>Undecided</h2>\n<p class=\"note\">Past the thresholds, every repetition"),
              std::string::npos);
    EXPECT_NE(page.find("<a href=\"#undecided-0\">counter/short/workers:2</a>"), std::string::npos);
    EXPECT_NE(page.find("<li>in the test: counter/dead/workers:2: timed_out: no repetition finished within 3 s "
                        "<strong class=\"bad\">(measured in the baseline: fails the gate)</strong></li>"),
              std::string::npos);
    EXPECT_NE(page.find("Gate: fails</strong>: 1 benchmark undecided and slower"), std::string::npos);
    expect_no_markup_from_data(page);
    EXPECT_EQ(history_page_data(page)["charts"].size(), 1u);
}

TEST_F(ComparePage, ComparePageFromTheHistoryMarksTheBaselineAndTestRunsOnEachChartAndShowsTheEdgeDetector) {
    const lab::history_store store(db_, lab::history_access::read_only);
    const auto runs = store.stored_runs();
    const auto base = lab::comparison_input_from_history(store, db_, "r1");
    const auto test = lab::comparison_input_from_history(store, db_, "r12");
    const std::int64_t base_run = lab::newest_run_labelled(runs, "r1"),
                       test_run = lab::newest_run_labelled(runs, "r12");
    const auto edges = lab::edges_between(runs, base_run, test_run, {});
    const auto c = lab::compare_inputs(base, test, {}, &edges);
    const auto series = lab::history_series(runs, "", {});
    const lab::compare_page_evidence evidence{nullptr, nullptr, &series, base_run, test_run};
    const std::string page = lab::render_compare_page(c, "contend compare --db h r1 r12", evidence, fake_chart_js);
    expect_no_markup_from_data(page);
    EXPECT_NE(page.find("<th>History</th>"), std::string::npos);
    EXPECT_NE(page.find("<td>change: "), std::string::npos);  // each regression confirmed by its step
    EXPECT_EQ(body_attribute(page, "data-charts-expected"), "2");  // the two regressions
    EXPECT_EQ(body_attribute(page, "data-change-points-expected"), "2");
    const json data = history_page_data(page);
    ASSERT_EQ(data["charts"].size(), 2u);
    for (const auto& chart : data["charts"]) {
        EXPECT_EQ(chart["kind"], "history");
        ASSERT_EQ(chart["marks"].size(), 2u);
        EXPECT_EQ(chart["marks"][0], json({{"index", 0}, {"text", "baseline"}}));
        EXPECT_EQ(chart["marks"][1], json({{"index", 11}, {"text", "test"}}));
        EXPECT_EQ(chart["changes"].size(), 1u);
    }
}

// --- The CLI ----------------------------------------------------------------------------------

TEST_F(ComparePage, CliHistoryHtmlWritesThePageWithOrWithoutChanges) {
    const auto o = contend_test::run_cli("history --db " + shell_quote(db_) + " --html " + shell_quote(path("h.html")));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const std::string page = read(dir_ / "h.html");
    EXPECT_EQ(body_attribute(page, "data-change-points-expected"), "2");
    expect_no_markup_from_data(page);
    // Deterministic through the CLI too, and --changes still prints the text.
    const auto again =
        contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --html " + shell_quote(path("h2.html")));
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("between r6 and r7"), std::string::npos) << again.output;
    EXPECT_EQ(read(dir_ / "h2.html"), page);
    // The glob chooses the charts.
    const auto glob = contend_test::run_cli("history --db " + shell_quote(db_) + " 'counter/flat*' --html " +
                                            shell_quote(path("flat.html")));
    ASSERT_EQ(glob.exit_code, 0) << glob.output;
    EXPECT_EQ(body_attribute(read(dir_ / "flat.html"), "data-charts-expected"), "1");
}

TEST_F(ComparePage, CliHistoryHtmlOnTheHistoryOrAFolderExitsTwoAndWritesNothing) {
    const std::string before = read(db_);
    const auto on_db = contend_test::run_cli("history --db " + shell_quote(db_) + " --html " + shell_quote(db_));
    EXPECT_EQ(on_db.exit_code, 2) << on_db.output;
    EXPECT_NE(on_db.output.find("--html"), std::string::npos) << on_db.output;
    EXPECT_EQ(read(db_), before);
    const auto folder =
        contend_test::run_cli("history --db " + shell_quote(db_) + " --changes --html " + shell_quote(dir_.string()));
    EXPECT_EQ(folder.exit_code, 2) << folder.output;
    EXPECT_NE(folder.output.find("--html"), std::string::npos) << folder.output;
    EXPECT_EQ(folder.output.find("between r6 and r7"), std::string::npos) << folder.output;  // nothing else printed
}

TEST_F(ComparePage, CliCompareHtmlFromFilesAndFromTheHistory) {
    const auto files = contend_test::run_cli("compare " + shell_quote(path("base.json")) + " " +
                                             shell_quote(path("test.json")) + " --html " + shell_quote(path("c.html")));
    EXPECT_EQ(files.exit_code, 1) << files.output;  // a regression
    const std::string page = read(dir_ / "c.html");
    expect_no_markup_from_data(page);
    EXPECT_EQ(body_attribute(page, "data-charts-expected"), "2");
    const auto db = contend_test::run_cli("compare --db " + shell_quote(db_) +
                                          " r1 r12 --no-fail-on-regression --html " + shell_quote(path("d.html")));
    EXPECT_EQ(db.exit_code, 0) << db.output;
    const json data = history_page_data(read(dir_ / "d.html"));
    ASSERT_EQ(data["charts"].size(), 2u);
    EXPECT_EQ(data["charts"][0]["marks"].size(), 2u);
}

TEST_F(ComparePage, CliCompareHtmlOnAnInputAnotherOutputOrAFolderExitsTwoAndWritesNothing) {
    const std::string base = shell_quote(path("base.json")), test = shell_quote(path("test.json"));
    const std::string before = read(dir_ / "base.json");
    const auto on_input = contend_test::run_cli("compare " + base + " " + test + " --markdown " +
                                                shell_quote(path("r.md")) + " --html " + base);
    EXPECT_EQ(on_input.exit_code, 2) << on_input.output;
    EXPECT_EQ(read(dir_ / "base.json"), before);
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.md"));
    const auto on_markdown = contend_test::run_cli("compare " + base + " " + test + " --markdown " +
                                                   shell_quote(path("r.md")) + " --html " + shell_quote(path("r.md")));
    EXPECT_EQ(on_markdown.exit_code, 2) << on_markdown.output;
    const auto folder = contend_test::run_cli("compare " + base + " " + test + " --json " +
                                              shell_quote(path("r.json")) + " --html " + shell_quote(dir_.string()));
    EXPECT_EQ(folder.exit_code, 2) << folder.output;
    EXPECT_NE(folder.output.find("--html"), std::string::npos) << folder.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.json"));
    const std::string history = read(db_);
    const auto on_db = contend_test::run_cli("compare --db " + shell_quote(db_) + " r1 r12 --html " + shell_quote(db_));
    EXPECT_EQ(on_db.exit_code, 2) << on_db.output;
    EXPECT_EQ(read(db_), history);
}
