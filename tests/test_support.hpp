// Shared test helpers: bounded waits, a watchdog, thread fan-out, sanitizer-aware sizes,
// the names of this process's threads, and a coroutine type that runs to its end unowned.
#pragma once

#include "fire_and_forget.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

// The first two CPUs this process may run on, for a test that puts two threads apart
// (Linux); {-1, -1} where it may run on fewer, or elsewhere: such a test skips.
inline std::array<int, 2> two_allowed_cpus() {
    std::array<int, 2> cpus{-1, -1};
#if defined(__linux__)
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
        if (CPU_ISSET(c, &allowed)) cpus[static_cast<std::size_t>(found++)] = c;
    if (found < 2) cpus = {-1, -1};
#endif
    return cpus;
}

// Pins the calling thread to `cpu` (Linux); false where the kernel refused, or elsewhere.
inline bool pin_this_thread_to(int cpu) {
#if defined(__linux__)
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
#else
    (void)cpu;
    return false;
#endif
}

// The calling thread's context switches so far as the kernel counts them (Linux): all of
// them, and the voluntary ones alone (sleeps); 0 elsewhere.
inline long this_thread_switches() {
#if defined(__linux__)
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nvcsw + ru.ru_nivcsw;
#else
    return 0;
#endif
}
inline long this_thread_voluntary_switches() {
#if defined(__linux__)
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nvcsw;
#else
    return 0;
#endif
}

// The calling thread's kernel id (Linux), for thread_blocked; -1 elsewhere.
inline int kernel_thread_id() {
#if defined(__linux__)
    return static_cast<int>(::syscall(SYS_gettid));
#else
    return -1;
#endif
}

// Whether thread `tid` of this process is blocked in the kernel on a futex: asleep (state 'S'
// in /proc/self/task/<tid>/stat) and, where /proc shows it, inside the futex system call that
// every blocking primitive of contend ends in (both wait backends, and the C++ library's own
// condition variables and mutexes), or in the read() of a pipe's side asleep on its thread's
// handoff_sleep (platform/handoff_sleep.hpp). A thread that runs, spins, yields or is preempted is 'R',
// so this tells "blocked" from "about to block" without a sleep. True where /proc cannot be
// read (elsewhere than Linux): the test then checks less, but still passes.
inline bool thread_blocked(int tid) {
#if defined(__linux__)
    const std::string task = "/proc/self/task/" + std::to_string(tid);
    std::ifstream stat_file(task + "/stat");
    std::string stat;
    if (!std::getline(stat_file, stat)) return false;  // the thread has exited
    // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'S') return false;
    std::ifstream syscall_file(task + "/syscall");
    std::string number;
    if (!(syscall_file >> number)) return true;  // not shown here (no ptrace access): the state alone
    return number == std::to_string(SYS_futex) || number == std::to_string(SYS_read);  // "running" once it woke
#else
    (void)tid;
    return true;
#endif
}

// Polls until every thread in `tids` is blocked (thread_blocked) at the same time, or
// `budget` passes; returns whether they were.
inline bool eventually_blocked(const std::vector<int>& tids, std::chrono::milliseconds budget = 10s) {
    return eventually(
        [&] {
            for (int tid : tids)
                if (!thread_blocked(tid)) return false;
            return true;
        },
        budget);
}

// Publishes a thread's kernel id to the thread that waits on it: the started thread calls
// publish() first, the test calls get(), which waits (bounded) for it.
class tid_box {
public:
    void publish() { tid_.store(kernel_thread_id()); }
    int get() const {
        eventually([&] { return tid_.load() != 0; });
        return tid_.load();
    }

private:
    std::atomic<int> tid_{0};
};

// The kernel id of this process's thread named `name` (Linux); 0 if there is none.
inline int thread_id_named(const std::string& name) {
#if defined(__linux__)
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string line;
        if (std::getline(comm, line) && line == name) return std::stoi(task.path().filename().string());
    }
#else
    (void)name;
#endif
    return 0;
}

