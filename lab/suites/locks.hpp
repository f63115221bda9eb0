// The locks of the counter and hold suites: one list, run either way (the counter suite
// runs each lock around a plain increment, the hold suite around 0 to 200 us of work).
// Internal to the lab.
#pragma once

#include <vector>

#include "harness/workload.hpp"

namespace contend::lab {

// Appends every lock: ours, the platform's and the peers' found at build time, in the
// order the suites list them. hold = false: one counter contender per lock; true: the
// hold suite's points (append_lock in workload.hpp).
void append_lock_contenders(std::vector<contender>& out, bool hold);

}  // namespace contend::lab
