// contend::thread_pool's hill climbing: end to end, the gate thread feeding the climber
// (gate_thread.cpp) and applying its goal; then the climber alone (hill_climbing.cpp), fed
// made-up samples.
#include "thread_pool_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "pool/hill_climbing.hpp"

using namespace contend_test;
using namespace pool_test;

TEST(ThreadPool, HillClimbingAddsThreadsForBlockingItems) {
    watchdog dog(120s);
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 64;
    thread_pool pool(o);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> done{0};
    // A steady stream: each item sleeps 1 ms and posts its successor; 64 streams keep the
    // queue non-empty whatever the thread count.
    struct stream {
        static void step(thread_pool& p, std::atomic<bool>& s, std::atomic<std::uint64_t>& d) {
            std::this_thread::sleep_for(1ms);
            d.fetch_add(1);
            if (!s.load()) p.post([&p, &s, &d] { step(p, s, d); });
        }
    };
    for (int i = 0; i < 64; ++i) pool.post([&] { stream::step(pool, stop, done); });
    // End to end, loosely: the decisions themselves are the HillClimber tests below, fed
    // made-up samples; here the gate thread must feed the climber and apply its goal.
    const bool grew = eventually([&] { return pool.stats().thread_goal >= 5; }, 30s);
    stop.store(true);
    pool.wait_idle();
    EXPECT_TRUE(grew) << "goal " << pool.stats().thread_goal;
    EXPECT_GT(pool.stats().hill_climbing_adjustments, 0u);
    EXPECT_GT(done.load(), 0u);
}

namespace {

// Threads of the whole machine that are running or waiting for a CPU now (Linux's
// /proc/stat, procs_running), this one included; -1 where that cannot be read.
int machine_runnable_threads() {
#if defined(__linux__)
    std::ifstream stat("/proc/stat");
    std::string line;
    while (std::getline(stat, line))
        if (line.rfind("procs_running ", 0) == 0) return std::atoi(line.c_str() + 14);
#endif
    return -1;
}

}  // namespace

// CPU-bound items at the CPU count: the climber sees that no worker blocks, so it does not
// probe a thread up (it used to, and a noisy sample could keep it; docs/design/pool.md).
// That rule, on made-up samples, is HillClimber's tests, noisy ones included. End to end the
// gate thread's CPU view comes from the scheduler's statistics, and they hold only while a
// worker that wants a CPU gets one soon: Linux adds a thread's wait for a CPU to its
// statistics when it next runs, so where many other threads want the CPUs too (a load
// average in the hundreds in a TSan stage; here 60 busy loops beside the test on 2 CPUs
// failed it 2 runs in 2) a worker that waited most of a sample reads as blocked, the climber
// probes up, and a noisy sample keeps the probe (2->3->4 seen). So the bound is asserted
// only over a run during which the rest of the machine had few threads per CPU running or
// waiting for one, on average (/proc/stat's procs_running, less the test's own):
// a worker then waits a few time slices for a CPU, some 10 ms, and the unaccounted part of
// the wait at a sample's end stays well below the half worker that reads as blocked. Measured
// on 2 CPUs: beside about 3 per CPU (other compilers) the goal stayed at 2, 2 runs in 2; as
// 60 busy loops ended, runs at 15, 11 and 8 per CPU reached 4, 4 and 5, at 5.9 and 4.2 per
// CPU 2 and 3; but one run beside three builds (a load average of about 8) reached more than
// cores + 1 with an average under 4 per CPU, so a run counts as quiet only under 2 per CPU.
// A busy machine gets up to 5 runs to find a quiet one. Under load the pool guarantees only
// its limits, which every run checks; with no quiet run the test says so and skips.
TEST(ThreadPool, HillClimbingKeepsCpuWorkWithinACoreOfTheCoresOnAnOtherwiseIdleMachine) {
    watchdog dog(120s);
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    std::string busy_runs;
    for (int run = 1; run <= 5; ++run) {
        thread_pool_options o;
        o.min_threads = cores;
        o.max_threads = 64;
        std::mutex m;
        std::string moves;  // for the failure message
        o.on_adjustment = [&](const contend::hill_climbing_adjustment& a) {
            std::lock_guard g(m);
            moves += " " + std::to_string(a.from_threads) + "->" + std::to_string(a.to_threads) + " (" + a.reason + ")";
        };
        thread_pool pool(o);
        std::atomic<bool> stop{false};
        struct stream {
            static void step(thread_pool& p, std::atomic<bool>& s) {
                const auto until = steady::now() + 200us;
                while (steady::now() < until) {
                }
                if (!s.load()) p.post([&p, &s] { step(p, s); });
            }
        };
        for (int i = 0; i < 64; ++i) pool.post([&] { stream::step(pool, stop); });
        // 2 s is some 20 samples, time for several probes.
        std::size_t most = 0, least = 64;
        double others = 0;  // other threads running or runnable, summed over the readings
        int readings = 0;
        const auto until = steady::now() + 2s;
        while (steady::now() < until) {
            const auto stats = pool.stats();
            most = std::max(most, stats.thread_goal);
            least = std::min(least, stats.thread_goal);
            if (const int runnable = machine_runnable_threads(); runnable >= 0) {
                // This thread and the workers running an item are the test's own.
                others += std::max(0.0, static_cast<double>(runnable) - 1 - static_cast<double>(stats.active));
                ++readings;
            }
            std::this_thread::sleep_for(20ms);
        }
        stop.store(true);
        pool.wait_idle();
        std::lock_guard g(m);
        EXPECT_GE(least, cores) << "run " << run << ", moves:" << moves;
        EXPECT_LE(most, 64u) << "run " << run << ", moves:" << moves;
        const double others_per_cpu = readings > 0 ? others / readings / static_cast<double>(cores) : 0;
        if (others_per_cpu < 2) {
            EXPECT_LE(most, cores + 1) << "run " << run << " (" << others_per_cpu
                                       << " other threads per CPU wanted one), moves:" << moves;
            return;
        }
        busy_runs += "\n  run " + std::to_string(run) + ": " + std::to_string(others_per_cpu) +
                     " other threads per CPU wanted one; the goal reached " + std::to_string(most) + ", moves:" + moves;
    }
    GTEST_SKIP() << "the machine was busy with other work in every run, so the CPU view the bound rests on did not "
                    "hold; only the pool's limits were checked:"
                 << busy_runs;
}

