// What both builds' os_thread share; the start and the join are os_thread_pthread.cpp's, or
// in the model-checking build os_thread_model.cpp's (CMakeLists.txt chooses).
#include <pthread.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <atomic>
#include <utility>

#include "pool/os_thread.hpp"

namespace contend::internal {
namespace {

// fail_thread_starts_after's budget: starts left before they fail, or < 0 for no limit.
std::atomic<int> starts_left{-1};

}  // namespace

bool thread_start_refused() noexcept {
    int n = starts_left.load(std::memory_order_relaxed);
    while (n > 0 && !starts_left.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
    }
    return n == 0;
}

void fail_thread_starts_after(int starts) noexcept { starts_left.store(starts, std::memory_order_relaxed); }

void set_current_thread_name(const std::string& name) noexcept {
#if defined(__linux__)
    const std::string short_name = name.substr(0, 15);  // the kernel's limit, 16 with the NUL
    pthread_setname_np(pthread_self(), short_name.c_str());
#else
    (void)name;
#endif
}

void set_current_thread_timer_slack(std::chrono::nanoseconds slack) noexcept {
#if defined(__linux__)
    // Best effort: a kernel that refuses leaves the default, which is late but correct.
    (void)prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack.count() > 0 ? slack.count() : 1), 0, 0, 0);
#else
    (void)slack;
#endif
}

std::chrono::nanoseconds current_thread_timer_slack() noexcept {
#if defined(__linux__)
    const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack > 0) return std::chrono::nanoseconds(slack);
#endif
    return std::chrono::microseconds(50);
}

os_thread::os_thread(os_thread&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)), started_(std::exchange(other.started_, false)) {}

os_thread& os_thread::operator=(os_thread&& other) noexcept {
    if (this != &other) {
        if (started_) join();
        handle_ = std::exchange(other.handle_, 0);
        started_ = std::exchange(other.started_, false);
    }
    return *this;
}

os_thread::~os_thread() {
    if (started_) join();
}

}  // namespace contend::internal
