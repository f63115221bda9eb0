// Where a run's results go, as `contend bench` (run/bench_session) and `contend run`
// (run/program_session) both write them: the checks made before anything runs, and each
// output written on its own, so that one that fails costs none of the others.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "results/results.hpp"
#include "store/output_file.hpp"

namespace contend::lab {

// The outputs of one run.
struct results_outputs {
    std::optional<std::string> json_path;  // none: no JSON
    std::string csv_path;  // "": none
    std::string db_path;  // "": no history
    bool no_history = false;  // the history is then an input: no output may land on it
    // Ends check_results_outputs' check of the history (a wait for its lock); null: never.
    const std::atomic<int>* stop = nullptr;
};

// What write_results did: one line per output written ("PATH (--json: JSON)"), one message
// per output that could not be.
struct results_written {
    std::vector<std::string> wrote, failed;
};

// Every output path, that no output is another output, the history or one of `inputs`, and
// that the history can take the run: throws std::invalid_argument (or output_error) naming the
// option at fault, before anything runs. Creates nothing.
void check_results_outputs(const results_outputs& outputs, std::vector<named_path> inputs = {});
// Writes each output on its own, so that one that fails costs none of the others. `stop` (may
// be null: never), once it holds a signal's number, stops the writing: the output being
// written and those after it are not (a file keeps its old bytes, the history stores
// nothing, a wait for the history's lock ends) and each is listed as failed, "stopped by
// SIG...". Given, it is also the flag every output file looks at (stop_outputs_on).
results_written write_results(const results_outputs& outputs, const run_result& run,
                              const std::atomic<int>* stop = nullptr);

}  // namespace contend::lab
