// `contend report` on fixed input: the page's sections, chart data and escaping, reading
// results files back, picking runs from the history, and the CLI's errors. Whether the page
// draws in a browser is report_browser_test.sh's job.
#include "pages/report.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include "run_cli.hpp"
#include "temp_dir.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "pages/assets.hpp"
#include "store/history.hpp"
#include "store/results_io.hpp"

namespace lab = contend::lab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A stand-in for Chart.js: the tests here read the page, they do not run it.
constexpr const char* fake_library = "/*! Chart.js v9.8.7 */ window.Chart = function () {};";

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string fixture_path() { return CONTEND_LAB_GOLDEN_DIR "/report_two_suites.json"; }

lab::run_result fixture() { return lab::run_from_json(read_file(fixture_path())); }

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// The JSON the page's script draws from.
json page_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const std::size_t start = page.find(open);
    EXPECT_NE(start, std::string::npos);
    const std::size_t end = page.find("</script>", start);
    return json::parse(page.substr(start + open.size(), end - start - open.size()));
}

const json& chart_of(const json& data, const std::string& suite) {
    for (const auto& chart : data["charts"])
        if (chart["suite"] == suite) return chart;
    throw std::runtime_error("no chart for " + suite);
}

const json& series_of(const json& chart, const std::string& label) {
    for (const auto& s : chart["series"])
        if (s["label"] == label) return s;
    throw std::runtime_error("no series " + label);
}

std::vector<const lab::cell_result*> cells_of(const lab::run_result& run, const std::string& suite) {
    std::vector<const lab::cell_result*> cells;
    for (const auto& c : run.cells)
        if (c.suite == suite) cells.push_back(&c);
    return cells;
}

lab::cell_result cell(const std::string& suite, const std::string& contender, std::int32_t workers, double median,
                      std::vector<std::pair<std::string, std::string>> params = {}) {
    lab::cell_result c;
    c.suite = suite;
    c.contender = contender;
    c.workers = workers;
    c.params = std::move(params);
    c.median_ns = c.p25_ns = c.p75_ns = c.cpu_ns_per_op = median;
    c.repetitions = 3;
    c.ns_per_op = {median, median, median};
    return c;
}

}  // namespace

// --- The page ------------------------------------------------------------------------------

TEST(Report, OneChartSectionPerSuiteWithItsTable) {
    const std::string page = lab::render_report({{"fixture.json", fixture()}}, fake_library);
    EXPECT_EQ(count(page, "<section class=\"suite\""), 2u);
    // Per suite: the controls the script fills, the main chart, CPU ns/op and fairness (both
    // suites of the fixture measured it).
    EXPECT_EQ(count(page, "<canvas "), 6u);
    for (const char* id : {"chart-0", "chart-0-cpu", "chart-0-share", "chart-1", "chart-1-cpu", "chart-1-share"})
        EXPECT_NE(page.find("<canvas id=\"" + std::string(id) + "\""), std::string::npos) << id;
    EXPECT_EQ(count(page, "<div class=\"controls\" id=\"chart-"), 2u);
    EXPECT_NE(page.find("data-suite=\"counter\""), std::string::npos);
    EXPECT_NE(page.find("data-suite=\"hold\""), std::string::npos);
    EXPECT_NE(page.find("data-charts-expected=\"2\""), std::string::npos);
    EXPECT_NE(page.find("data-side-charts-expected=\"4\""), std::string::npos);
    // What the script records, zero or empty until it has drawn (report.hpp).
    for (const char* attribute :
         {"data-charts-rendered=\"0\"", "data-side-charts-rendered=\"0\"", "data-points-plotted=\"0\"",
          "data-ratio-points-plotted=\"0\"", "data-baseline=\"\"", "data-shown=\"\"", "data-errors=\"0\""})
        EXPECT_NE(page.find(attribute), std::string::npos) << attribute;
    const json data = page_data(page);
    ASSERT_EQ(data["charts"].size(), 2u);
    EXPECT_EQ(data["charts"][0]["canvas"], "chart-0");
    EXPECT_EQ(data["charts"][0]["cpu_canvas"], "chart-0-cpu");
    EXPECT_EQ(data["charts"][0]["share_canvas"], "chart-0-share");
    EXPECT_EQ(data["charts"][1]["canvas"], "chart-1");
    // One table row per cell (28 in the fixture), a header row per suite table, and the
    // rows of the run's context: each context field with a heading, the co-tenant, the suites.
    EXPECT_NE(page.find("<tr><th>co-tenant</th><td>none</td></tr>"), std::string::npos);
    std::size_t context_rows = 2;
    for (const auto& f : lab::context_fields()) context_rows += f.heading.empty() ? 0 : 1;
    EXPECT_EQ(count(page, "<tr"), 28u + 2u + context_rows);
    // The machine the run came from.
    for (const char* field : {"AMD EPYC", "0-1", "GCC 12.2.0", "futex", "timer slack, ns", "50000", "fixture"})
        EXPECT_NE(page.find(field), std::string::npos) << field;
    EXPECT_NE(page.find("Chart.js v9.8.7"), std::string::npos) << "the footer names the library";
    EXPECT_NE(page.find("animation: false"), std::string::npos);
    EXPECT_NE(page.find("type: 'logarithmic'"), std::string::npos);
}

