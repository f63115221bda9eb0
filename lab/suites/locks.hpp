// The locks of the counter, hold and striped suites: one list, run each way (the counter
// suite runs each lock around a plain increment, the hold suite around 0 to 200 us of
// work, the striped suite as a table of many locks).
// Internal to the lab.
#pragma once

#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

// Appends every lock: ours, the platform's and the peers' found at build time, in the
// order the suites list them, as `use` says (append_lock in workload.hpp).
void append_lock_contenders(std::vector<contender>& out, lock_use use);

}  // namespace contend::lab
