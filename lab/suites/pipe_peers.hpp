// Other projects' byte or message channels for the pipe suite: moodycamel's
// BlockingReaderWriterQueue, found at build time (lab/CMakeLists.txt); a missing one only
// removes its rows.
#pragma once

#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

// Appends the pipe suite's rows of every peer transport compiled in.
void append_peer_pipes(std::vector<contender>& out);

}  // namespace contend::lab
