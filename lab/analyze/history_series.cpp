#include "analyze/history_series.hpp"

#include <fnmatch.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace contend::lab {

namespace {

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

std::string run_name(const stored_run& r) {
    return r.run.context.label.empty() ? "run " + std::to_string(r.id) : r.run.context.label;
}

}  // namespace

comparison_input comparison_input_from_history(const history_store& store, const std::string& db_path,
                                               const std::string& label) {
    return comparison_input_from_runs(store.stored_runs(), db_path, label);
}

comparison_input comparison_input_from_runs(const std::vector<stored_run>& runs, const std::string& db_path,
                                            const std::string& label) {
    const std::string source = db_path + " label " + label;
    const stored_run* newest = nullptr;
    for (const auto& r : runs)
        if (r.run.context.label == label) newest = &r;  // oldest first: the last one is the newest
    if (!newest) throw input_error(source, "", "the history " + db_path + " holds no run labelled '" + label + "'");

    comparison_input in;
    in.source = source;
    in.format = "contend-lab";
    const machine_context& c = newest->run.context;
    in.label = c.label;
    in.date = c.date;
    in.cpu_model = c.cpu_model;
    in.version = c.version;
    std::set<std::string> seen;
    for (const auto& cell : newest->run.cells) {
        const std::string name = cell.name();
        // The same refusal as the JSON reader's: two cells of one name would be two series
        // with nothing to tell which one to compare.
        if (!seen.insert(name).second) throw input_error(input_error_kind::duplicate, source, name, "appears twice");
        if (!cell.valid()) {
            in.skipped.push_back(
                {name, cell.detail.empty() ? cell.status : cell.status + ": " + cell.detail, cell.status});
            continue;
        }
        for (const double v : cell.ns_per_op)
            if (!positive_finite(v))
                throw input_error(std::isfinite(v) ? input_error_kind::not_positive : input_error_kind::not_finite,
                                  source, name, "a sample of " + std::to_string(v) + " ns");
        if (!positive_finite(cell.median_ns))
            throw input_error(
                std::isfinite(cell.median_ns) ? input_error_kind::not_positive : input_error_kind::not_finite, source,
                name, "a median of " + std::to_string(cell.median_ns) + " ns");
        benchmark_series s;
        s.name = name;
        s.samples_ns = cell.ns_per_op;
        s.median_ns = cell.median_ns;
        if (s.samples_ns.empty()) s.note = "no samples: the run's median";
        s.flagged_modal = cell.modal;
        s.others_cpu_share = cell.others_cpu_share;
        in.benchmarks.push_back(std::move(s));
    }
    return in;
}

std::vector<benchmark_history> history_series(const std::vector<stored_run>& runs, const std::string& name_glob,
                                              const change_options& options) {
    std::vector<benchmark_history> order;
    std::map<std::string, std::size_t> index_of;
    for (const auto& r : runs) {
        std::set<std::string> in_this_run;
        for (const auto& cell : r.run.cells) {
            if (!cell.valid() || !positive_finite(cell.median_ns)) continue;
            const std::string name = cell.name();
            if (!name_glob.empty() && fnmatch(name_glob.c_str(), name.c_str(), 0) != 0) continue;
            if (!in_this_run.insert(name).second) continue;  // one point per run: the first cell
            auto [it, added] = index_of.try_emplace(name, order.size());
            if (added) order.push_back({name, {}, {}, {}, {}, {}, {}, {}});
            benchmark_history& s = order[it->second];
            if (cell.shared()) {
                s.shared_runs.push_back(run_name(r));
                continue;
            }
            s.run_ids.push_back(r.id);
            s.run_names.push_back(run_name(r));
            s.medians.push_back(cell.median_ns);
            // A chart draws the spread only where it is a range of times.
            const bool spread = std::isfinite(cell.p25_ns) && std::isfinite(cell.p75_ns) && cell.p25_ns > 0;
            s.p25.push_back(spread ? cell.p25_ns : std::numeric_limits<double>::quiet_NaN());
            s.p75.push_back(spread ? cell.p75_ns : std::numeric_limits<double>::quiet_NaN());
        }
    }
    for (auto& s : order) {
        for (const change_point& p : find_change_points(s.medians, options)) {
            const std::size_t before = p.index - 1, after = p.index;
            s.changes.push_back(
                {s.name, p, s.run_names[before], s.run_names[after], s.run_ids[before], s.run_ids[after]});
        }
    }
    return order;
}

std::vector<series_change> history_changes(const std::vector<stored_run>& runs, const std::string& name_glob,
                                           const change_options& options) {
    std::vector<series_change> changes;
    for (auto& s : history_series(runs, name_glob, options))
        for (auto& c : s.changes) changes.push_back(std::move(c));
    return changes;
}

std::int64_t newest_run_labelled(const std::vector<stored_run>& runs, const std::string& label) {
    std::int64_t id = 0;
    for (const auto& r : runs)
        if (r.run.context.label == label) id = r.id;  // oldest first: the last one is the newest
    return id;
}

}  // namespace contend::lab
