// CPU placement: the CPUs this process may run on, CPU lists in their text form, the CPUs
// each worker of a cell runs on under --pin, and pinning a thread there. The harness places
// its workers with it (harness.hpp), and the co-tenant puts a cell on one CPU (cotenant.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace contend::lab {

// The CPUs this process may run on, ascending.
std::vector<int> allowed_cpus();
// "0-3,8" <-> {0,1,2,3,8}. parse_cpu_list throws std::invalid_argument on bad input.
std::vector<int> parse_cpu_list(const std::string& text);
std::string format_cpu_list(const std::vector<int>& cpus);

// The CPU set each worker must run on under `pin` (empty sets: not pinned).
// Throws std::invalid_argument for an unknown pin mode or a malformed list.
std::vector<std::vector<int>> placement(const std::string& pin, std::int32_t workers);

// Pins the calling thread to `cpus` and reads the mask back. Returns "" when the mask
// took (or `cpus` is empty: not pinned), otherwise what went wrong.
std::string pin_self(const std::vector<int>& cpus);

}  // namespace contend::lab