TEST(Report, ChartsOfSeveralWorkerCountsPutWorkersOnTheXAxis) {
    const lab::run_result run = fixture();
    const lab::chart_axis axis = lab::choose_x_axis(cells_of(run, "counter"));
    EXPECT_EQ(axis.key, "workers");
    EXPECT_EQ(axis.values, (std::vector<std::string>{"1", "2", "4", "16"}));

    const json counter = chart_of(page_data(lab::render_report({{"f", run}}, fake_library)), "counter");
    EXPECT_EQ(counter["x_title"], "workers");
    EXPECT_EQ(counter["series"].size(), 4u) << "one line per contender";
    const json& mutex = series_of(counter, "contend_mutex");
    ASSERT_EQ(mutex["y"].size(), 4u);
    for (const auto& y : mutex["y"]) EXPECT_TRUE(y.is_number());
}

TEST(Report, WorkerCountsSortNumerically) {
    lab::run_result run;
    for (int w : {16, 1, 4}) run.cells.push_back(cell("counter", "a", w, 5));
    EXPECT_EQ(lab::choose_x_axis(cells_of(run, "counter")).values, (std::vector<std::string>{"1", "4", "16"}));
}

TEST(Report, AChartOfOneWorkerCountPutsTheMostVariedParameterOnTheXAxis) {
    const lab::run_result run = fixture();
    const lab::chart_axis axis = lab::choose_x_axis(cells_of(run, "hold"));
    EXPECT_EQ(axis.key, "cs_us");
    EXPECT_EQ(axis.values, (std::vector<std::string>{"0", "1", "20", "200"}));
    const json hold = chart_of(page_data(lab::render_report({{"f", run}}, fake_library)), "hold");
    EXPECT_EQ(hold["x_title"], "cs_us");
    EXPECT_EQ(hold["labels"], json({"0", "1", "20", "200"}));
    EXPECT_EQ(hold["series"].size(), 3u) << "one line per contender, cs_us being the axis";
    EXPECT_EQ(hold["title"], "hold, 2 workers");

    // Two parameters: the one with more values is the axis, the other splits the lines.
    lab::run_result two;
    for (const char* size : {"64", "128", "256"})
        for (const char* mode : {"fast", "slow"})
            two.cells.push_back(cell("s", "a", 4, 3, {{"mode", mode}, {"size", size}}));
    const lab::chart_axis by_size = lab::choose_x_axis(cells_of(two, "s"));
    EXPECT_EQ(by_size.key, "size");
    EXPECT_EQ(by_size.values, (std::vector<std::string>{"64", "128", "256"}));
    const json chart = page_data(lab::render_report({{"f", two}}, fake_library))["charts"][0];
    EXPECT_EQ(chart["series"].size(), 2u);
    EXPECT_EQ(chart["series"][0]["label"], "a mode=fast");
    EXPECT_EQ(chart["series"][0]["contender"], "a") << "a ratio pairs a line with the baseline's of its variant";
    EXPECT_EQ(chart["series"][0]["variant"], "mode=fast");

    // One worker count and no parameter: workers, with one point.
    lab::run_result single;
    single.cells.push_back(cell("counter", "a", 4, 5));
    EXPECT_EQ(lab::choose_x_axis(cells_of(single, "counter")).key, "workers");
}

