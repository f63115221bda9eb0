// Shared test helpers: bounded waits, a watchdog, thread fan-out, sanitizer-aware sizes,
// the names of this process's threads, and a coroutine type that runs to its end unowned.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace contend_test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

// Shrinks iteration counts under sanitizers (5-15x slower) without changing what is checked.
inline constexpr long scaled(long n) { return under_sanitizer ? (n / 8 > 0 ? n / 8 : 1) : n; }

// Aborts the process if the scope outlives its budget: a deadlock or lost wake-up then
// fails the test (and names it) instead of hanging CI.
class watchdog {
public:
    explicit watchdog(std::chrono::seconds budget, const char* what = "test") : what_(what) {
        thread_ = std::thread([this, budget] {
            std::unique_lock lk(m_);
            if (!cv_.wait_for(lk, budget, [this] { return done_; })) {
                std::fprintf(stderr, "watchdog: %s exceeded its %llds budget (deadlock or lost wake-up?)\n", what_,
                             static_cast<long long>(budget.count()));
                std::fflush(stderr);
                std::abort();
            }
        });
    }
    ~watchdog() {
        {
            std::lock_guard lk(m_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

private:
    const char* what_;
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// Runs fn(i) on n threads that start together; joins them all.
inline void run_threads(int n, const std::function<void(int)>& fn) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            fn(i);
        });
    }
    while (ready.load() < n) std::this_thread::yield();
    go.store(true);
    for (auto& t : threads) t.join();
}

// Polls `cond` until it holds or `budget` passes; returns whether it held.
template <class Cond>
bool eventually(Cond cond, std::chrono::milliseconds budget = 10s) {
    const auto until = steady::now() + budget;
    while (!cond()) {
        if (steady::now() >= until) return false;
        std::this_thread::sleep_for(100us);
    }
    return true;
}

// The names of this process's threads (Linux: /proc/self/task/*/comm; elsewhere none).
inline std::vector<std::string> thread_names() {
    std::vector<std::string> names;
#if defined(__linux__)
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string line;
        if (std::getline(comm, line)) names.push_back(line);
    }
#endif
    return names;
}

// Whether a thread of this process has this name (true where names cannot be read).
inline bool thread_named(const std::string& name) {
#if defined(__linux__)
    for (const auto& n : thread_names())
        if (n == name) return true;
    return false;
#else
    (void)name;
    return true;
#endif
}

// A coroutine nobody awaits: it starts at once and frees itself when it ends.
struct fire_and_forget {
    struct promise_type {
        fire_and_forget get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::abort(); }
    };
};

}  // namespace contend_test
