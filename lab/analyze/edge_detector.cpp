#include "analyze/edge_detector.hpp"

#include <algorithm>

#include "analyze/history_series.hpp"
#include "results/statistics.hpp"
#include "text/numbers.hpp"

namespace contend::lab {

const char* to_string(edge_state s) noexcept {
    switch (s) {
        case edge_state::change:
            return "change";
        case edge_state::no_change:
            return "no change";
        case edge_state::too_few_runs:
            return "too few runs";
    }
    return "?";
}

edge_evidence edges_between(const std::vector<stored_run>& runs, std::int64_t base_run, std::int64_t test_run,
                            const change_options& options) {
    edge_evidence out;
    for (const benchmark_history& h : history_series(runs, "", options)) {
        const auto at = [&](std::int64_t id) {
            return static_cast<std::size_t>(std::find(h.run_ids.begin(), h.run_ids.end(), id) - h.run_ids.begin());
        };
        std::size_t older = at(base_run), newer = at(test_run);
        if (older == h.run_ids.size() || newer == h.run_ids.size()) continue;  // not in both runs
        if (older > newer) std::swap(older, newer);
        edge_check check;
        // A change point at index k starts a segment at point k: between the two runs when
        // older < k <= newer. history_series only finds one with min_segment points a side.
        for (const series_change& c : h.changes) {
            if (c.point.index > older && c.point.index <= newer) {
                check.state = edge_state::change;
                check.detail = c.label_before + " -> " + c.label_after + ": " + ns_text(c.point.before_mean) + " -> " +
                               ns_text(c.point.after_mean) + " ns";
                break;
            }
        }
        if (check.state != edge_state::change) {
            const std::size_t before = older + 1, after = h.run_ids.size() - newer;
            if (before >= options.min_segment && after >= options.min_segment) {
                check.state = edge_state::no_change;
                check.detail = "no change point in " + std::to_string(h.run_ids.size()) + " runs";
            } else {
                check.state = edge_state::too_few_runs;
                check.detail = std::to_string(before) + " runs up to the older, " + std::to_string(after) +
                               " from the newer; " + std::to_string(options.min_segment) + " needed a side";
            }
        }
        out.emplace(h.name, std::move(check));
    }
    return out;
}

}  // namespace contend::lab
