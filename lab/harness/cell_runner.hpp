// Runs a cell in a child process, so that a contender that never returns (a deadlock, a
// holder descheduled for good, a worker that cannot poll its deadline from inside lock())
// costs one cell, not the run: the parent kills a child that reports no finished
// repetition within the deadline plus a grace period, records the cell as timed out, and
// goes on. A child that crashes is recorded as crashed.
//
// The child is this same executable, started as `<exe> __cell ...`; it prints one line
// "rep" per finished repetition and, at the end, one line "cell <json>".
#pragma once

#include <string>

#include "harness/harness.hpp"
#include "results/results.hpp"

namespace contend::lab {

cell_result run_cell_in_child(const std::string& executable, const std::string& suite, const std::string& contender,
                              std::int32_t workers, const harness_options& options);

// The child's side: runs the cell in this process and writes the protocol to stdout.
// Returns the process exit code.
int cell_child_main(const std::string& suite, const std::string& contender, std::int32_t workers,
                    const harness_options& options);

}  // namespace contend::lab
