// The pages of `contend history --html` and `contend compare --html`: one self-contained
// HTML file each, for a person to act on.
//
//  - The history page: the runs, a table of every change point found (benchmark, old -> new,
//    the change in percent, between which two runs), and one chart per benchmark: its median
//    ns per operation over the runs of its series with the p25-p75 range as error bars, each
//    change point a vertical line between the two runs that bracket it, and the segment means
//    as a step line. Benchmarks with changes come first.
//  - The compare page: what the Markdown report says (comparison_to_markdown), as HTML, and
//    for each regression and improvement the evidence: with history labels (--db), that
//    benchmark's history chart with its change points and the baseline and test runs marked;
//    with files, a strip chart of the baseline's and the test's repetitions side by side.
//
// Like the page of `contend report` (pages/report.hpp), a page needs nothing from the
// network: Chart.js, error_trap.js and the page's own script and style (report/assets/
// history.js, history.css) are inlined, and a Content-Security-Policy meta forbids any fetch.
// Every name from an input (a benchmark, a label, a path, a CPU model) is escaped as HTML
// text, bytes that are not UTF-8 replaced by U+FFFD, and travels to the script only inside
// script_safe_json; the script builds no HTML from data (it draws on canvases). The same
// input gives the same bytes: nothing of the time or place of writing is in the page.
//
// The page's script records on <body> what it did, so a headless browser can check it
// (tests/lab/compare_page_browser_test.sh):
//   data-charts-expected          charts the page has data for
//   data-charts-rendered          charts constructed whose canvas has a size and painted pixels
//   data-change-points-expected   change points in the charts' data
//   data-change-points-marked     change points drawn as a line inside a chart's plot area
//   data-runs-marked              baseline and test runs marked on history charts (compare
//                                 page with --db; 0 elsewhere)
//   data-errors                   uncaught errors, unhandled rejections and console.error
//                                 calls (error_trap.js)
// The server writes the expected counts; the script writes the rest, starting from 0.
//
// Internal to the lab (namespace contend::lab).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/change_points.hpp"
#include "analyze/compare.hpp"
#include "analyze/history_series.hpp"
#include "store/history.hpp"

namespace contend::lab {

// What the history page was asked for, shown on it.
struct history_page_request {
    std::string db_path;  // names the history
    std::string name_glob;  // "": every benchmark
    change_options options;
};

// The page of `contend history --html`: `runs` as stored_runs() returns them, `series` as
// history_series(runs, request.name_glob, request.options) returns them. `chart_library`
// is Chart.js's UMD bundle (tests pass a stand-in). Throws std::runtime_error when the
// library or one of the page's files cannot be inlined safely (see inlinable).
std::string render_history_page(const std::vector<stored_run>& runs, const std::vector<benchmark_history>& series,
                                const history_page_request& request, std::string_view chart_library);

// The evidence the compare page draws under each regression and improvement. With history
// set, each row's chart is its entry in *history (rows without one get a note), base_run and
// test_run marked on it; otherwise base and test are the inputs as read (with their
// repetitions), and each row gets a strip chart of both. Pointers: nothing is copied.
struct compare_page_evidence {
    const comparison_input* base = nullptr;
    const comparison_input* test = nullptr;
    const std::vector<benchmark_history>* history = nullptr;
    std::int64_t base_run = 0, test_run = 0;  // history run ids (newest_run_labelled)
};

// The page of `contend compare --html`. Throws as render_history_page.
std::string render_compare_page(const comparison& c, const std::string& repro_command,
                                const compare_page_evidence& evidence, std::string_view chart_library);

}  // namespace contend::lab
