// Interleaved repetitions: a suite whose rows measure something that drifts over seconds
// (whole servers on a shared VM, whose throughput moves between states for tens of seconds
// at a time) runs its cells in rounds, one repetition of every row per round, so that the
// rows it compares sample the same stretches of time instead of a row's repetitions all
// falling in one stretch and the next row's in another. Each round's repetition is a cell
// of one repetition (run as any cell is, in its own process); merge_rounds makes the row's
// cell of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "measure/harness.hpp"
#include "results/results.hpp"

namespace contend::lab {

// The cell of one row from its rounds, in order (at least one): the samples of every
// valid round, their median and quartiles, the median of each per-repetition figure (CPU
// per operation, fairness shares, and every metric by name, NaNs left out). The shares only
// when every valid round measured them; otherwise the first round's reason why not. A round that
// is not valid ends the row there: the cell takes its status, detail and metrics (the
// failed repetition's figures), and its repetitions are the valid rounds before it.
cell_result merge_rounds(const std::vector<cell_result>& rounds);

// Runs `rows` rows in rounds: measure(row, round, one) runs one repetition of a row (`one`
// is `harness` with a single repetition, and one.round the round) and returns its cell, or
// nothing when the run is being stopped. Even rounds take the rows in order, odd rounds in
// reverse (ABBA), so that no row is always first after, or last before, another. Rounds go
// on until each row has harness.repetitions, or, after harness.min_repetitions, until every
// row's samples have settled (interquartile range at most spread_to_stop times the median)
// or the rounds have lasted time_to_stop_s per row: the harness's rule for one cell
// (run_cell_in_process), applied to all rows at once. A row whose round is not valid is not
// run again. Returns the merged cell of every row that finished at least one round, in row
// order, and whether measure() said stop.
struct rounds_outcome {
    std::vector<cell_result> cells;
    bool stopped = false;
};
rounds_outcome run_rounds(std::size_t rows, const harness_options& harness,
                          const std::function<std::optional<cell_result>(std::size_t row, std::int32_t round,
                                                                         const harness_options& one)>& measure);

}  // namespace contend::lab