// Whether this process has a thread named `name` blocked in the kernel (thread_blocked). True
// where /proc cannot be read: a test that waits for it then checks less.
inline bool thread_named_blocked(const std::string& name) {
#if defined(__linux__)
    const int tid = thread_id_named(name);
    return tid != 0 && thread_blocked(tid);
#else
    (void)name;
    return true;
#endif
}

// The seed of a test that races threads with random delays: a fresh one per run, so that runs
// cover different interleavings, unless CONTEND_TEST_SEED names one to replay. A failure
// prints seed_trace(seed).
inline std::uint32_t test_seed() {
    if (const char* s = std::getenv("CONTEND_TEST_SEED"))
        return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
    return std::random_device{}();
}

inline std::string seed_trace(std::uint32_t seed) {
    return "seed " + std::to_string(seed) + " (CONTEND_TEST_SEED replays it)";
}

// Deadlines that mean "no deadline" although they are not steady_clock::time_point::max():
// steady time points and durations beyond what nanoseconds hold (coarse units, floating
// point, infinity). f(deadline, name) is called with each.
template <class F>
void for_each_far_future_time_point(F f) {
    using namespace std::chrono;
    using seconds_f = duration<double>;
    f(time_point<steady_clock, hours>::max(), "time_point<steady_clock, hours>::max()");
    f(time_point<steady_clock, minutes>::max(), "time_point<steady_clock, minutes>::max()");
    f(time_point<steady_clock, seconds_f>(seconds_f(1e30)), "time_point<steady_clock, duration<double>>(1e30 s)");
    f(time_point<steady_clock, seconds_f>(seconds_f(std::numeric_limits<double>::infinity())),
      "time_point<steady_clock, duration<double>>(+inf)");
}
template <class F>
void for_each_far_future_duration(F f) {
    using namespace std::chrono;
    f(hours::max(), "hours::max()");
    f(duration<double>(1e30), "duration<double>(1e30)");
    f(duration<double>(std::numeric_limits<double>::infinity()), "duration<double>(+inf)");
}

// Deadlines passed already, however they are written: steady time points and durations
// below what nanoseconds hold, negative, minus infinity, NaN. f(deadline, name) with each.
template <class F>
void for_each_passed_time_point(F f) {
    using namespace std::chrono;
    using seconds_f = duration<double>;
    f(time_point<steady_clock, hours>::min(), "time_point<steady_clock, hours>::min()");
    f(steady_clock::time_point::min(), "steady_clock::time_point::min()");
    f(time_point<steady_clock, seconds_f>(seconds_f(-1e30)), "time_point<steady_clock, duration<double>>(-1e30 s)");
    f(time_point<steady_clock, seconds_f>(seconds_f(-std::numeric_limits<double>::infinity())),
      "time_point<steady_clock, duration<double>>(-inf)");
    f(time_point<steady_clock, seconds_f>(seconds_f(std::numeric_limits<double>::quiet_NaN())),
      "time_point<steady_clock, duration<double>>(NaN)");
    f(system_clock::time_point::min(), "system_clock::time_point::min()");
}
template <class F>
void for_each_passed_duration(F f) {
    using namespace std::chrono;
    f(hours::min(), "hours::min()");
    f(-1ns, "-1 ns");
    f(duration<double>(-1e30), "duration<double>(-1e30)");
    f(duration<double>(-std::numeric_limits<double>::infinity()), "duration<double>(-inf)");
    f(duration<double>(std::numeric_limits<double>::quiet_NaN()), "duration<double>(NaN)");
}

// Runs `wait` on a thread of its own (a wait whose deadline means "none"; it returns whether
// what it waited for came), calls `release` once that thread is blocked or has returned, and
// returns what the wait returned: false if it timed out at once, before the release.
template <class Wait, class Release>
bool wait_outlasts_until_released(Wait wait, Release release) {
    std::atomic<bool> returned{false};
    bool result = false;
    tid_box tid;
    std::thread waiter([&] {
        tid.publish();
        result = wait();
        returned.store(true);
    });
    const int id = tid.get();
    eventually([&] { return returned.load() || thread_blocked(id); });
    release();
    waiter.join();
    return result;
}

}  // namespace contend_test
