// Other projects' thread pools for the pool suite: oneTBB and Boost.Asio, each found at
// build time (lab/CMakeLists.txt); a missing one only removes its rows.
#pragma once

#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

// Appends the pool suite's rows of every pool peer compiled in.
void append_peer_pools(std::vector<contender>& out);

}  // namespace contend::lab
