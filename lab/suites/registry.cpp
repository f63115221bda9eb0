// Suite registry. The counter suite is seed 003's main table: direct atomics, CAS loops,
// the spin-lock family, the platform mutexes and contend's own, each incrementing one
// shared 64-bit counter.
#include "suites/suites.hpp"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <thread>

#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "contend/thin_lock.hpp"
#include "peers/peers.hpp"
#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// --- self-test contenders: the harness's own failure modes ------------------------------
class miscounting final : public workload {
public:
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop, progress_counters& progress) override {
        const auto done = run_polled(worker, ops, stop, progress, [this] { counter_.fetch_add(1, std::memory_order_relaxed); });
        if (worker == 0) counter_.fetch_sub(1);  // loses one increment per repetition
        return done;
    }
    std::uint64_t observed_total() override { return counter_.load(); }

private:
    std::atomic<std::uint64_t> counter_{0};
};

// Stops making progress but keeps polling: the harness's deadline catches it in-process.
class stalling_polite final : public workload {
public:
    void reset() override {}
    std::uint64_t run(int worker, std::uint64_t, const std::atomic<bool>& stop, progress_counters& progress) override {
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        progress[static_cast<std::size_t>(worker)].value.store(0);
        return 0;
    }
    std::uint64_t observed_total() override { return 0; }
};

// Deadlocks for good (never polls): only killing its process ends it.
class deadlocked final : public workload {
public:
    void reset() override {}
    std::uint64_t run(int, std::uint64_t, const std::atomic<bool>&, progress_counters&) override {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::uint64_t observed_total() override { return 0; }
};

}  // namespace

// Iterations of locked_work::burn per microsecond on this machine, measured once per
// process, unless CONTEND_LAB_BURN_PER_US gives it: `contend bench` measures it once and
// passes it to every cell's process, so that every lock of a run burns the same work (a
// rate measured per cell would differ by a few percent from cell to cell, which is the
// size of the differences the hold suite looks for).
double burn_iterations_per_us() {
    static const double rate = [] {
        if (const char* given = std::getenv("CONTEND_LAB_BURN_PER_US")) {
            char* end = nullptr;
            const double r = std::strtod(given, &end);
            if (end != given && r > 0) return r;
        }
        constexpr std::uint64_t probe = 2'000'000;
        double best = 1e300;
        for (int i = 0; i < 3; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            locked_work<std::mutex>::burn(probe);
            best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        return static_cast<double>(probe) / best;
    }();
    return rate;
}

namespace {

// The lock contenders of the counter and hold suites: ours, the platform's, the peers'.
void append_lock_contenders(std::vector<contender>& out, bool hold) {
    append_lock<contend::tas_lock>(out, hold, "tas_lock", "naive exchange loop (bad baseline)");
    append_lock<contend::ttas_lock>(out, hold, "ttas_lock", "read before exchange, pause");
    append_lock<contend::sleeping_spin_lock>(out, hold, "sleeping_spin_lock", "8 probes, then 1 ns nanosleep");
    append_lock<contend::backoff_spin_lock>(out, hold, "backoff_spin_lock", "pause doubling to 1,024, then yield");
    append_lock<contend::ticket_lock>(out, hold, "ticket_lock", "FIFO ticket lock");
    append_lock<event_lock>(out, hold, "event_lock", "spin then pause (WFE/SEV on arm64): bad baseline");
    append_lock<pthread_mutex_lock_adapter>(out, hold, "pthread_mutex", "pthread_mutex_t, default");
    append_lock<std::mutex>(out, hold, "std_mutex", "std::mutex");
    append_lock<c11_mtx_adapter>(out, hold, "c11_mtx", "C11 mtx_t, mtx_plain");
    append_lock<contend::mutex>(out, hold, "contend_mutex", "contend::mutex");
    append_lock<contend::thin_lock>(out, hold, "thin_lock", "contend::thin_lock (one 32-bit word, recursive)");
    append_peer_locks(out, hold);
}

template <class W>
contender custom(std::string name, std::string description, bool is_lock) {
    return {std::move(name), std::move(description), is_lock, [] { return std::make_unique<W>(); }, {},
            demangled_type_name<W>()};
}

std::vector<suite> make_suites() {
    std::vector<suite> suites;
    suites.push_back({"counter",
                      "seed 003's main table: every contender increments one shared 64-bit counter",
                      {
                          atomic_contender<fetch_add_relaxed>("fetch_add_relaxed", "atomic fetch_add, relaxed"),
                          atomic_contender<fetch_add_seq_cst>("fetch_add_seq_cst", "atomic fetch_add, seq_cst"),
                          atomic_contender<cas_weak_loop>("cas_weak", "weak compare-exchange loop"),
                          atomic_contender<cas_strong_loop>("cas_strong", "strong compare-exchange loop"),
                          atomic_contender<cas_backoff_sleep>("cas_backoff", "strong CAS, 1 ns nanosleep after a failure"),
                      },
                      {1, 2, 4, 16, 64}});
    append_lock_contenders(suites.back().contenders, false);

    suite hold{"hold",
               "the lock contenders with 0, 1, 20 and 200 us of work inside the lock: throughput and CPU per "
               "acquisition, where a spin lock must lose to a parking one",
               {},
               {4}};
    append_lock_contenders(hold.contenders, true);
    suites.push_back(std::move(hold));
    suites.push_back(make_wait_policy_suite());
    suites.push_back(make_probes_suite());
    suites.push_back(make_sharing_suite());
    suites.push_back(make_tax_suite());
    suites.push_back(make_monitor_suite());
    suites.push_back({"selftest",
                      "the harness's failure modes, for its tests",
                      {
                          atomic_contender<fetch_add_relaxed>("ok", "a correct contender"),
                          custom<miscounting>("miscount", "loses one increment per repetition", false),
                          custom<stalling_polite>("stall_polite", "stops progressing, but polls the deadline", true),
                          custom<deadlocked>("deadlock", "blocks forever without polling", true),
                      },
                      {1, 2},
                      true});
    return suites;
}

}  // namespace

const std::vector<suite>& all_suites() {
    static const std::vector<suite> suites = make_suites();
    return suites;
}

const suite* find_suite(const std::string& name) {
    for (const auto& s : all_suites())
        if (s.name == name) return &s;
    return nullptr;
}

namespace {
bool glob_one(const char* p, const char* s) {
    if (*p == '\0') return *s == '\0';
    if (*p == '*') return glob_one(p + 1, s) || (*s != '\0' && glob_one(p, s + 1));
    if (*s != '\0' && (*p == '?' || *p == *s)) return glob_one(p + 1, s + 1);
    return false;
}
}  // namespace

bool glob_match(const std::string& patterns, const std::string& name) {
    std::size_t start = 0;
    for (;;) {
        const auto comma = patterns.find(',', start);
        const std::string one = patterns.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (glob_one(one.c_str(), name.c_str())) return true;
        if (comma == std::string::npos) return false;
        start = comma + 1;
    }
}

}  // namespace contend::lab
