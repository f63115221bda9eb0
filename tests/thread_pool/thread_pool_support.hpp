// What several tests of contend::thread_pool use (tests/thread_pool/*_test.cpp): a pool of a
// fixed size, a count of each item's runs, and a look at the pool's threads by name.
//
// Every wait in these tests is bounded (watchdog or `eventually`); no test asserts how long
// anything takes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "contend/thread_pool.hpp"
#include "test_support.hpp"

namespace pool_test {

using contend::thread_pool;
using contend::thread_pool_options;

// From min to max workers, hill climbing off: only starvation and blocking_scope add one.
inline thread_pool_options between(std::size_t min, std::size_t max) {
    thread_pool_options o;
    o.min_threads = min;
    o.max_threads = max;
    o.hill_climbing = false;
    return o;
}

// n workers, no more, no fewer.
inline thread_pool_options fixed(std::size_t n) { return between(n, n); }

struct run_counts {
    explicit run_counts(std::size_t n) : counts(n) {}
    std::vector<std::atomic<std::uint8_t>> counts;
    void hit(std::size_t i) { counts[i].fetch_add(1, std::memory_order_relaxed); }
    // Index of the first item not run exactly once, or size() if all were.
    std::size_t first_wrong() const {
        for (std::size_t i = 0; i < counts.size(); ++i)
            if (counts[i].load() != 1) return i;
        return counts.size();
    }
};

// This process's threads whose name starts with `prefix` (a pool's name and a dash): for
// each, its kernel id, its scheduler state (R, S, D...) and the CPU it has used (user and
// system), from Linux's /proc/self/task/<tid>/stat. Empty where that cannot be read.
struct thread_reading {
    char state = '?';
    double cpu_seconds = 0;
};
inline std::map<int, thread_reading> threads_named(const std::string& prefix) {
    std::map<int, thread_reading> found;
#if defined(__linux__)
    static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        if (!std::getline(comm, name) || name.rfind(prefix, 0) != 0) continue;
        std::ifstream stat(task.path() / "stat");
        const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const auto paren = text.rfind(')');  // the name, in parentheses, may hold spaces
        if (paren == std::string::npos) continue;
        // After the name: state (field 3) ... utime (14), stime (15).
        std::istringstream fields(text.substr(paren + 2));
        thread_reading r;
        std::string skip;
        fields >> r.state;
        for (int f = 4; f < 14; ++f) fields >> skip;
        unsigned long long utime = 0, stime = 0;
        if (!(fields >> utime >> stime)) continue;
        r.cpu_seconds = static_cast<double>(utime + stime) / tick;
        found[std::stoi(task.path().filename().string())] = r;
    }
#else
    (void)prefix;
#endif
    return found;
}

// Whether `count` threads named prefix... exist and all are asleep (blocked: state S). True
// where that cannot be read: a test that waits for it then checks less.
inline bool all_asleep(const std::string& prefix, std::size_t count) {
#if !defined(__linux__)
    (void)prefix;
    (void)count;
    return true;
#else
    const auto threads = threads_named(prefix);
    if (threads.size() != count) return false;
    for (const auto& [tid, r] : threads)
        if (r.state != 'S') return false;
    return true;
#endif
}

}  // namespace pool_test
