// Shared test helpers: bounded waits, a watchdog, thread fan-out, sanitizer-aware sizes.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
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

}  // namespace contend_test