TEST(Report, InvalidCellsAreInTheTableButNotInTheCharts) {
    const std::string page = lab::render_report({{"f", fixture()}}, fake_library);
    const json data = page_data(page);
    const json& ck = series_of(chart_of(data, "counter"), "ck_ticket");
    EXPECT_TRUE(ck["y"][0].is_number());
    EXPECT_TRUE(ck["y"][2].is_null()) << "timed out at 4 workers";
    EXPECT_TRUE(ck["y"][3].is_null()) << "timed out at 16 workers";
    const json& ticket = series_of(chart_of(data, "hold"), "ticket_lock");
    EXPECT_TRUE(ticket["y"][2].is_number());
    EXPECT_TRUE(ticket["y"][3].is_null()) << "timed out at cs_us 200, though it has figures";
    EXPECT_EQ(count(page, "<span class=\"bad\">timed_out</span>"), 3u);
    EXPECT_NE(page.find("no repetition finished within 27 s"), std::string::npos) << "the reason is shown";
    EXPECT_NE(page.find("oversubscribed</span>"), std::string::npos);
    EXPECT_NE(page.find("14 of 16 cells valid"), std::string::npos);
    EXPECT_NE(page.find("11 of 12 cells valid"), std::string::npos);
}

TEST(Report, EachLineCarriesItsCpuTimeAndFairnessWithGapsWhereThereAreNone) {
    const json counter = chart_of(page_data(lab::render_report({{"f", fixture()}}, fake_library)), "counter");
    EXPECT_EQ(counter["contenders"], json({"ttas_lock", "std_mutex", "contend_mutex", "ck_ticket"}))
        << "in order of first appearance: the order of the toggles";
    const json& mutex = series_of(counter, "contend_mutex");
    ASSERT_EQ(mutex["cpu"].size(), 4u);
    for (const auto& cpu : mutex["cpu"]) EXPECT_TRUE(cpu.is_number());
    EXPECT_TRUE(mutex["min_share"][0].is_null()) << "one worker: no fairness measured";
    EXPECT_NEAR(mutex["min_share"][1].get<double>(), 0.6352, 1e-4);
    EXPECT_EQ(mutex["min_share"][2], 0.0) << "a starved worker is a figure, not a gap";
    const json& ck = series_of(counter, "ck_ticket");
    EXPECT_TRUE(ck["cpu"][2].is_null()) << "an invalid cell has no point in any chart";
    EXPECT_TRUE(ck["min_share"][2].is_null());
}

TEST(Report, TheDefaultBaselineIsStdMutexElseTheFirstContenderElseNone) {
    const json data = page_data(lab::render_report({{"f", fixture()}}, fake_library));
    EXPECT_EQ(chart_of(data, "counter")["default_baseline"], "std_mutex") << "std_mutex is second there";
    EXPECT_EQ(chart_of(data, "hold")["default_baseline"], "std_mutex");

    lab::run_result without;
    for (const char* name : {"b", "a"}) without.cells.push_back(cell("s", name, 2, 5));
    EXPECT_EQ(page_data(lab::render_report({{"f", without}}, fake_library))["charts"][0]["default_baseline"], "b");

    lab::run_result alone;
    for (int w : {1, 2}) alone.cells.push_back(cell("s", "std_mutex", w, 5));
    EXPECT_EQ(page_data(lab::render_report({{"f", alone}}, fake_library))["charts"][0]["default_baseline"], "")
        << "nothing to compare with: absolute ns/op";
}

