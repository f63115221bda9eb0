// One of the pool's service threads that starts only when first needed: the timer queue's
// and the wait thread's (a pool that never sets a timer or registers a wait has neither).
// Internal.
//
// What it does not hold is the thread's wake-up and stop flag: each owner keeps them beside
// the state they guard (the timer queue's heap lock and condition variable; the wait
// thread's inbox, which outlives it in the records' shared state). The owner's loop ends when
// its flag is set; stop() then waits for it.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "pool/os_thread.hpp"

namespace contend::internal {

class service_thread {
public:
    // `body` runs on the thread (small stack, named `name`) once it starts.
    service_thread(std::string name, std::function<void()> body) : name_(std::move(name)), body_(std::move(body)) {}
    ~service_thread() = default;  // joins, as stop(): the owner has told the body to end
    service_thread(const service_thread&) = delete;
    service_thread& operator=(const service_thread&) = delete;

    // Starts the thread unless it runs already. The owner calls it under its lock, having
    // seen that it is not stopping, so that no start comes with or after stop(). Throws
    // std::system_error if the thread cannot start; a later call tries again.
    void start_once() {
        if (!thread_.joinable()) thread_ = os_thread(name_, service_thread_stack, body_);
    }

    // Waits for the thread to end, after the owner told its body to (idempotent; nothing to
    // wait for if it never started).
    void stop() { thread_.join(); }

private:
    const std::string name_;
    const std::function<void()> body_;
    os_thread thread_;
};

}  // namespace contend::internal
