// What the pool and pipe suite tests share: whether a peer was built in, harness options for
// one quick repetition, and one repetition timed against the deadline a harness would set.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "measure/harness.hpp"
#include "measure/workload.hpp"
#include "suites/lock_peers.hpp"

namespace contend_test::suites {

namespace lab = contend::lab;

inline bool peer_built_in(const std::string& peer) {
    const std::string found = " " + lab::peers_found() + " ";
    return found.find(" " + peer + " ") != std::string::npos;
}
inline lab::harness_options quick_pool_options() {
    lab::harness_options o;
    o.min_time_s = 0.001;
    o.repetitions = 1;
    o.min_repetitions = 1;
    o.deadline_s = 20;
    return o;
}

// One repetition of `w` with a stop flag the harness would raise at `deadline`; how long
// the producer took to come back.
inline double timed_repetition(lab::workload& w, std::uint64_t ops, std::chrono::milliseconds deadline,
                               std::uint64_t& done) {
    lab::progress_counters progress(1);
    std::atomic<bool> stop{false};
    std::mutex m;
    std::condition_variable cv;
    bool returned = false;
    w.reset();
    const auto t0 = std::chrono::steady_clock::now();
    std::thread deadline_keeper([&] {
        std::unique_lock lk(m);
        if (!cv.wait_for(lk, deadline, [&] { return returned; })) stop.store(true);
    });
    done = w.run(0, ops, stop, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
        std::lock_guard lk(m);
        returned = true;
    }
    cv.notify_all();
    deadline_keeper.join();
    return seconds;
}

}  // namespace contend_test::suites
