// A named OS thread with a chosen stack size. Internal to the pool: its workers and its
// service threads all start here.
//
// std::thread cannot choose a stack size; the pool's own threads (gate, timer, wait) run no
// user code and need little stack, so they take 256 KiB instead of the default 8 MiB of
// address space (.NET gives its service threads a small stack for the same reason). Workers
// run user code and take the platform's default.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "contend/internal/function_ref.hpp"

namespace contend::internal {

inline constexpr std::size_t service_thread_stack = 256 * 1024;

class os_thread {
public:
    os_thread() noexcept = default;
    // Starts `body` on a new thread named `name` (truncated to the OS's 15 bytes); a
    // stack_size of 0 takes the platform default. Throws std::system_error if the thread
    // cannot be created.
    os_thread(const std::string& name, std::size_t stack_size, std::function<void()> body);
    os_thread(os_thread&& other) noexcept;
    os_thread& operator=(os_thread&& other) noexcept;
    os_thread(const os_thread&) = delete;
    os_thread& operator=(const os_thread&) = delete;
    ~os_thread();  // joins if still joinable

    bool joinable() const noexcept { return started_; }
    void join();

private:
    unsigned long handle_ = 0;  // pthread_t
    bool started_ = false;
};

// For tests: the next `starts` threads start as usual and every start after them fails as
// pthread_create does when the system is out of threads or memory (std::system_error,
// EAGAIN); a negative `starts` (the default) fails none. Each of the pool's threads, the
// workers too, starts here, so a test can make any one of them fail.
void fail_thread_starts_after(int starts) noexcept;

// Whether this start must fail, by fail_thread_starts_after: for the two starts, pthread's
// (os_thread_pthread.cpp) and the model-checking build's (os_thread_model.cpp).
bool thread_start_refused() noexcept;

// Names the calling thread (truncated to 15 bytes); best effort.
void set_current_thread_name(const std::string& name) noexcept;
// Sets the calling thread's timer slack (Linux: PR_SET_TIMERSLACK), how late the kernel may
// end its timed sleeps to batch wake-ups; 50 us by default. A thread whose job is to be on
// time (the pool's timer thread) sets it to a microsecond. Elsewhere: nothing.
void set_current_thread_timer_slack(std::chrono::nanoseconds slack) noexcept;
// The calling thread's timer slack (Linux: PR_GET_TIMERSLACK); 50 us where it cannot tell.
std::chrono::nanoseconds current_thread_timer_slack() noexcept;

// The CPU the calling thread runs on (Linux: sched_getcpu, a read of the thread's rseq area
// in glibc 2.35 and later, about a nanosecond), or -1 where it cannot tell; always -1 in the
// model-checking build, which has no CPUs.
int current_thread_cpu() noexcept;
// Moves the calling thread to the lowest CPU it may run on for which `taken(cpu)` is false,
// then allows it again every CPU it was allowed before (its affinity is left as it found
// it: the kernel may move it later, as it may any thread). Returns that CPU, or -1 when no
// allowed CPU is free, or the OS refused (a cpuset changed meanwhile), or it cannot tell
// (not Linux; the model-checking build). Costs three system calls and a migration.
int move_current_thread_to_free_cpu(function_ref<bool(int)> taken) noexcept;

}  // namespace contend::internal
