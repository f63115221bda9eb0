// The pace of a workload's wait for its own threads at the end of a repetition (the pool
// suite's drain, the pipe suite's wait for its reader): spin a little, then yield, then
// sleep 20 us at a time. Internal to the lab.
//
// A yield that takes longer than 375 us went to a thread that is not ours for a scheduler
// slice (a co-tenant at normal priority on this CPU: Linux moves a yielder's deadline a slice
// later, so each further yield hands it another): from then on this wait sleeps. Yielding
// 1,024 times there made the end of each repetition of the pipe's one-CPU row beside a busy
// loop cost tens of milliseconds. The same bound as the library's polls
// (platform/spin_wait.hpp, stranger_yield).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "contend/cpu_relax.hpp"

namespace contend::lab {

class end_wait {
public:
    void step() {
        if (spins_ < 64) {
            ++spins_;
            contend::cpu_relax();
        } else if (spins_ < 1024 && !slept_) {
            ++spins_;
            const auto t0 = std::chrono::steady_clock::now();
            std::this_thread::yield();
            if (std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(375)) slept_ = true;
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

private:
    std::uint32_t spins_ = 0;
    bool slept_ = false;
};

}  // namespace contend::lab