// The climber's decisions, fed samples by hand: 0.1 s each, a steady rate unless a test says
// otherwise, each decision's goal applied as the gate thread would.
namespace {
using contend::internal::hill_climber;

struct climbing {
    hill_climber climber;
    std::size_t goal;
    std::size_t min_threads;
    std::size_t max_threads = 64;
    int ups = 0, downs = 0;
    hill_climber::decision sample(double per_second, bool work_waiting, hill_climber::cpu_view cpu) {
        const auto d = climber.update(goal, 0.1, static_cast<std::uint64_t>(per_second / 10), work_waiting, min_threads,
                                      max_threads, cpu);
        ups += d.what == hill_climber::move::probe_up;
        downs += d.what == hill_climber::move::probe_down;
        goal = d.goal;
        return d;
    }
};

hill_climber::cpu_view cpus_blocked(std::size_t cpus, double blocked) {
    hill_climber::cpu_view v;
    v.cpus = cpus;
    v.blocked_workers = blocked;
    return v;
}
}  // namespace

TEST(HillClimber, CpuBoundWorkersAtTheCpuCountGetNoThreadMoreWhateverWaits) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 200; ++i) c.sample(100'000, true, cpus_blocked(2, 0.2));
    EXPECT_EQ(c.goal, 2u);
    EXPECT_EQ(c.ups, 0);
}

TEST(HillClimber, BlockedWorkersAtTheCpuCountStillGetAProbeUp) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, cpus_blocked(2, 1.5));
    EXPECT_EQ(c.ups, 1);
    EXPECT_EQ(c.goal, 3u);
}

TEST(HillClimber, BelowTheCpuCountCpuBoundWorkStillProbesUp) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, cpus_blocked(4, 0.0));
    EXPECT_EQ(c.goal, 3u);
}

TEST(HillClimber, WithoutACpuViewWaitingWorkProbesUpAsBefore) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, {});
    EXPECT_EQ(c.goal, 3u);
}

