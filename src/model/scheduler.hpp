// The scheduler of one model execution (the child process of model::explore). Internal to
// src/model/ and the model wait backend (src/platform/wait_model.cpp).
//
// Model threads are OS threads that run one at a time: the running one holds the baton and,
// at every scheduling point, asks the strategy who runs next and hands the baton over (a
// futex per thread). Only the baton holder touches the scheduler's state, so it needs no lock
// of its own: each hand-over is a release store read with acquire.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "contend/internal/model_atomic.hpp"

namespace contend::model::hooks {

// The model wait: blocks the calling model thread on `address` if `still_blocks()` holds,
// checked in the same step (as the kernel checks a futex word under its lock). Returns true
// if it ended by timing out. The strategy decides when a timed wait times out.
bool wait(const void* address, bool (*still_blocks)(const void* word, std::uint32_t expected), std::uint32_t expected,
          std::chrono::steady_clock::time_point until) noexcept;
void wake(const void* address, bool all) noexcept;

}  // namespace contend::model::hooks

namespace contend::model::detail {

// Runs `body` as model thread 0 of a new execution under the strategy `spec`, in this (child)
// process, writes the report to `report_fd` and ends the process. Never returns. The report is
// text, one item per line: "status ok|fail", "steps N", "diverged 0|1", "message ...", one
// "choice CURRENT RUNNABLE YIELDED CHOSEN DEFAULT E1,E2t,..." per point with a choice
// (t marks a timed waiter), then "schedule"
// and the last steps, as a person reads them.
[[noreturn]] void run_execution(const std::string& spec, std::uint64_t max_steps, const std::function<void()>& body,
                                int report_fd);

// The mutation that the next executions run with (empty: none). Set before forking.
void set_mutation(const std::string& name);

}  // namespace contend::model::detail
