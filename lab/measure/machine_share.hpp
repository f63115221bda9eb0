// What other processes take of a cell's CPUs while it is measured: the co-tenants the lab
// did not start (another program, a build, a second benchmark). A figure measured beside one
// is not the machine's alone: a pool cell moved 5 to 40x beside a program using 1.8 of 2 CPUs
// at normal priority, and nothing in the results said so.
//
// Over a cell's timed repetitions, from the kernel's own accounting:
//  - the busy time of the cell's CPUs less this process's own CPU time (getrusage, itself and
//    its reaped children): what others used. The busy time is the root cpuacct cgroup's
//    usage per CPU where there is one (cgroup v1: every task's time in ns, good to the tick
//    a busy CPU has not yet accounted), else /proc/stat's user, nice, system, irq, softirq
//    and steal (steal: the time a hypervisor gave the CPU to another guest), in clock ticks
//    (10 ms at USER_HZ 100). One span from the first repetition to the last, so that the
//    error is one reading's, not one per repetition;
//  - the threads of other processes runnable when the repetition ends: procs_running less
//    this process's threads in state R.
// Linux only; elsewhere, or where /proc/stat cannot be read, nothing is measured (NaN).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace contend::lab {

struct machine_share_sample {
    double others_ns = 0;  // CPU time other processes used on the cell's CPUs
    double capacity_ns = 0;  // the CPUs' time: the time between start and stop x their number
    double others_runnable = 0;  // threads of other processes runnable at its end
};

class machine_share_meter {
public:
    // `cpus`: the CPUs the cell's threads may run on. `own`: processes that are the cell's
    // own besides this one and its reaped children (the lab's busy loops, which the row's
    // name declares): their CPU time (/proc/PID/schedstat, ns) counts as the cell's.
    explicit machine_share_meter(std::vector<int> cpus, std::vector<pid_t> own = {});
    // Before the first timed repetition.
    void start();
    // After the last: what others took since start(), or nullopt where it cannot be measured.
    std::optional<machine_share_sample> stop();

private:
    struct reading {
        double busy_ns = 0;
        double own_ns = 0;
        std::chrono::steady_clock::time_point at;
    };
    std::optional<reading> read() const;

    std::vector<int> cpus_;
    std::vector<pid_t> own_;
    std::optional<reading> start_;
};

// The sum of a cell's samples: others_cpu_share and others_runnable of cell_result.
struct machine_share_total {
    double others_ns = 0, capacity_ns = 0, most_runnable = 0;
    bool measured = false;
    void add(const machine_share_sample& s);
    double share() const;  // NaN unless measured
    double runnable() const;  // NaN unless measured
};

// What wait_until_quiet found: quiet (others took at most shared_above of the CPUs over one
// look) or not within the time given, how long it waited, and the last look's share (NaN
// where nothing can be measured: then it does not wait).
struct quiet_wait {
    bool quiet = true;
    double waited_s = 0;
    double last_share = 0;
};

// Looks at `cpus` for quiet_look_s at a time (this thread sleeping meanwhile, so what it sees
// busy is others') until one look finds others at or below shared_above, for at most
// `seconds`, or until *stop is non-zero. 0.2 s: with cpuacct's ns, far finer than the mark;
// with /proc/stat's 10 ms ticks, 20 a CPU, so that a stray tick is one look's 5 % at most and
// costs another look, not a wrong verdict on a busy machine.
inline constexpr double quiet_look_s = 0.2;
quiet_wait wait_until_quiet(const std::vector<int>& cpus, double seconds, const std::atomic<int>* stop = nullptr);

}  // namespace contend::lab
