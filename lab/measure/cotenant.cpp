#include "measure/cotenant.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include "measure/placement.hpp"
#include "os/write_all.hpp"

namespace contend::lab {
namespace {

constexpr int nice_min = -20, nice_max = 19;
// How long a busy loop may take to start and report its nice level: microseconds, unless the
// machine is very loaded; a child that says nothing by then is treated as failed.
constexpr int report_limit_ms = 5000;

// Closes every descriptor: a busy loop needs none, and one it kept open (the pipe that carries
// a cell's result to the lab, say) would keep a reader waiting for its end.
void close_all_descriptors() {
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return;
#endif
    for (int fd = 0; fd < 1024; ++fd) ::close(fd);
}

bool past(const timespec& now, const timespec& end) {
    return now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec);
}

// What a busy loop needs, read by the child from its copy of the parent's memory.
struct busy_setup {
    int report;
    pid_t parent;
    int nice;
    timespec end;
};

// The child's side, between fork and exit: async-signal-safe calls only (the parent may have
// threads). Reports 0 or setpriority's errno on `report`, then spins until one of its ends.
[[noreturn]] void busy_child(void* arg) {
    const busy_setup& b = *static_cast<const busy_setup*>(arg);
    ::prctl(PR_SET_NAME, "contend_busy", 0, 0, 0);
    const int result = ::setpriority(PRIO_PROCESS, 0, b.nice) == 0 ? 0 : errno;
    (void)write_all(b.report, {reinterpret_cast<const char*>(&result), sizeof result});
    if (result != 0) ::_exit(1);
    const pid_t parent = b.parent;
    const timespec end = b.end;
    close_all_descriptors();
    for (;;) {
        // A few milliseconds of nothing but the loop, then a look at the two ends.
        for (unsigned i = 0; i < (1u << 22); ++i) asm volatile("");
        if (::getppid() != parent) ::_exit(0);
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        if (past(now, end)) ::_exit(0);
    }
}

timespec after_seconds(double seconds) {
    timespec end{};
    ::clock_gettime(CLOCK_MONOTONIC, &end);
    const auto whole = static_cast<time_t>(seconds);
    end.tv_sec += whole;
    end.tv_nsec += static_cast<long>((seconds - static_cast<double>(whole)) * 1e9);
    if (end.tv_nsec >= 1'000'000'000) {
        end.tv_sec += 1;
        end.tv_nsec -= 1'000'000'000;
    }
    return end;
}

// Reads exactly `size` bytes within `limit_ms` in all; false on a timeout, an error or the end.
bool read_within(int fd, void* into, std::size_t size, int limit_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    auto* at = static_cast<char*>(into);
    while (size > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left));
        if (ready < 0 && errno != EINTR) return false;
        if (ready <= 0) continue;
        const ssize_t n = ::read(fd, at, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        at += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

void check_ranges(std::int32_t busy_loops, std::int32_t busy_nice) {
    if (busy_loops < 0 || busy_loops > max_busy_loops)
        throw std::invalid_argument("--busy-loops: " + std::to_string(busy_loops) + " is outside 0.." +
                                    std::to_string(max_busy_loops));
    if (busy_nice < nice_min || busy_nice > nice_max)
        throw std::invalid_argument("--busy-nice: " + std::to_string(busy_nice) + " is not a nice level (-20..19)");
}

}  // namespace

void check_cotenant(const cotenant_options& o) {
    check_ranges(o.busy_loops, o.busy_nice);
    if (o.busy_loops == 0) return;
    // Whether this process may give a child that level: ask the kernel, in a child.
    child_exit tried;
    try {
        child_process child = child_process::start_function(
            {},
            [](void* nice) {
                ::_exit(::setpriority(PRIO_PROCESS, 0, *static_cast<const int*>(nice)) == 0 ? 0 : (errno & 0x7f) + 1);
            },
            const_cast<std::int32_t*>(&o.busy_nice));
        tried = child.wait();
    } catch (const std::system_error& e) {
        throw std::invalid_argument(std::string("--busy-nice: cannot try the level: ") +
                                    std::strerror(e.code().value()));
    }
    const bool exited = tried.end == child_end::exited;
    if (exited && tried.value == 0) return;
    errno = 0;
    const int own = ::getpriority(PRIO_PROCESS, 0);
    const int error = exited ? tried.value - 1 : EPERM;
    throw std::invalid_argument("--busy-nice " + std::to_string(o.busy_nice) +
                                ": this process may not run a busy loop at that level (" + std::strerror(error) +
                                "; it runs at nice " + std::to_string(own) +
                                ", and a lower level needs CAP_SYS_NICE or a higher RLIMIT_NICE)");
}

param_list cotenant_params(const cotenant_options& o) {
    param_list params;
    if (o.one_cpu) params.emplace_back("one_cpu", "yes");
    if (o.busy_loops > 0) {
        params.emplace_back("busy_loops", std::to_string(o.busy_loops));
        params.emplace_back("busy_nice", std::to_string(o.busy_nice));
    }
    return params;
}

cotenant_options effective_cotenant(const cotenant_options& own, const cotenant_options& run) {
    cotenant_options out = own.busy_loops > 0 ? own : run;
    out.one_cpu = own.one_cpu || run.one_cpu;
    return out;
}

param_list added_cotenant_params(const param_list& row_params, const cotenant_options& run) {
    param_list added;
    for (auto& [key, value] : cotenant_params(run)) {
        bool present = false;
        for (const auto& [k, v] : row_params) present = present || k == key;
        if (!present) added.emplace_back(std::move(key), std::move(value));
    }
    return added;
}

std::string describe_cotenant(std::int32_t busy_loops, std::int32_t busy_nice, std::int32_t one_cpu) {
    std::string out;
    if (busy_loops > 0)
        out = std::to_string(busy_loops) + (busy_loops == 1 ? " busy loop" : " busy loops") + " at nice " +
              std::to_string(busy_nice);
    if (one_cpu >= 0) out.append(out.empty() ? "" : ", ").append("on CPU ").append(std::to_string(one_cpu));
    return out.empty() ? "none" : out;
}

int one_cpu_choice() { return allowed_cpus().front(); }

one_cpu_scope::one_cpu_scope() : cpu_(one_cpu_choice()), saved_(allowed_cpus()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu_, &set);
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
        throw std::runtime_error("--one-cpu: cannot restrict the cell to CPU " + std::to_string(cpu_) + ": " +
                                 std::strerror(rc));
}

