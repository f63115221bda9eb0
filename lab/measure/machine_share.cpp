// What other processes take of a cell's CPUs: the CPUs' busy time (the root cpuacct cgroup,
// else /proc/stat) less this process's own CPU time and its own co-tenants'.
#include "measure/machine_share.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "results/results.hpp"

namespace contend::lab {

namespace {

double rusage_ns(int who) {
    rusage u{};
    if (getrusage(who, &u) != 0) return 0;
    const auto ns = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + t.tv_usec * 1e3; };
    return ns(u.ru_utime) + ns(u.ru_stime);
}

// The line "cpuN user nice system idle iowait irq softirq steal ...": its busy ticks.
std::optional<std::uint64_t> busy_ticks_of(const std::string& line) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    std::uint64_t v[8] = {};
    for (auto& x : v)
        if (!(in >> x)) return std::nullopt;
    // user, nice, system, (idle, iowait), irq, softirq, steal
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

// Whether the task whose stat file this is runs or is runnable now (state R).
bool runnable(const std::filesystem::path& stat) {
    std::ifstream in(stat);
    std::string line;
    if (!std::getline(in, line)) return false;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R';
}

// This process's threads and its own co-tenants that are running or runnable now (the thread
// reading among them).
double own_runnable(const std::vector<pid_t>& own) {
    double n = 0;
    std::error_code ec;
    // Threads may end meanwhile: the error_code forms, which never throw.
    for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec))
        n += runnable(it->path() / "stat") ? 1 : 0;
    for (const pid_t pid : own) n += runnable("/proc/" + std::to_string(pid) + "/stat") ? 1 : 0;
    return std::max(n, 1.0);
}

// A process's time on a CPU so far, in ns (/proc/PID/schedstat's first field: its main
// thread's, all of a busy loop's); 0 once it is gone.
double run_ns_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
    double ns = 0;
    return in >> ns ? ns : 0;
}

std::optional<double> procs_running() {
    std::ifstream in("/proc/stat");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("procs_running ", 0) == 0) return std::strtod(line.c_str() + 14, nullptr);
    return std::nullopt;
}

}  // namespace

machine_share_meter::machine_share_meter(std::vector<int> cpus, std::vector<pid_t> own)
    : cpus_(std::move(cpus)), own_(std::move(own)) {}

// The busy time of `cpus` in ns since boot, from the most precise source readable: the root
// cpuacct cgroup's usage per CPU (cgroup v1: every task's CPU time, in ns, up to the tick
// not yet accounted on a busy CPU), else /proc/stat (user, nice, system, irq, softirq and
// steal, in clock ticks: 10 ms at USER_HZ 100).
static std::optional<double> busy_ns_of(const std::vector<int>& cpus) {
    if (cpus.empty()) return std::nullopt;
    for (const char* path :
         {"/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage_percpu"}) {
        std::ifstream in(path);
        std::vector<double> per_cpu;
        for (double v; in >> v;) per_cpu.push_back(v);
        if (per_cpu.empty()) continue;
        double sum = 0;
        for (const int cpu : cpus) {
            if (cpu < 0 || static_cast<std::size_t>(cpu) >= per_cpu.size()) return std::nullopt;
            sum += per_cpu[static_cast<std::size_t>(cpu)];
        }
        return sum;
    }
    std::ifstream in("/proc/stat");
    if (!in) return std::nullopt;
    static const double tick_ns = 1e9 / static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
    std::uint64_t ticks = 0;
    std::size_t found = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
        const int cpu = std::atoi(line.c_str() + 3);
        if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
        const auto busy = busy_ticks_of(line);
        if (!busy) return std::nullopt;
        ticks += *busy;
        ++found;
    }
    if (found != cpus.size()) return std::nullopt;
    return static_cast<double>(ticks) * tick_ns;
}

std::optional<machine_share_meter::reading> machine_share_meter::read() const {
#if defined(__linux__)
    const auto busy = busy_ns_of(cpus_);
    if (!busy) return std::nullopt;
    reading r;
    r.busy_ns = *busy;
    r.own_ns = rusage_ns(RUSAGE_SELF) + rusage_ns(RUSAGE_CHILDREN);
    for (const pid_t pid : own_) r.own_ns += run_ns_of(pid);
    r.at = std::chrono::steady_clock::now();
    return r;
#else
    return std::nullopt;
#endif
}

void machine_share_meter::start() { start_ = read(); }

std::optional<machine_share_sample> machine_share_meter::stop() {
    const auto end = read();
    if (!start_ || !end || end->at <= start_->at) return std::nullopt;
    const double wall_ns = std::chrono::duration<double, std::nano>(end->at - start_->at).count();
    machine_share_sample s;
    const double busy_ns = end->busy_ns - start_->busy_ns;
    s.others_ns = std::max(0.0, busy_ns - (end->own_ns - start_->own_ns));
    s.capacity_ns = wall_ns * static_cast<double>(cpus_.size());
    const double running = procs_running().value_or(0);
    s.others_runnable = std::max(0.0, running - own_runnable(own_));
    return s;
}

void machine_share_total::add(const machine_share_sample& s) {
    others_ns += s.others_ns;
    capacity_ns += s.capacity_ns;
    most_runnable = measured ? std::max(most_runnable, s.others_runnable) : s.others_runnable;
    measured = true;
}

double machine_share_total::share() const {
    if (!measured || !(capacity_ns > 0)) return not_measured;
    return std::clamp(others_ns / capacity_ns, 0.0, 1.0);
}

double machine_share_total::runnable() const { return measured ? most_runnable : not_measured; }

quiet_wait wait_until_quiet(const std::vector<int>& cpus, double seconds, const std::atomic<int>* stop) {
    quiet_wait w;
    const auto start = std::chrono::steady_clock::now();
    machine_share_meter meter(cpus);
    for (;;) {
        meter.start();
        std::this_thread::sleep_for(std::chrono::duration<double>(quiet_look_s));
        const auto sample = meter.stop();
        w.waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!sample) {  // nothing to measure with: not a reason to hold the run
            w.last_share = not_measured;
            return w;
        }
        w.last_share = sample->capacity_ns > 0 ? sample->others_ns / sample->capacity_ns : 0;
        w.quiet = w.last_share <= shared_above;
        if (w.quiet || w.waited_s >= seconds || (stop && stop->load() != 0)) return w;
    }
}

}  // namespace contend::lab
