// The profile files of contend run --profile as the tests write them: what the interposition
// library writes, one lock or one process at a time, for the tests of each seam of
// run/run_profile.hpp to change one field of.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace contend_test {

// Each test of contend run --profile in a fresh folder of its own.
using RunProfile = temp_dir_test;
using json = nlohmann::json;

inline nlohmann::json lock_json(const std::string& address, std::uint64_t wait_ns, std::uint64_t contended = 10) {
    return {{"address", address},
            {"acquisitions", 1000},
            {"contended", contended},
            {"wait_ns", wait_ns},
            {"wait_p99_ns", 2000},
            {"wait_max_ns", 5000},
            {"hold_samples", 10},
            {"hold_sampled_ns", 4000},
            {"hold_p99_ns", 700},
            {"site",
             {{"address", "0x55d0c0a01234"},
              {"module", "/no/such/module"},
              {"module_address", "0x1234"},
              {"function", "worker_loop"}}}};
}

// lock_json's lock with the rest of its distributions, as the library writes them now: waits
// p50 300 ns, p90 1,200 (p99 2,000, max 5,000); sampled holds p50 90, p90 400 (p99 700), max 900.
inline nlohmann::json with_distributions(nlohmann::json j) {
    j["wait_p50_ns"] = 300;
    j["wait_p90_ns"] = 1200;
    j["hold_p50_ns"] = 90;
    j["hold_p90_ns"] = 400;
    j["hold_max_ns"] = 900;
    return j;
}

// lock_json's lock with two sampled call stacks, as the library writes them: the first (3
// waits, 6,000 ns) from worker_loop through run_jobs and main, the second (1 wait, 2,000 ns)
// from worker_loop through drain; and its waits' histogram (buckets from 256 and 4,096 ns).
inline nlohmann::json with_stacks(nlohmann::json j) {
    const auto frame = [](const std::string& address, const std::string& function) {
        return nlohmann::json{
            {"address", address}, {"module", "/no/such/module"}, {"module_address", address}, {"function", function}};
    };
    j["stacks"] = {
        {{"frames", {frame("0x1234", "worker_loop"), frame("0x2000", "run_jobs"), frame("0x3000", "main")}},
         {"samples", 3},
         {"wait_ns", 6000}},
        {{"frames", {frame("0x1234", "worker_loop"), frame("0x2400", "drain")}}, {"samples", 1}, {"wait_ns", 2000}}};
    j["wait_histogram"] = {{256, 6}, {4096, 4}};
    return j;
}

// A rwlock's lock: lock_json's counts (1,000 acquisitions, `contended`) split 600 reads and
// 400 writes, the contended and the wait in two even halves.
inline nlohmann::json rwlock_json(const std::string& address, std::uint64_t wait_ns, std::uint64_t contended = 10) {
    auto j = lock_json(address, wait_ns, contended);
    j["kind"] = "rwlock";
    j["read_acquisitions"] = 600;
    j["read_contended"] = contended / 2;
    j["read_timeouts"] = 0;
    j["read_wait_ns"] = wait_ns / 2;
    j["write_acquisitions"] = 400;
    j["write_contended"] = contended - contended / 2;
    j["write_timeouts"] = 1;
    j["write_wait_ns"] = wait_ns - wait_ns / 2;
    return j;
}

inline nlohmann::json profile_json(std::int64_t pid, std::vector<nlohmann::json> locks = {}, double seconds = 1.5) {
    return {{"format", "contend-interpose-profile/1"},
            {"pid", pid},
            {"executable", "/usr/bin/prog"},
            {"lock", "contend_mutex"},
            {"seconds", seconds},
            {"hold_sample_period", 64},
            {"acquisitions", 4000},
            {"contended", 300},
            {"trylock_busy", 2},
            {"timeouts", 1},
            {"wait_ns", 9000000},
            {"locks_dropped", 0},
            {"locks", locks}};
}

}  // namespace contend_test