one_cpu_scope::~one_cpu_scope() {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : saved_) CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

busy_loops::busy_loops(std::int32_t count, std::int32_t nice, double max_seconds) {
    check_ranges(count, nice);
    if (count == 0) return;
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("busy loops: pipe: ") + std::strerror(errno));
    const busy_setup setup{report[1], ::getpid(), nice, after_seconds(max_seconds > 0 ? max_seconds : 0)};
    child_spec spec;
    spec.die_with_parent = true;  // a lab killed with SIGKILL takes them along
    for (std::int32_t i = 0; i < count; ++i) {
        try {
            children_.push_back(child_process::start_function(spec, busy_child, const_cast<busy_setup*>(&setup)));
        } catch (const std::system_error& e) {
            ::close(report[0]);
            ::close(report[1]);
            stop();
            throw std::runtime_error(std::string("busy loops: fork: ") + std::strerror(e.code().value()));
        }
        pids_.push_back(children_.back().pid());
    }
    ::close(report[1]);
    for (std::int32_t i = 0; i < count; ++i) {
        int result = 0;
        if (!read_within(report[0], &result, sizeof result, report_limit_ms) || result != 0) {
            ::close(report[0]);
            stop();
            throw std::runtime_error(result != 0 ? "busy loops: cannot set nice " + std::to_string(nice) + ": " +
                                                       std::strerror(result)
                                                 : std::string("busy loops: a busy loop did not start"));
        }
    }
    ::close(report[0]);
}

busy_loops::~busy_loops() { stop(); }

void busy_loops::stop() noexcept {
    for (auto& child : children_) child.signal(SIGKILL);  // all first, then each reaped
    for (auto& child : children_) child.kill_and_wait();
    children_.clear();
    pids_.clear();
}

}  // namespace contend::lab
