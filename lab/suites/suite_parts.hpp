// The suites, each built in its own file; registry.cpp lists them in --list's order.
// Internal to the lab.
#pragma once

#include "suites/suites.hpp"

namespace contend::lab {

// counter.cpp: the main table of the sleeping-spinlock study, every contender incrementing one shared counter.
suite make_counter_suite();
// hold.cpp: the counter suite's locks (locks.hpp) with 0 to 200 us of work inside.
suite make_hold_suite();
// striped.cpp: the same locks as a table of 1 to 65,536 stripes, each operation on a random one.
suite make_striped_suite();

// wait_policy.cpp: one read-before-exchange lock, only the loser's wait changes.
suite make_wait_policy_suite();
// probes.cpp: the sweep of read-only probes before a sleeping lock's nanosleep.
suite make_probes_suite();

// sharing.cpp: private counters packed or padded against one shared atomic.
suite make_sharing_suite();
// tax.cpp: the synchronization tax, local work with a shared increment at a controlled ratio.
suite make_tax_suite();

// monitor.cpp: the Monitor scenarios of the dotnet/runtime thin-lock PR for thin_lock, monitor:: and the mutexes.
suite make_monitor_suite();

// cond.cpp: condition-variable handoffs, workers taking turns under one mutex and condition variable.
suite make_cond_suite();
// sync.cpp: semaphores, barriers and call_once against the standard library's and the platform's.
suite make_sync_suite();
// rw.cpp: reader-writer locks over a shared table of 64 lines, at 0 to 100 % reads.
suite make_rw_suite();
// selftest.cpp: the harness's failure modes, for its tests (hidden from --list).
suite make_selftest_suite();

}  // namespace contend::lab
