// The history's word on a comparison: did a change point of a benchmark's series fall
// between the baseline's run and the test's run? The .NET performance lab files a regression
// only when one does (its reports' "Edge Detector" column; docs/references.md,
// dotnet-perf-report), and for a good reason this lab measured: the repetitions of one run
// share that run's placement, frequency and neighbours, so the U test on them sees the spread
// within a run, never the spread between runs. A contended or oversubscribed cell on a
// shared machine can move by 2x from one run to the next with a tight spread inside each run,
// and the U test then calls that move significant. A series of runs does see it.
//
// Internal to the lab (namespace contend::lab).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/change_points.hpp"
#include "store/history.hpp"

namespace contend::lab {

enum class edge_state {
    change,  // a change point of the series falls between the two runs
    no_change,  // the series has enough runs on each side, and none does
    too_few_runs,  // fewer than min_segment runs of the series at or before the older run, or
                   // at or after the newer: no change point could be found there
};
const char* to_string(edge_state s) noexcept;

struct edge_check {
    edge_state state = edge_state::too_few_runs;
    std::string detail;  // in words: "r5 -> r6: 5.02 -> 24.5 ns", "3 runs before, 1 after"
};

// By benchmark name: what the history says between runs `base_run` and `test_run` (ids in
// `runs`; either may be the older). A benchmark the two runs do not both hold validly is
// absent. Change points are found as `contend history --changes` finds them (history_series
// with `options`).
using edge_evidence = std::unordered_map<std::string, edge_check>;
edge_evidence edges_between(const std::vector<stored_run>& runs, std::int64_t base_run, std::int64_t test_run,
                            const change_options& options);

}  // namespace contend::lab
