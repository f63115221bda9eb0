// The peers: other projects' locks, measured beside ours. Which ones exist is decided at
// build time (lab/CMakeLists.txt says which it found); the library never links them.
#pragma once

#include <string>
#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

// Appends the lock contenders of every peer found at build time, as the counter suite
// runs them, as the hold suite does or as the striped suite does (`use`).
void append_peer_locks(std::vector<contender>& out, lock_use use = lock_use::counter);

// Concurrency Kit's spinlocks (suites/ck_peers.cpp, compiled only when CK is found).
void append_ck_locks(std::vector<contender>& out, lock_use use);

// "absl tbb ck", the peers compiled in (for the run's context and `--list`).
std::string peers_found();

}  // namespace contend::lab
