// Where contend::thread_pool's workers run (pool_core.cpp, "Two workers on one CPU"): a worker
// that finds an earlier worker on its CPU, while some CPU it may run on has none, moves there
// and keeps the affinity it had; a worker the program pinned stays; spread_workers = false
// leaves placement to the kernel.
#include "thread_pool_support.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

#include <thread>
#include <vector>

using namespace contend_test;
using namespace pool_test;

#if defined(__linux__)
namespace {

std::vector<int> allowed_cpu_list() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

cpu_set_t cpu_set_of(const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : cpus) CPU_SET(c, &set);
    return set;
}

std::vector<int> affinity_of(int tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(tid, sizeof set, &set) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

int cpu_of(int tid) {
    std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) return -1;
    std::istringstream fields(text.substr(paren + 2));
    std::string field;
    for (int f = 3; f < 39; ++f) fields >> field;  // field 39: the CPU it last ran on
    int cpu = -1;
    fields >> cpu;
    return cpu;
}

// Chains of items that repost themselves until told to stop: two workers always busy.
class sustained_load {
public:
    explicit sustained_load(thread_pool& pool) : pool_(pool) {
        for (int i = 0; i < 16; ++i) pool_.post([this] { link(); });
    }
    ~sustained_load() {
        stop_ = true;
        pool_.wait_idle();
    }
    std::uint64_t ran() const { return ran_.load(); }

private:
    void link() {
        ran_.fetch_add(1, std::memory_order_relaxed);
        if (!stop_.load(std::memory_order_relaxed)) pool_.post([this] { link(); });
    }
    thread_pool& pool_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> ran_{0};
};

// A thread that spins on one CPU until destroyed: that CPU is never idle, so the kernel's
// idle balancing does not move a worker there first.
class spinner_on {
public:
    explicit spinner_on(int cpu)
        : thread_([this, cpu] {
              const cpu_set_t one = cpu_set_of({cpu});
              (void)sched_setaffinity(0, sizeof one, &one);
              while (!stop_.load(std::memory_order_relaxed)) {
              }
          }) {}
    ~spinner_on() {
        stop_ = true;
        thread_.join();
    }

private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Puts both workers on `cpu`, waits until they run there, then gives them their whole
// affinity back, with a spinner on every other CPU. Returns the pool's moves within `wait`.
std::uint64_t moves_after_stacking(thread_pool& pool, const std::string& prefix, const std::vector<int>& cpus,
                                   std::chrono::milliseconds wait) {
    std::vector<std::unique_ptr<spinner_on>> spinners;
    for (std::size_t i = 1; i < cpus.size(); ++i) spinners.push_back(std::make_unique<spinner_on>(cpus[i]));
    const auto workers = threads_named(prefix);
    const cpu_set_t one = cpu_set_of({cpus[0]});
    const cpu_set_t all = cpu_set_of(cpus);
    for (const auto& [tid, r] : workers) EXPECT_EQ(sched_setaffinity(tid, sizeof one, &one), 0);
    EXPECT_TRUE(eventually(
        [&] {
            for (const auto& [tid, r] : workers)
                if (cpu_of(tid) != cpus[0]) return false;
            return true;
        },
        10s));
    const std::uint64_t before = pool.stats().worker_moves;
    for (const auto& [tid, r] : workers) EXPECT_EQ(sched_setaffinity(tid, sizeof all, &all), 0);
    eventually([&] { return pool.stats().worker_moves > before; }, wait);
    return pool.stats().worker_moves - before;
}

}  // namespace

// Two busy workers stacked on one CPU, another CPU busy with a thread outside the pool:
// the kernel seldom moves either worker (that would only mirror the imbalance), so the later
// worker moves itself, and its affinity is the whole set again afterwards. On one CPU there
// is nowhere to go: no move.
TEST(ThreadPool, AWorkerSharingItsCpuWithAnotherMovesToACpuWithoutOne) {
    watchdog dog(120s);
    const std::vector<int> cpus = allowed_cpu_list();
    ASSERT_FALSE(cpus.empty());
    thread_pool_options o = fixed(2);
    o.name = "spread";
    thread_pool pool(o);
    std::uint64_t moves = 0;
    {
        sustained_load load(pool);
        ASSERT_TRUE(eventually([&] { return load.ran() > 10'000; }, 20s));
        if (cpus.size() < 2) {
            // Nowhere to go: the looks find no free CPU.
            eventually([&] { return load.ran() > 1'000'000; }, 20s);
            EXPECT_EQ(pool.stats().worker_moves, 0u);
            return;
        }
        // The kernel may part them first on a loaded machine: a few tries.
        for (int attempt = 0; attempt < 5 && moves == 0; ++attempt)
            moves = moves_after_stacking(pool, "spread-worker-", cpus, 5s);
        for (const auto& [tid, r] : threads_named("spread-worker-")) EXPECT_EQ(affinity_of(tid), cpus);
    }
    EXPECT_GE(moves, 1u);
}

// A worker the program pinned (its on_thread_start) has one CPU: it never moves and keeps
// its mask, though both workers share that CPU.
TEST(ThreadPool, WorkersTheProgramPinnedStayWhereTheyWerePut) {
    watchdog dog(120s);
    const std::vector<int> cpus = allowed_cpu_list();
    ASSERT_FALSE(cpus.empty());
    thread_pool_options o = fixed(2);
    o.name = "pinned";
    o.on_thread_start = [pin = cpus[0]](std::size_t) {
        const cpu_set_t one = cpu_set_of({pin});
        (void)sched_setaffinity(0, sizeof one, &one);
    };
    thread_pool pool(o);
    {
        sustained_load load(pool);
        ASSERT_TRUE(eventually([&] { return load.ran() > 1'000'000; }, 60s));
    }
    EXPECT_EQ(pool.stats().worker_moves, 0u);
    const auto workers = threads_named("pinned-worker-");
    EXPECT_EQ(workers.size(), 2u);
    for (const auto& [tid, r] : workers) EXPECT_EQ(affinity_of(tid), std::vector<int>{cpus[0]});
}

// spread_workers = false: stacked workers stay for the kernel to part.
TEST(ThreadPool, SpreadWorkersOffLeavesPlacementToTheKernel) {
    watchdog dog(120s);
    const std::vector<int> cpus = allowed_cpu_list();
    ASSERT_FALSE(cpus.empty());
    thread_pool_options o = fixed(2);
    o.name = "unspread";
    o.spread_workers = false;
    thread_pool pool(o);
    {
        sustained_load load(pool);
        ASSERT_TRUE(eventually([&] { return load.ran() > 10'000; }, 20s));
        if (cpus.size() >= 2) moves_after_stacking(pool, "unspread-worker-", cpus, 1s);
    }
    EXPECT_EQ(pool.stats().worker_moves, 0u);
}
#endif
