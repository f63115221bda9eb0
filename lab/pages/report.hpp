// `contend report`: one self-contained HTML page of results. For each run shown, the machine
// it ran on; then, per suite, a section: a baseline picker and a checkbox per contender, a
// main chart of each contender's median ns per operation as a multiple of the baseline's at
// the same x (or absolute), two small charts of CPU ns per operation and of the least-served
// worker's share beside it, all against workers or the suite's parameter, and the table of
// every cell below, invalid cells included (listed with their status, never plotted).
//
// The view is read from the address's fragment, so a link reproduces it:
//   report.html#baseline=std_mutex&show=contend_mutex,std_mutex,tbb_spin_mutex
// baseline: a contender's name, or empty for absolute ns/op; show: the contenders drawn.
// Names are encoded as encodeURIComponent writes them (a comma in a name is %2C). Each section
// applies what it has: an unknown baseline gives its default (std_mutex when the suite ran it,
// else its first contender; absolute when it has only one), a list of none of its contenders
// shows them all. A change made on the page rewrites the fragment.
//
// The page needs nothing from the network: its script and style (lab/pages/assets/) and the
// charting library (Chart.js, installed by scripts/setup.sh under lab/pages/node_modules)
// are compiled into the binary and inlined (pages/assets.hpp), and the figures travel
// inside the page as JSON. Names from results files reach the page as escaped text only.
// The page records on <body> what its script did, so a headless browser can check it:
//   data-charts-expected        main charts the page has data for (one per suite section)
//   data-charts-rendered        main charts constructed whose canvas has a size and painted pixels
//   data-side-charts-expected   small charts it has data for: per section one of CPU ns/op, and
//                               one of the least-served share when a cell measured it
//   data-side-charts-rendered   small charts constructed whose canvas has painted pixels
//   data-lock-charts-expected   wait histograms of profiled locks it has data for
//                               (pages/lock_profile_page.hpp: a profiled `contend run` row's)
//   data-lock-charts-rendered   of those, the ones constructed whose canvas has painted pixels
//   data-points-plotted         points on the main charts as drawn now, all sections: medians
//                               of the shown contenders, or their ratios with a baseline
//   data-ratio-points-plotted   of those, ratios to a baseline (0 in absolute ns/op)
//   data-baseline               the first section's baseline as applied ("": absolute ns/op)
//   data-shown                  the first section's shown contenders, in its order, encoded
//                               and joined as the fragment's show= list
//   data-errors                 uncaught errors, unhandled rejections and console.error calls
// The script sets them when it has drawn and again after every change of view.
// Internal to the lab (namespace contend::lab).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pages/page_parts.hpp"
#include "results/results.hpp"
#include "store/history.hpp"

namespace contend::lab {

// One run as the page shows it.
struct report_source {
    std::string origin;  // where it came from: "history run 7", or a JSON file's path
    run_result run;
};

// What `contend report` reads: a JSON file written by `contend bench --json` when
// json_path is set, otherwise the history at db_path (run_id: that run only).
struct report_request {
    std::string db_path = ".contend/history.db";
    std::string json_path;
    std::optional<std::int64_t> run_id;
    // Ends reading the history or the JSON file at a stop signal (history_store's `stop`,
    // read_input_file's and run_from_json's): interrupted is thrown; null: never.
    const std::atomic<int>* stop = nullptr;
};

// The runs a request names. Throws std::runtime_error, saying what is wrong, for a missing
// history file (never created here), an empty history, an unknown run, an unreadable or
// malformed JSON file, or a selection with no cells at all.
std::vector<report_source> load_report_sources(const report_request& request);

// For each suite in `history`, the newest run that contains it, keeping only the cells of
// the suites it is the newest run of; oldest first. One page then covers every suite ever
// run, each with its latest figures.
std::vector<report_source> newest_run_per_suite(const std::vector<stored_run>& history);

// What a suite's chart puts on its x axis: "workers" when the cells have more than one
// worker count, otherwise the parameter with the most distinct values (the first such
// in row-name order), otherwise "workers" again. `values` are the distinct values, in
// numeric order when all are numbers, otherwise in order of first appearance.
struct chart_axis {
    std::string key;
    std::vector<std::string> values;
};
chart_axis choose_x_axis(const std::vector<const cell_result*>& cells);

// The page. `chart_library` is the JavaScript of Chart.js's UMD bundle, inlined as is
// (tests pass a stand-in); the page's own script and style are the ones compiled in.
// Deterministic: the same input gives the same bytes. Throws std::runtime_error if the
// library or one of the page's files could not be inlined safely (see inlinable), which a
// new library version, or an edit of lab/pages/assets/, would have to be checked for.
std::string render_report(const std::vector<report_source>& sources, std::string_view chart_library);

// inlinable, chart_library_bundle and the escaping helpers: pages/page_parts.hpp.

}  // namespace contend::lab
