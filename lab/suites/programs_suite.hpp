// The programs suite (programs.cpp): real programs run under each lock that `contend run`
// offers, each cell measured by the suite itself (contender::measure_cell). Internal to the lab.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "suites/suites.hpp"

namespace contend::lab {

// programs.cpp: the suite, registered in registry.cpp.
suite make_programs_suite();

// What the suite reads from a program's output to check a run: the text that must be the
// same in the plain run and in each run under a lock (exposed for the lab's tests).
// sysbench: the "total number of events" line. db_bench: each benchmark's name, operations
// and keys found, without its timings and rates.
std::string sysbench_outcome(std::string_view output);
std::string db_bench_outcome(std::string_view output);

}  // namespace contend::lab
