// The history as the regression reporter reads it: one run of a label as an input of
// `contend compare --db`, and each benchmark's medians over the runs as the series in which
// `contend history --changes` looks for change points.
//
// Internal to the lab (namespace contend::lab).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/change_points.hpp"
#include "analyze/inputs.hpp"
#include "store/history.hpp"

namespace contend::lab {

// The newest run of `store` whose label is `label`, read as the lab's JSON reader reads a
// run's file: each valid cell one benchmark_series (its name, its ns_per_op as the samples,
// its median_ns), each invalid cell listed in `skipped`. The newest, because a label given
// again (a rerun of the same commit) is meant to replace what it measured before.
// source is "<db_path> label <label>"; db_path only names the history in messages.
// Throws input_error naming the history and the label when no run has that label, and when
// a valid cell holds a time that is not a positive finite number (as the JSON reader does).
comparison_input comparison_input_from_history(const history_store& store, const std::string& db_path,
                                               const std::string& label);
// The same from runs already read (stored_runs(), oldest first): a caller that reads the
// history once gets both labels, and anything else it derives, from one snapshot, which a
// second read could not promise while another process appends.
comparison_input comparison_input_from_runs(const std::vector<stored_run>& runs, const std::string& db_path,
                                            const std::string& label);

// One change point of one benchmark's series over the history.
struct series_change {
    std::string name;  // the benchmark (the cell's row name)
    change_point point;  // point.index counts the runs in the benchmark's series, not all runs
    // The runs that bracket it: the last one before the change and the first one after, each
    // named by its label, or "run <id>" when it has none.
    std::string label_before, label_after;
    std::int64_t run_before = 0, run_after = 0;
};

// For each benchmark whose name matches `name_glob` (fnmatch's rules, '*' crossing '/' too, so
// "counter/*" takes a whole suite; "" matches every name),
// in order of first appearance over `runs`: its series of median_ns over the runs that hold
// a valid cell of that name, in the order of `runs` (oldest first, as stored_runs() returns
// them), and the change points find_change_points finds in it. A run that holds no valid
// cell of a benchmark is left out of that benchmark's series rather than counted as a gap: a
// timed-out cell says nothing about the level. A valid cell whose median is not a positive
// finite number is left out too (no writer stores one; it would only make the series
// unreadable), and so is a cell measured beside a co-tenant (cell_result::shared: other
// processes took more than 5 % of its CPUs), whose level is not the machine's alone. Sorted
// by benchmark (first appearance), then by index.
std::vector<series_change> history_changes(const std::vector<stored_run>& runs, const std::string& name_glob,
                                           const change_options& options);

// One benchmark's series over the history, as history_changes reads it (same runs kept and
// left out, same order), with what a chart of it needs: per point the run it came from, that
// run's name (label, or "run <id>"), the median and the p25 and p75 of the cell's
// repetitions (NaN when the cell stored none that is finite), and the change points found.
struct benchmark_history {
    std::string name;
    std::vector<std::int64_t> run_ids;
    std::vector<std::string> run_names;
    std::vector<double> medians, p25, p75;
    std::vector<series_change> changes;  // sorted by index
    // The runs whose cell of this benchmark was measured beside a co-tenant
    // (cell_result::shared), left out of the series: their figures are not the machine's
    // alone, so no change is found at them.
    std::vector<std::string> shared_runs;
};

// Every benchmark matching `name_glob` (as history_changes), in order of first appearance
// over `runs`. history_changes is this with the changes strung together, so the text of
// `contend history --changes` and the page of `contend history --html` agree point for point.
std::vector<benchmark_history> history_series(const std::vector<stored_run>& runs, const std::string& name_glob,
                                              const change_options& options);

// The id of the newest run of `runs` labelled `label` (the run comparison_input_from_history
// reads), or 0 when none is. Ids start at 1.
std::int64_t newest_run_labelled(const std::vector<stored_run>& runs, const std::string& label);

}  // namespace contend::lab
