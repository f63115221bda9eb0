// `contend run`: the runs of a program under one lock as one row of the lab's result model.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "results/results.hpp"
#include "run/preload_run.hpp"
#include "run/profile_table.hpp"

namespace contend::lab {

// One run of the program under one lock.
struct program_run {
    program_status status;
    double wall_ns = 0;
    std::optional<program_profile> profile;  // none: not profiled, or no profile was read
    std::size_t processes_lost = 0;  // with --profile: processes whose profile is missing
    // Why the run did not run on the lock asked for ("" when it did): no process loaded the
    // library, or one took another lock.
    std::string not_interposed;
};

// The runs of one lock as one cell of the lab's model (docs/lab.md, "contend run"): suite
// "run", contender the lock, params program:<name>/args:<hash> (and profile:on when
// profiled), 1 worker, operation "run", each run's wall time a sample, status "ok" when every
// run exited 0 (else the first failure's; "not_interposed" for a run that did not run on the
// lock), the profile's figures as metrics (each the median over the runs that were profiled;
// processes_lost the largest).
struct run_record_input {
    std::vector<std::string> argv;
    std::string lock;
    bool profiled = false;
    std::vector<program_run> runs;  // at least one
};
cell_result run_cell(const run_record_input& input);

// The params of a program: `program:` its file name with every byte outside [A-Za-z0-9._+-]
// replaced by '_' (at most 64 bytes; "_" when nothing is left), `args:` 12 hex digits of a
// hash of the arguments after it (FNV-1a 64 over each argument's length and bytes).
param_list program_params(const std::vector<std::string>& argv);

}  // namespace contend::lab