TEST(Report, ASuiteWithoutFairnessFiguresSaysSoInsteadOfAnEmptyChart) {
    lab::run_result run;
    for (int w : {1, 2}) run.cells.push_back(cell("pool", "a", w, 5));  // min_share: not measured
    auto measured = cell("counter", "a", 2, 5);
    measured.has_fairness = true;
    measured.min_share = 0.5;
    run.cells.push_back(measured);
    const std::string page = lab::render_report({{"f", run}}, fake_library);
    EXPECT_EQ(count(page, "No fairness figures"), 1u);
    EXPECT_EQ(count(page, "<canvas id=\"chart-1-share\""), 1u) << "the counter suite's fairness chart";
    EXPECT_EQ(page.find("<canvas id=\"chart-0-share\""), std::string::npos) << "none for the pool suite";
    EXPECT_NE(page.find("data-side-charts-expected=\"3\""), std::string::npos);
    const json data = page_data(page);
    EXPECT_TRUE(chart_of(data, "pool")["share_canvas"].is_null());
    EXPECT_EQ(chart_of(data, "counter")["share_canvas"], "chart-1-share");
}

namespace {

// Every name on the page comes from a results file, which anyone can write.
const std::string hostile = "</script><img src=x onerror=alert(1)>\"'&";

// A run named with `hostile` wherever the results file reader lets text through: suite,
// contender, label and host name take any text; a parameter value no '/'.
lab::run_result hostile_run() {
    lab::run_result run;
    run.context.date = "2026-01-01T00:00:00Z";
    run.context.label = hostile + "label";
    run.context.host_name = hostile + "host";
    run.context.cpu_model = "CPU & \"co\"";
    for (int w : {1, 2}) {
        run.cells.push_back(cell(hostile + "suite", hostile + "a", w, 5.0 * w, {{"k", "'v'&<i>"}}));
        run.cells.push_back(cell(hostile + "suite", "std_mutex", w, 4.0 * w, {{"k", "'v'&<i>"}}));
    }
    return run;
}

// No markup but the page's own, the data as JSON that cannot end its element, and the
// names still what they were.
void expect_escaped(const std::string& page) {
    EXPECT_EQ(page.find("<img"), std::string::npos);
    EXPECT_EQ(page.find("<i>"), std::string::npos);
    EXPECT_EQ(page.find("<!--"), std::string::npos);
    EXPECT_EQ(page.find("onerror=alert(1)>"), std::string::npos) << "only escaped forms";
    EXPECT_NE(page.find("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;a"), std::string::npos)
        << "the contender shown as text in the table";
    EXPECT_NE(page.find("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;label"), std::string::npos);
    EXPECT_NE(page.find("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;host"), std::string::npos);
    EXPECT_NE(page.find("data-suite=\"&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;suite\""),
              std::string::npos)
        << "quotes cannot end the attribute";
    EXPECT_NE(page.find("CPU &amp; &quot;co&quot;"), std::string::npos);
    // Four scripts: the error trap, the data, the library, the drawing; nothing else closes one.
    EXPECT_EQ(count(page, "</script>"), 4u);
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const std::size_t start = page.find(open) + open.size();
    const std::string script = page.substr(start, page.find("</script>", start) - start);
    EXPECT_EQ(script.find('<'), std::string::npos) << "no '<' in the data at all";
    EXPECT_NE(script.find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"), std::string::npos);

    const json data = page_data(page);
    ASSERT_EQ(data["charts"].size(), 1u);
    const json& chart = data["charts"][0];
    EXPECT_EQ(chart["suite"], hostile + "suite");
    EXPECT_EQ(chart["contenders"], json({hostile + "a", "std_mutex"}));
    EXPECT_EQ(chart["series"][0]["label"], hostile + "a k='v'&<i>") << "the data still says what it said";
    EXPECT_EQ(chart["series"][0]["contender"], hostile + "a");
}

}  // namespace

TEST(Report, NamesCannotBreakOutOfTheirElements) {
    const std::string page = lab::render_report({{"<origin>" + hostile, hostile_run()}}, fake_library);
    expect_escaped(page);
    EXPECT_EQ(page.find("<origin>"), std::string::npos);
}

// The script puts names into the page as text: it has no way to parse text as markup or run it.
TEST(Report, ThePagesScriptNeverTurnsTextIntoMarkupOrCode) {
    const std::string script(lab::assets::render_js.text);
    ASSERT_FALSE(script.empty());
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                             "setTimeout('", "DOMParser", "createContextualFragment"})
        EXPECT_EQ(script.find(sink), std::string::npos) << sink;
    EXPECT_NE(script.find("textContent"), std::string::npos);
    EXPECT_NE(script.find("decodeURIComponent"), std::string::npos) << "the fragment is decoded, nothing more";
}

