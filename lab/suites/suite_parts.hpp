// The suites beyond the counter table, each built in its own file (suites.cpp registers
// them). Internal to the lab.
#pragma once

#include "suites/suites.hpp"

namespace contend::lab {

// wait_policy_suites.cpp: one read-before-exchange lock, only the loser's wait changes;
// and the sweep of read-only probes before a sleeping lock's nanosleep.
suite make_wait_policy_suite();
suite make_probes_suite();

// sharing_suites.cpp: private counters packed or padded against one shared atomic; and
// the synchronization tax, local work with a shared increment at a controlled ratio.
suite make_sharing_suite();
suite make_tax_suite();

// monitor_suite.cpp: seed 000's Monitor scenarios for thin_lock, monitor:: and the mutexes.
suite make_monitor_suite();

}  // namespace contend::lab