// A goal above the CPU count (a noisy sample kept a probe, or the work was blocking then)
// comes back down once the workers are CPU-bound, though work keeps waiting, and stays.
TEST(HillClimber, AboveTheCpuCountCpuBoundWorkersAreProbedDownWhileWorkWaits) {
    climbing c{{}, 3, 2};
    for (int i = 0; i < 200; ++i) c.sample(100'000, true, cpus_blocked(2, 0.1));
    EXPECT_EQ(c.goal, 2u);
    EXPECT_EQ(c.downs, 1);
    EXPECT_EQ(c.ups, 0);
}

// ...unless the thread less costs more than min_gain: then the climber goes back up and rests.
TEST(HillClimber, AProbeDownThatCostsThroughputIsRevertedThenRetriedLessOften) {
    climbing c{{}, 3, 2};
    int reverts = 0;
    for (int i = 0; i < 200; ++i) {
        const double rate = c.goal == 3 ? 100'000 : 70'000;  // the third thread is worth 30 %
        reverts += c.sample(rate, true, cpus_blocked(2, 0.1)).what == hill_climber::move::revert;
    }
    EXPECT_EQ(c.goal, 3u);
    EXPECT_GE(reverts, 2);
    EXPECT_EQ(reverts, c.downs);
    EXPECT_LE(c.downs, 8);  // rests of 4, 8, 16, 32, 32... samples between the probes
}

// What the climber guarantees for CPU-bound work, whatever the throughput samples say: fed
// CPU-bound readings (fewer than half a worker blocked) with noisy throughput (each sample
// anywhere from half to one and a half times the rate) and work always waiting, it never
// takes the goal past the CPU count, and from above it never raises it. This is what the
// end-to-end test above can check only on a quiet machine, where the gate thread's CPU view
// is true.
TEST(HillClimber, NoisyCpuBoundSamplesNeverRaiseTheGoalPastTheCpuCount) {
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> rate(50'000, 150'000), blocked(0.0, 0.49);
    for (std::size_t cpus : {1u, 2u, 4u, 16u}) {
        for (std::size_t start : {cpus, cpus + 3}) {
            climbing c{{}, start, 1};
            std::size_t most = start;
            for (int i = 0; i < 2'000; ++i) {
                c.sample(rate(rng), true, cpus_blocked(cpus, blocked(rng)));
                most = std::max(most, c.goal);
            }
            EXPECT_EQ(most, start) << cpus << " CPUs, from " << start;
            if (start == cpus) {
                EXPECT_EQ(c.ups, 0) << cpus << " CPUs";
            }
        }
    }
}

// A probe up is kept only if throughput rose by more than min_gain.
TEST(HillClimber, AProbeUpIsKeptOnlyForMoreThanTheMinimumGain) {
    climbing flat{{}, 2, 2};
    for (int i = 0; i < 8; ++i) flat.sample(100'000, true, {});
    EXPECT_EQ(flat.goal, 2u);  // probed, saw no gain, reverted
    EXPECT_GE(flat.ups, 1);
    climbing rising{{}, 2, 2};
    for (int i = 0; i < 8 && rising.goal < 3; ++i) rising.sample(100'000, true, {});
    for (int i = 0; i < 4; ++i) rising.sample(rising.goal >= 3 ? 150'000 : 100'000, true, {});
    EXPECT_GE(rising.goal, 3u);
}

// Blocking work, as the end-to-end test above makes it: each thread the climber adds raises
// throughput by a worker's worth (items that sleep), up to 8 threads, and no further. The
// climber climbs there, one kept probe at a time, and stays (its probes past 8 are reverted).
TEST(HillClimber, EachThreadAddingThroughputClimbsToWhereTheGainStopsAndStaysThere) {
    climbing c{{}, 2, 2};
    int keeps = 0, reverts = 0;
    std::size_t most = 0;
    for (int i = 0; i < 300; ++i) {
        const auto d = c.sample(1'000.0 * static_cast<double>(std::min<std::size_t>(c.goal, 8)), true, {});
        keeps += d.what == hill_climber::move::keep;
        reverts += d.what == hill_climber::move::revert;
        most = std::max(most, c.goal);
    }
    EXPECT_EQ(keeps, 6) << "2 -> 8, one kept probe per thread";
    EXPECT_GE(reverts, 1);
    EXPECT_EQ(most, 9u) << "a probe past 8 was kept";
    EXPECT_GE(c.goal, 8u);
    EXPECT_LE(c.goal, 9u);
}

// Whatever the samples say, the goal moves at most max_change_per_second (4) times in any
// second: here every probe up is a gain and kept, the fastest a climber could go.
TEST(HillClimber, TheGoalMovesAtMostFourTimesInAnySecond) {
    climbing c{{}, 2, 2};
    std::vector<int> moved_at;  // sample numbers, 0.1 s apart
    for (int i = 0; i < 200; ++i) {
        const std::size_t before = c.goal;
        c.sample(1'000.0 * static_cast<double>(c.goal), true, {});
        if (c.goal != before) moved_at.push_back(i);
    }
    ASSERT_GE(moved_at.size(), 5u);
    for (std::size_t k = 4; k < moved_at.size(); ++k)
        EXPECT_GE(moved_at[k] - moved_at[k - 4], 10)
            << "five moves within one second, the last at sample " << moved_at[k];
}

// Limits that move under the climber (set_min_threads, set_max_threads) clamp the goal at
// once, and the climber measures afresh: the next sample is discarded, no probe follows it.
TEST(HillClimber, AGoalOutsideNewLimitsIsClampedAndTheNextSampleOnlyMeasured) {
    climbing c{{}, 6, 2};
    for (int i = 0; i < 5; ++i) c.sample(1'000, false, {});  // no work waits: one probe down, kept
    ASSERT_EQ(c.goal, 5u);
    c.max_threads = 3;
    const auto clamped = c.sample(1'000, false, {});
    EXPECT_EQ(clamped.goal, 3u);
    EXPECT_EQ(clamped.what, hill_climber::move::none);
    // Without work waiting, a sample the climber used would probe down to 2.
    const auto next = c.sample(1'000, false, {});
    EXPECT_EQ(next.what, hill_climber::move::none) << "the sample after a change is discarded";
    EXPECT_EQ(next.goal, 3u);
}