TEST(Report, TheLibraryIsInlinedWithoutItsSourceMapAndRefusedIfItCouldCloseItsElement) {
    const std::string page = lab::render_report(
        {{"f", fixture()}}, "window.Chart = function () {};\n//# sourceMappingURL=chart.umd.js.map\n");
    EXPECT_NE(page.find("window.Chart = function () {};"), std::string::npos);
    EXPECT_EQ(page.find("sourceMappingURL"), std::string::npos);
    EXPECT_NE(page.find("Chart.js (MIT"), std::string::npos) << "no version banner: the name alone";
    EXPECT_THROW(lab::render_report({{"f", fixture()}}, "var s = '</SCRIPT>';"), std::runtime_error);
    EXPECT_THROW(lab::render_report({{"f", fixture()}}, "var s = '<!--';"), std::runtime_error);
}

// The embedding (lab/pages/embed_assets.cmake) is byte for byte: each compiled-in file equals
// the file it was read from. A failure after editing lab/pages/assets/ without building
// means the binary is stale.
TEST(Report, ThePagesFilesAreCompiledInByteForByteAndInlinedInOrder) {
    namespace assets = lab::assets;
    for (const auto* file : {&assets::error_trap_js, &assets::render_js, &assets::style_css}) {
        const std::string path(file->path);
        ASSERT_TRUE(fs::exists(path)) << path;
        EXPECT_FALSE(file->text.empty()) << path;
        EXPECT_EQ(file->text, read_file(path)) << path << " differs from what was compiled in: build again";
    }
    if (!assets::chart_js.text.empty()) {
        EXPECT_EQ(assets::chart_js.text, read_file(std::string(assets::chart_js.path)));
    }
    EXPECT_EQ(lab::chart_library_bundle(), assets::chart_js.text);
    EXPECT_EQ(lab::chart_library_path(), assets::chart_js.path);

    const std::string page = lab::render_report({{"f", fixture()}}, fake_library);
    const std::size_t style = page.find(assets::style_css.text);
    const std::size_t trap = page.find(assets::error_trap_js.text);
    const std::size_t library = page.find(fake_library);
    const std::size_t drawing = page.find(assets::render_js.text);
    ASSERT_NE(style, std::string::npos);
    EXPECT_LT(style, page.find("</head>"));
    ASSERT_NE(trap, std::string::npos);
    EXPECT_EQ(page.find("<script"), page.rfind("<script", trap)) << "the error trap is the first script";
    EXPECT_LT(trap, library);
    ASSERT_NE(drawing, std::string::npos);
    EXPECT_LT(library, drawing);
    EXPECT_EQ(page.find("<script", drawing), std::string::npos) << "the drawing is the last script";
}

