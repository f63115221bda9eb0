// The rw suite's peers: other projects' reader-writer locks, each found at build time as the
// lock suites' peers are (lab/CMakeLists.txt); a peer that is missing only removes its rows.
// Internal to the lab.
#pragma once

#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

// Appends the rw points (rw_workload.hpp) of every reader-writer lock of a peer found at
// build time: absl::Mutex's reader locks, oneTBB's spin_rw_mutex and queuing_rw_mutex,
// Concurrency Kit's ck_rwlock.
void append_rw_peer_locks(std::vector<contender>& out);

// Concurrency Kit's ck_rwlock (suites/ck_rw_peers.cpp, compiled only when CK is found).
void append_ck_rw_locks(std::vector<contender>& out);

}  // namespace contend::lab
