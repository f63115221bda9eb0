// What the report tests share: the fixture run, a stand-in for Chart.js, the page's data
// read back, cells made to order, and a run whose names try to break out of the page.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pages/report.hpp"
#include "results/results.hpp"
#include "store/results_io.hpp"

namespace contend_test::report {

namespace lab = contend::lab;
namespace fs = std::filesystem;
using nlohmann::json;

// A stand-in for Chart.js: the tests here read the page, they do not run it.
inline constexpr const char* fake_library = "/*! Chart.js v9.8.7 */ window.Chart = function () {};";

inline std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline std::string fixture_path() { return CONTEND_LAB_GOLDEN_DIR "/report_two_suites.json"; }

inline lab::run_result fixture() { return lab::run_from_json(read_file(fixture_path())); }

inline std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// The JSON the page's script draws from.
inline json page_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const std::size_t start = page.find(open);
    EXPECT_NE(start, std::string::npos);
    const std::size_t end = page.find("</script>", start);
    return json::parse(page.substr(start + open.size(), end - start - open.size()));
}

inline const json& chart_of(const json& data, const std::string& suite) {
    for (const auto& chart : data["charts"])
        if (chart["suite"] == suite) return chart;
    throw std::runtime_error("no chart for " + suite);
}

inline const json& series_of(const json& chart, const std::string& label) {
    for (const auto& s : chart["series"])
        if (s["label"] == label) return s;
    throw std::runtime_error("no series " + label);
}

inline std::vector<const lab::cell_result*> cells_of(const lab::run_result& run, const std::string& suite) {
    std::vector<const lab::cell_result*> cells;
    for (const auto& c : run.cells)
        if (c.suite == suite) cells.push_back(&c);
    return cells;
}

inline lab::cell_result cell(const std::string& suite, const std::string& contender, std::int32_t workers,
                             double median, std::vector<std::pair<std::string, std::string>> params = {}) {
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

// Every name on the page comes from a results file, which anyone can write.
inline const std::string hostile = "</script><img src=x onerror=alert(1)>\"'&";

// A run named with `hostile` wherever the results file reader lets text through: suite,
// contender, label and host name take any text; a parameter value no '/'.
inline lab::run_result hostile_run() {
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
inline void expect_escaped(const std::string& page) {
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

}  // namespace contend_test::report
