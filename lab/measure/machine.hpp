// Reads the machine context recorded with every run (see results.hpp).
#pragma once

#include <string>

#include "results/results.hpp"

namespace contend::lab {

// `label` empty: the project's `git describe`, when the source tree is a git checkout.
machine_context read_machine_context(const std::string& label, const std::string& cpu_list);

// The build type and flags the lab was compiled with.
std::string read_build_flags();

// Median of `samples` 1 ns nanosleep requests, in microseconds: what a "sleeping" lock
// really sleeps on this machine (about 90 us with the default 50 us timer slack).
double measure_nanosleep_1ns_us(int samples = 50);

}  // namespace contend::lab
