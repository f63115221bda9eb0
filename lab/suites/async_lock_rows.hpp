// The sync suite's pool rows (async_lock_rows.cpp): tasks sharing a contend::async_mutex
// on a 2-worker pool, against the same tasks holding a contend::mutex across blocking waits.
#pragma once

#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

void append_async_lock_rows(std::vector<contender>& out);

}  // namespace contend::lab
