// The table that answers "which lock for my program": per parameter point and worker count
// (a row), each contender's rate as a multiple of a baseline contender's (a column each),
// coloured above and below 1, the best of each row marked, the spread of its repetitions
// beside it. `contend report` draws it for the programs suite, against glibc. Internal to the
// lab (namespace contend::lab).
#pragma once

#include <string>
#include <vector>

#include "results/results.hpp"

namespace contend::lab {

// The ratio of one cell: baseline's median ns per unit over the cell's (above 1: faster than
// the baseline), and its spread: half the cell's p25-p75 range over its median, so that
// "1.10 ±4 %" reads as the ratio give or take its quartiles. NaN when either cell is not
// valid or has no median.
struct rate_ratio {
    double ratio;
    double spread;
};
rate_ratio ratio_to(const cell_result& cell, const cell_result& baseline);

// The table as HTML (a <table class="ratios">): rows in order of first appearance,
// contenders in order of first appearance with the baseline first. A cell that is not valid
// shows its status (its reason in the title); a row without a valid baseline cell says so.
// Empty when no cell is the baseline's.
std::string ratio_table_html(const std::vector<const cell_result*>& cells, const std::string& baseline);

}  // namespace contend::lab
