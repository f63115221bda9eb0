// The selftest suite: contenders that fail in each way the harness must catch (a lost
// increment, a stall that polls, a deadlock that does not), and a probe of what a cell runs
// on and beside. Hidden from --list; the harness's and the CLI's tests run it.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

class miscounting final : public counting_workload {
public:
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        const auto done =
            run_polled(worker, ops, stop, progress, [this] { counter_.fetch_add(1, std::memory_order_relaxed); });
        if (worker == 0) counter_.fetch_sub(1);  // loses one increment per repetition
        return done;
    }
    std::uint64_t observed_total() override { return counter_.load(); }

private:
    std::atomic<std::uint64_t> counter_{0};
};

// Stops making progress but keeps polling: the harness's deadline catches it in-process.
class stalling_polite final : public counting_workload {
public:
    void reset() override {}
    std::uint64_t run(int worker, std::uint64_t, const std::atomic<bool>& stop, progress_counters& progress) override {
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        progress[static_cast<std::size_t>(worker)].value.store(0);
        return 0;
    }
    std::uint64_t observed_total() override { return 0; }
};

// Correct, but the first repetition of each instance waits 100 ms before it counts: the
// first calibration step of a cell beside a co-tenant just started, which waited out the
// co-tenant's first run of tens of milliseconds (harness.hpp, calibration_step_suspect).
class first_run_stalls final : public counting_workload {
public:
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker == 0 && !stalled_.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return run_polled(worker, ops, stop, progress, [this] { counter_.fetch_add(1, std::memory_order_relaxed); });
    }
    std::uint64_t observed_total() override { return counter_.load(); }

private:
    std::atomic<std::uint64_t> counter_{0};
    std::atomic<bool> stalled_{false};
};

// Deadlocks for good (never polls): only killing its process ends it.
class deadlocked final : public counting_workload {
public:
    void reset() override {}
    std::uint64_t run(int, std::uint64_t, const std::atomic<bool>&, progress_counters&) override {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::uint64_t observed_total() override { return 0; }
};

// How many CPUs the calling thread may use.
double cpus_of_this_thread() {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

// Children of this process named as busy loops are (cotenant.hpp).
double busy_children() {
    const std::string self = std::to_string(::getpid());
    int found = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        if (!std::getline(stat, line)) continue;
        // "pid (comm) state ppid ...": the name may hold spaces, so read from its last ')'.
        const auto open = line.find('('), close = line.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close < open) continue;
        std::istringstream rest(line.substr(close + 1));
        std::string state, ppid;
        rest >> state >> ppid;
        found += line.substr(open + 1, close - open - 1) == "contend_busy" && ppid == self;
    }
    return found;
}

// Reports where a cell's threads may run and what runs beside it: the workers' CPUs, the CPUs
// of a thread of the workload's own (started with it, as a pipe's reader is), and the busy
// loops its process started. A correct counter otherwise.
class cotenant_probe final : public counting_workload {
public:
    cotenant_probe() {
        std::thread own([this] { own_thread_cpus_ = cpus_of_this_thread(); });
        own.join();
    }
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker == 0) worker_cpus_.store(cpus_of_this_thread());
        return run_polled(worker, ops, stop, progress, [this] { counter_.fetch_add(1, std::memory_order_relaxed); });
    }
    std::uint64_t observed_total() override { return counter_.load(); }
    void measure(const repetition_facts&, metric_list& out) override {
        out.emplace_back("worker_cpus", worker_cpus_.load());
        out.emplace_back("own_thread_cpus", own_thread_cpus_);
        out.emplace_back("busy_loops_seen", busy_children());
    }

private:
    std::atomic<std::uint64_t> counter_{0};
    std::atomic<double> worker_cpus_{0};
    double own_thread_cpus_ = 0;
};

template <class W>
contender custom(std::string name, std::string description, bool is_lock) {
    return {std::move(name),         std::move(description), is_lock, [] { return std::make_unique<W>(); }, {},
            demangled_type_name<W>()};
}

}  // namespace

suite make_selftest_suite() {
    return {
        "selftest",
        "the harness's failure modes, for its tests",
        {
            atomic_contender<fetch_add_relaxed>("ok", "a correct contender"),
            custom<miscounting>("miscount", "loses one increment per repetition", false),
            custom<stalling_polite>("stall_polite", "stops progressing, but polls the deadline", true),
            custom<first_run_stalls>("first_run_stalls", "correct, but its first repetition waits 100 ms first", false),
            custom<deadlocked>("deadlock", "blocks forever without polling", true),
            custom<cotenant_probe>("cotenant_probe", "reports its threads' CPUs and the busy loops beside it", false),
        },
        {1, 2},
        true};
}

}  // namespace contend::lab