TEST(Report, TextThatCouldEndItsElementIsNotInlined) {
    EXPECT_EQ(lab::inlinable("var a = b < c;", "script", "x"), "var a = b < c;");
    EXPECT_EQ(lab::inlinable("var s = '</style>';", "script", "x"), "var s = '</style>';")
        << "ends a style, not a script";
    EXPECT_THROW(lab::inlinable("var s = '</script>';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("var s = '</ScRiPt ';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("var s = '<!--';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("a::after { content: '</STYLE>'; }", "style", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("/* <!-- */", "style", "x"), std::runtime_error);
    try {
        lab::inlinable("// see </script>\n", "script", "lab/pages/assets/render.js");
        ADD_FAILURE() << "not refused";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "lab/pages/assets/render.js contains \"</script\" or \"<!--\" and cannot be inlined as is");
    }
}

TEST(Report, TheSamePageForTheSameInput) {
    const lab::run_result run = fixture();
    EXPECT_EQ(lab::render_report({{"f", run}}, fake_library), lab::render_report({{"f", run}}, fake_library));
}

// --- Reading results files -----------------------------------------------------------------

TEST(RunFromJson, ReadsBackWhatToJsonWrote) {
    lab::run_result run = fixture();
    lab::cell_result odd = cell("counter", "nan_cell", 3, std::numeric_limits<double>::quiet_NaN());
    odd.status = "no_repetitions";
    odd.detail = "none finished";
    odd.has_fairness = true;
    odd.min_share = 0.25;
    odd.max_share = 1.75;
    odd.affinity = "0,1";
    odd.ops_per_worker = 12345678901234ull;
    run.cells.push_back(odd);
    run.context.nanosleep_1ns_us = std::numeric_limits<double>::quiet_NaN();

    const lab::run_result back = lab::run_from_json(lab::to_json(run));
    EXPECT_EQ(lab::to_json(back), lab::to_json(run)) << "every field survives the round trip";
    ASSERT_EQ(back.cells.size(), run.cells.size());
    const lab::cell_result& b = back.cells.back();
    EXPECT_TRUE(std::isnan(b.median_ns)) << "written as null, read as NaN";
    EXPECT_TRUE(std::isnan(back.context.nanosleep_1ns_us));
    EXPECT_EQ(b.status, "no_repetitions");
    EXPECT_EQ(b.ops_per_worker, 12345678901234ull);
    EXPECT_EQ(b.affinity, "0,1");
    EXPECT_EQ(back.cells[16].params, (std::vector<std::pair<std::string, std::string>>{{"cs_us", "0"}}));
}

TEST(RunFromJson, ReadsTheGoldenFile) {
    const lab::run_result run = lab::run_from_json(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json"));
    EXPECT_EQ(run.context.date, "2026-11-29T00:00:00Z");
    EXPECT_EQ(run.context.logical_cpus, 2);
    EXPECT_EQ(run.context.timer_slack_ns, 50000);
    EXPECT_DOUBLE_EQ(run.context.nanosleep_1ns_us, 90.5);
    EXPECT_EQ(run.context.wait_backend, "futex");
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "counter/contend_mutex/workers:2");
    EXPECT_DOUBLE_EQ(run.cells[0].median_ns, 6.5);
    EXPECT_DOUBLE_EQ(run.cells[0].max_share, 1.5);
    EXPECT_EQ(json::parse(lab::to_json(run)), json::parse(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json")))
        << "written again, the same document";
}

TEST(RunFromJson, ReadsAFileWrittenBeforeSchemaVersionTwo) {
    // Parameters as an object, no operation, no run_status: the lab's first JSON shape.
    const lab::run_result run = lab::run_from_json(read_file(CONTEND_LAB_GOLDEN_DIR "/run_v1.json"));
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].name(), "counter/contend_mutex/workers:2");
    EXPECT_EQ(run.cells[0].operation, "op");
    EXPECT_EQ(run.context.run_status, "complete");
    EXPECT_DOUBLE_EQ(run.cells[0].min_share, 0.5);
}

TEST(RunFromJson, MalformedInputIsRefusedSayingWhy) {
    auto error_of = [](const std::string& text) -> std::string {
        try {
            lab::run_from_json(text);
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return "(no error)";
    };
    const json good = json::parse(read_file(CONTEND_LAB_GOLDEN_DIR "/run.json"));
    EXPECT_NE(error_of("{\"context\": ").find("not JSON"), std::string::npos) << error_of("{\"context\": ");
    EXPECT_NE(error_of("").find("not JSON"), std::string::npos);
    EXPECT_NE(error_of("[1, 2]").find("'context' and 'benchmarks'"), std::string::npos);
    EXPECT_NE(error_of("{\"benchmarks\": []}").find("lacks 'context'"), std::string::npos);

    json no_rows = good;
    no_rows.erase("benchmarks");
    EXPECT_NE(error_of(no_rows.dump()).find("lacks 'benchmarks'"), std::string::npos);
    json rows_not_array = good;
    rows_not_array["benchmarks"] = 3;
    EXPECT_NE(error_of(rows_not_array.dump()).find("not an array"), std::string::npos);

    json no_kernel = good;
    no_kernel["context"].erase("kernel");
    EXPECT_NE(error_of(no_kernel.dump()).find("run context lacks 'kernel'"), std::string::npos);
    json cpus_text = good;
    cpus_text["context"]["num_cpus"] = "two";
    EXPECT_NE(error_of(cpus_text.dump()).find("malformed run context"), std::string::npos);

    json second_row_bad = good;
    second_row_bad["benchmarks"].push_back(good["benchmarks"][0]);
    second_row_bad["benchmarks"][1].erase("suite");
    const std::string missing = error_of(second_row_bad.dump());
    EXPECT_NE(missing.find("benchmarks[1]"), std::string::npos) << missing;
    EXPECT_NE(missing.find("lacks 'suite'"), std::string::npos) << missing;
    json workers_text = good;
    workers_text["benchmarks"][0]["workers"] = "two";
    const std::string mistyped = error_of(workers_text.dump());
    EXPECT_NE(mistyped.find("benchmarks[0]: malformed result row"), std::string::npos) << mistyped;
    json row_not_object = good;
    row_not_object["benchmarks"][0] = 7;
    EXPECT_NE(error_of(row_not_object.dump()).find("not a JSON object"), std::string::npos);
}

TEST(Report, AWorkloadsMetricsGetAColumnEachWithNoCodeForThem) {
    lab::run_result run;
    auto a = cell("pool", "contend", 4, 120.0, {{"queue", "local"}});
    a.metrics = {{"items_per_ms", 8333.25}};
    auto b = cell("pool", "tbb", 4, 150.0, {{"queue", "local"}});  // no such metric: a blank
    run.cells = {a, b};
    const std::string page = lab::render_report({{"f", run}}, fake_library);
    EXPECT_NE(page.find("<th>items_per_ms</th>"), std::string::npos);
    EXPECT_NE(page.find(">8333<"), std::string::npos) << "its value, formatted as every figure is";
    for (const char* heading : {"<th>median ns/op</th>", "<th>p25</th>", "<th>min share</th>", "<th>status</th>"})
        EXPECT_NE(page.find(heading), std::string::npos) << heading << ": the field table's headings";
}

// --- Picking runs from the history --------------------------------------------------------

TEST(Report, TheHistoryGivesTheNewestRunOfEachSuite) {
    auto run_of = [](std::initializer_list<const char*> suites, double figure) {
        lab::run_result run;
        for (const char* s : suites) run.cells.push_back(cell(s, "a", 1, figure));
        return run;
    };
    const std::vector<lab::stored_run> history = {
        {1, run_of({"counter", "hold"}, 1)},
        {2, run_of({"hold"}, 2)},
        {3, run_of({"counter"}, 3)},
        {4, run_of({"counter", "queue"}, 4)},
    };
    const auto picked = lab::newest_run_per_suite(history);
    ASSERT_EQ(picked.size(), 2u);
    EXPECT_EQ(picked[0].origin, "history run 2");  // oldest first
    ASSERT_EQ(picked[0].run.cells.size(), 1u);
    EXPECT_EQ(picked[0].run.cells[0].suite, "hold");
    EXPECT_EQ(picked[1].origin, "history run 4");
    EXPECT_EQ(picked[1].run.cells.size(), 2u);

    // A run newest for one of its suites only keeps that suite's cells.
    const auto partial = lab::newest_run_per_suite({{1, run_of({"counter", "hold"}, 1)}, {2, run_of({"hold"}, 2)}});
    ASSERT_EQ(partial.size(), 2u);
    EXPECT_EQ(partial[0].origin, "history run 1");
    ASSERT_EQ(partial[0].run.cells.size(), 1u);
    EXPECT_EQ(partial[0].run.cells[0].suite, "counter");
    EXPECT_TRUE(lab::newest_run_per_suite({}).empty());
}

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
    expect_refused("--json " + (dir_ / "missing.json").string(), "cannot read");
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
    const fs::path results = dir_ / "hostile.json";
    std::ofstream(results) << lab::to_json(hostile_run());
    const std::string out = (dir_ / "page.html").string();
    const cli_outcome o = run_cli("report --json " + results.string() + " -o " + out);
    ASSERT_EQ(o.exit_code, 0) << o.output << ": the reader accepts such names";
    expect_escaped(read_file(out));
}

TEST(Report, TheRunsCotenantAndAModalCellAreShown) {
    lab::run_result run;
    run.context.busy_loops = 2;
    run.context.busy_nice = 19;
    run.context.one_cpu = 0;
    run.cells.push_back(cell("pipe", "contend", 2, 500, {{"chunk", "4096"}}));
    auto ring = cell("pipe", "mutex_ring", 2, 3900, {{"chunk", "4096"}});
    ring.ns_per_op = {512, 4096, 530, 4200, 3900};
    ring.modal = true;
    run.cells.push_back(ring);
    const std::string page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_NE(page.find("<tr><th>co-tenant</th><td>2 busy loops at nice 19, on CPU 0</td></tr>"), std::string::npos);
    EXPECT_EQ(count(page, "class=\"flag modal\""), 1u) << "the modal cell only";
    EXPECT_NE(page.find("title=\"the repetitions fall into separate modes: 2 repetitions near 521 ns, 3 near 4096 "
                        "ns; the median is not one figure\">modal</span>"),
              std::string::npos);
}

TEST(Report, AFairnessNotMeasuredSaysSoWithItsReason) {
    lab::run_result run;
    auto measured = cell("counter", "std_mutex", 2, 20);
    measured.has_fairness = true;
    measured.min_share = 0.9;
    measured.max_share = 1.1;
    run.cells.push_back(measured);
    auto short_one = cell("counter", "std_mutex", 64, 40);
    short_one.has_fairness = true;
    short_one.fairness_reason = "the shares were read 37.5 ms into a repetition <too early>";
    run.cells.push_back(short_one);
    std::string page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_EQ(count(page, ">not measured</span>"), 2u) << "its min and its max share";
    EXPECT_NE(page.find("title=\"the shares were read 37.5 ms into a repetition &lt;too early&gt;\""),
              std::string::npos)
        << "the reason, escaped";
    EXPECT_TRUE(series_of(chart_of(page_data(page), "counter"), "std_mutex")["min_share"][1].is_null());

    run.cells.erase(run.cells.begin());  // nothing measured at all
    page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_NE(page.find("too short for the scheduler to run every worker"), std::string::npos);
}
