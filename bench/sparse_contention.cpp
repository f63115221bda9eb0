// Sparse contention: a lock that is free most of the time, held briefly by threads that do
// most of their work outside it (what RocksDB's db_bench does to its DB mutex), with
// contend::mutex and glibc's pthread_mutex_t side by side in one process, interleaved.
// A program, not a test: it asserts nothing about time.
//
// Each of THREADS threads loops: lock, busy HOLD_NS, unlock, busy THINK_NS. Per run it prints
// operations per second, the CPU the process used as a share of what the machine offered
// (CPU time / wall time / CPUs this process may use: a lock whose waiters sleep while the lock
// is free leaves CPUs idle, and that share shows it), and the time spent in lock() by calls
// that waited over 1 us. Then per repetition contend's ops/s over glibc's, and their median
// and range.
//
//   sparse_contention [THREADS HOLD_NS THINK_NS SECONDS REPS]   (defaults 4 270 3000 1 5)
//
// Bounds: 1..1024 threads, 0..10^8 ns of hold and think, 0.01..60 s a run, 1..100 reps.
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "contend/mutex.hpp"

namespace {

using steady = std::chrono::steady_clock;

struct glibc_mutex {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    void lock() { pthread_mutex_lock(&m); }
    void unlock() { pthread_mutex_unlock(&m); }
};

void busy_for(std::chrono::nanoseconds d) {
    const auto end = steady::now() + d;
    while (steady::now() < end) {
    }
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int usable_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}

struct result {
    double ops_per_s;
    double cpu_share;
    double waited_ms;
};

template <class Lock>
result run(int threads, std::chrono::nanoseconds hold, std::chrono::nanoseconds think, double seconds) {
    Lock lock;
    std::atomic<bool> stop{false};
    std::vector<long> ops(static_cast<std::size_t>(threads));
    std::vector<double> waited(static_cast<std::size_t>(threads));
    const double cpu_before = cpu_seconds();
    const auto start = steady::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            long n = 0;
            double w = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                const auto before = steady::now();
                lock.lock();
                const double d = std::chrono::duration<double>(steady::now() - before).count();
                if (d > 1e-6) w += d;
                busy_for(hold);
                lock.unlock();
                busy_for(think);
                ++n;
            }
            ops[static_cast<std::size_t>(t)] = n;
            waited[static_cast<std::size_t>(t)] = w;
        });
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto& w : workers) w.join();
    const double wall = std::chrono::duration<double>(steady::now() - start).count();
    long total = 0;
    double total_wait = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        total += ops[i];
        total_wait += waited[i];
    }
    return {static_cast<double>(total) / wall, (cpu_seconds() - cpu_before) / wall / usable_cpus(), total_wait * 1e3};
}

bool parse(const char* text, double lo, double hi, double& out) {
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
    out = v;
    return true;
}

void print(const char* name, const result& r) {
    std::printf("  %-8s %11.0f ops/s  CPU used %5.1f %%  waited %9.1f ms\n", name, r.ops_per_s, 100 * r.cpu_share,
                r.waited_ms);
}

}  // namespace

int main(int argc, char** argv) {
    double args[5] = {4, 270, 3000, 1, 5};
    const double lo[5] = {1, 0, 0, 0.01, 1};
    const double hi[5] = {1024, 1e8, 1e8, 60, 100};
    const char* names[5] = {"THREADS", "HOLD_NS", "THINK_NS", "SECONDS", "REPS"};
    if (argc > 6) {
        std::fprintf(stderr, "usage: %s [THREADS HOLD_NS THINK_NS SECONDS REPS]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; ++i)
        if (!parse(argv[i], lo[i - 1], hi[i - 1], args[i - 1]) || (i != 4 && args[i - 1] != std::floor(args[i - 1]))) {
            std::fprintf(stderr, "%s must be %s from %g to %g, not '%s'\n", names[i - 1],
                         i == 4 ? "a number" : "a whole number", lo[i - 1], hi[i - 1], argv[i]);
            return 2;
        }
    const int threads = static_cast<int>(args[0]);
    const std::chrono::nanoseconds hold{static_cast<long>(args[1])}, think{static_cast<long>(args[2])};
    const int reps = static_cast<int>(args[4]);
    std::printf("sparse contention: %d threads on %d CPUs, hold %ld ns, think %ld ns, %g s a run, %d reps\n", threads,
                usable_cpus(), static_cast<long>(hold.count()), static_cast<long>(think.count()), args[3], reps);
    std::vector<double> ratios;
    for (int r = 0; r < reps; ++r) {
        std::printf("rep %d\n", r + 1);
        result c{}, g{};
        // Alternate which goes first, so that a drift of the machine reaches both alike.
        if (r % 2 == 0) {
            c = run<contend::mutex>(threads, hold, think, args[3]);
            g = run<glibc_mutex>(threads, hold, think, args[3]);
        } else {
            g = run<glibc_mutex>(threads, hold, think, args[3]);
            c = run<contend::mutex>(threads, hold, think, args[3]);
        }
        print("contend", c);
        print("glibc", g);
        ratios.push_back(g.ops_per_s > 0 ? c.ops_per_s / g.ops_per_s : 0);
    }
    std::sort(ratios.begin(), ratios.end());
    const std::size_t n = ratios.size();
    const double median = n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
    std::printf("contend/glibc ops/s: median %.2f, range %.2f-%.2f\n", median, ratios.front(), ratios.back());
    return 0;
}
