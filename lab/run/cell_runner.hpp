// Runs a cell in a child process, so that a contender that never returns (a deadlock, a
// holder descheduled for good, a worker that cannot poll its deadline from inside lock())
// costs one cell, not the run: the parent kills a child that reports no finished
// repetition within the deadline plus a grace period, records the cell as timed out, and
// goes on. A child that crashes is recorded as crashed.
//
// The child is this same executable, started as `<exe> __cell`. It receives its settings as
// one JSON line on its standard input (one struct, one channel: no argument list, no
// environment variable), prints one line "rep" per finished repetition and, at the end,
// one line "cell <json>". It dies with its parent (PR_SET_PDEATHSIG), so a parent killed
// outright leaves no child running.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "measure/harness.hpp"
#include "results/results.hpp"

namespace contend::lab {

// Everything a cell's process needs.
struct cell_settings {
    std::string suite;
    std::string contender;  // the contender's id
    std::int32_t workers = 1;
    harness_options harness;  // all but on_repetition, which the child sets itself
    double burn_per_us = 0;  // locked_work's rate; 0: the child measures its own
    std::int64_t parent_pid = 0;  // the child exits at once if its parent is not this one
};

nlohmann::json settings_to_json(const cell_settings& s);
// Throws std::runtime_error naming a missing or mistyped field.
cell_settings settings_from_json(const nlohmann::json& j);

// Runs the cell in a child of `executable`. Returns nothing when `stop` (may be null) turned
// non-zero meanwhile: the child is then killed and the cell abandoned.
std::optional<cell_result> run_cell_in_child(const std::string& executable, const cell_settings& settings,
                                             const std::atomic<int>* stop = nullptr);

// The child's side: reads the settings from standard input, runs the cell in this process
// and writes the protocol to standard output. Returns the process exit code.
int cell_child_main();

}  // namespace contend::lab
