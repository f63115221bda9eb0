// The lock family's micro rows that the lab (`contend bench`) cannot express: a bare
// lock+unlock loop with no harness around it, and models of alternative designs, which are
// not locks anyone should use and so are no lab contenders. Everything else moved to the lab:
// its counter suite runs these locks (thin_lock and contend_mutex included) at 1 to 64
// workers, and its hold suite the long critical sections (0, 1, 20 and 200 us).
//
//   uncontended/<lock>         lock+unlock on one thread, for every lock of the family;
//                              bare_cas_pair is the physical floor: one CAS-acquire and one
//                              release store; thin_lock_inflated and mutex_via_index split the
//                              inflated thin_lock's cost; model_mutex_bits_in_word prices an
//                              alternative design of it; bare_cas_cas_pair (CAS to acquire and
//                              to release) is the floor of a lock whose release must be a
//                              read-modify-write, beside the reader-writer locks' two sides
//   counter/<lock>/threads:N   N = 2 and 64: the inflated thin_lock in parts (mutex_via_index,
//                              mutex_with_owner[_not_cleared], mutex_with_thread_owner) beside
//                              thin_lock and contend_mutex, measured the same way so that
//                              the rows of one run compare; N threads increment one plain
//                              counter under the lock (each run calibrated to >= 50 ms);
//                              ns_per_op is wall time per completed increment (aggregate, the
//                              study's metric), cpu_ns_per_op the CPU time of all threads per
//                              increment
//   ping_pong/<pair>           two threads take turns through wait/notify under the lock
//                              (contend::mutex or std::mutex with their condition
//                              variables, thin_lock's wait/notify_one); ns_per_turn is the
//                              wall time per turn: a wake-up and a pass of the lock (the lab
//                              has no wait/notify suite)
// For the contended rows, "Time" is the wall time of one whole run.
//
// The lock word and the counter sit on separate cache lines, as in the study, so waiters
// probing the lock do not fight the holder over the payload line.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contend/condition_variable.hpp"
#include "contend/internal/thread_id.hpp"
#include "contend/internal/waiter_slots.hpp"
#include "contend/mutex.hpp"
#include "contend/shared_mutex.hpp"
#include "contend/spin_lock.hpp"
#include "contend/thin_lock.hpp"

namespace {

struct bare_cas_pair {
    std::atomic<std::uint8_t> state{0};
    void lock() noexcept {
        std::uint8_t expected = 0;
        while (!state.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
            expected = 0;
    }
    void unlock() noexcept { state.store(0, std::memory_order_release); }
};

// Two locked instructions, the floor of a lock whose release must be a read-modify-write
// (a reader-writer lock's reader count): CAS to acquire, CAS to release.
struct bare_cas_cas_pair {
    std::atomic<std::uint8_t> state{0};
    void lock() noexcept {
        std::uint8_t expected = 0;
        while (!state.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
            expected = 0;
    }
    void unlock() noexcept {
        std::uint8_t expected = 1;
        state.compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed);
    }
};

// A reader-writer lock taken for reading, as lock()/unlock().
template <class SharedLock>
struct read_side {
    SharedLock l;
    void lock() { l.lock_shared(); }
    void unlock() { l.unlock_shared(); }
};

template <class Lock>
struct alignas(64) shared_state {
    alignas(64) Lock lock;
    alignas(64) std::uint64_t counter = 0;
};

// A thin_lock inflated beforehand (re-entered past its 63 thin levels), left free: lock and
// unlock then take the inline fat path of thin_lock.hpp.
struct inflated_thin_lock {
    contend::thin_lock l;
    inflated_thin_lock() {
        for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.lock();
        for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.unlock();
    }
    void lock() { l.lock(); }
    void unlock() { l.unlock(); }
};

// Only the lookup of that path: a contend::mutex found, on every lock and unlock, through an
// index read from a header word, as the inflated thin_lock finds its fat lock. Against
// uncontended/contend_mutex it prices the load that sits before the mutex's CAS; against
// uncontended/thin_lock_inflated, what the thread id and the owner bookkeeping add.
struct mutex_via_index {
    struct alignas(64) entry {
        contend::mutex m;
    };
    static inline entry table[64];
    std::atomic<std::uint32_t> word{0x8000'0000u | 17};
    contend::mutex& find() { return table[word.load(std::memory_order_relaxed) & 0x7FFF'FFFFu].m; }
    void lock() { find().lock(); }
    void unlock() { find().unlock(); }
};

// A model, not a lock anyone should use: the design that takes the lookup off the path
// before the CAS. The fat mutex's state bit sits in the header word itself, beside the
// index; the entry keeps only the owner (for the ownership check and recursion), and the
// release checks a waiter slot as contend::mutex does. It spins when contended and never
// parks, so only its uncontended row is registered: against uncontended/thin_lock_inflated
// it says whether that design would be cheaper on the path that matters.
struct alignas(64) model_entry {
    std::atomic<std::uint32_t> owner{0};
    std::uint32_t recursion = 0;
};
struct model_mutex_bits_in_word {
    using entry = model_entry;
    static constexpr std::uint32_t inflated = 0x8000'0000u;
    static constexpr std::uint32_t locked = 1;
    static inline entry table[64];
    std::atomic<std::uint32_t> word{inflated | (17u << 3)};
    static entry& entry_of(std::uint32_t w) { return table[(w >> 3) & 63]; }
    void lock() {
        const std::uint32_t me = contend::internal::compact_thread_id();
        for (;;) {
            std::uint32_t w = word.load(std::memory_order_relaxed);
            if (!(w & locked) && word.compare_exchange_strong(w, w | locked, std::memory_order_acquire)) [[likely]] {
                entry_of(w).owner.store(me, std::memory_order_relaxed);
                return;
            }
        }
    }
    void unlock() {
        const std::uint32_t me = contend::internal::compact_thread_id();
        const std::uint32_t w = word.load(std::memory_order_relaxed);
        entry& e = entry_of(w);
        if (!(w & locked) || e.owner.load(std::memory_order_relaxed) != me || e.recursion != 0) std::abort();
        e.owner.store(0, std::memory_order_relaxed);
        const auto& slot = contend::internal::waiter_slot_for(this);
        if (slot.load(std::memory_order_relaxed) != contend::internal::waiter_slot_light) std::abort();
        word.store(w & ~locked, std::memory_order_release);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (slot.load(std::memory_order_relaxed) != contend::internal::waiter_slot_light) std::abort();
    }
};

// The owner's bookkeeping alone, on a bare contend::mutex (no lookup): the owner set after
// the acquisition and checked and cleared before the release, as thin_lock's fat lock does,
// and, to price the clearing store, the same without it (unsafe: a stale owner would pass a
// later check; a model only).
template <bool ClearOwner>
struct mutex_with_owner {
    alignas(64) contend::mutex m;
    std::atomic<std::uint32_t> owner{0};
    std::uint32_t recursion = 0;
    void lock() {
        const std::uint32_t me = contend::internal::compact_thread_id();
        m.lock();
        owner.store(me, std::memory_order_relaxed);
    }
    void unlock() {
        const std::uint32_t me = contend::internal::compact_thread_id();
        if (owner.load(std::memory_order_relaxed) != me || recursion != 0) std::abort();
        if (ClearOwner) owner.store(0, std::memory_order_relaxed);
        m.unlock();
    }
};

// The alternative of keeping the owner with the thread instead of in the lock: each thread
// records the locks it holds on a small stack of its own, so the lock's shared line carries
// no owner stores at all; unlocking a lock that is not the thread's newest aborts (a model:
// thin_lock allows any release order).
struct thread_held_locks {
    static constexpr std::uint32_t capacity = 16;
    const void* lock[capacity];
    std::uint32_t depth = 0;
};
struct mutex_with_thread_owner {
    alignas(64) contend::mutex m;
    static inline thread_local thread_held_locks held;
    void lock() {
        m.lock();
        if (held.depth == thread_held_locks::capacity) std::abort();
        held.lock[held.depth++] = this;
    }
    void unlock() {
        thread_held_locks& h = held;
        if (h.depth == 0 || h.lock[h.depth - 1] != this) std::abort();
        --h.depth;
        m.unlock();
    }
};

template <class Lock>
void uncontended(benchmark::State& state) {
    static shared_state<Lock> s;
    for (auto _ : state) {
        s.lock.lock();
        s.lock.unlock();
    }
    benchmark::DoNotOptimize(s.counter);
}

// One timed run of `threads` workers doing `per_thread` acquisitions each. The clock runs
// from the moment a starting gate opens (all workers created and waiting on it) until the
// last worker finishes: averaging each thread's own time, as Google Benchmark's
// ->Threads() does, would flatter unfair locks whose favoured thread finishes early.
// CPU time is each worker's own thread CPU time, summed.
struct run_result {
    double wall_ns = 0;
    double cpu_ns = 0;
};

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <class Body>
run_result run_workers(int threads, std::uint64_t per_thread, Body body) {
    std::mutex gate_lock;
    std::condition_variable gate;
    bool open = false;
    int waiting = 0;
    std::atomic<double> cpu_total{0};
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            {
                // A parking gate, not a spinning one: 64 spinners on 2 cores would starve
                // the last arrival (the sleeping-spinlock study).
                std::unique_lock lk(gate_lock);
                ++waiting;
                gate.notify_all();
                gate.wait(lk, [&] { return open; });
            }
            const double cpu0 = thread_cpu_ns();
            for (std::uint64_t i = 0; i < per_thread; ++i) body();
            const double used = thread_cpu_ns() - cpu0;
            double cur = cpu_total.load();
            while (!cpu_total.compare_exchange_weak(cur, cur + used)) {
            }
        });
    }
    {
        std::unique_lock lk(gate_lock);
        gate.wait(lk, [&] { return waiting == threads; });
    }
    const auto t0 = std::chrono::steady_clock::now();
    {
        std::lock_guard lk(gate_lock);
        open = true;
    }
    gate.notify_all();
    for (auto& w : workers) w.join();
    const auto t1 = std::chrono::steady_clock::now();
    return {std::chrono::duration<double, std::nano>(t1 - t0).count(), cpu_total.load()};
}

// The sleeping-spinlock study's calibration: grow the work until one run lasts at least
// 50 ms, so that starting 64 threads at the gate and the last stragglers are a small part of
// the run.
constexpr double min_run_ns = 50e6;

template <class Body>
void run_contended(benchmark::State& state, std::uint64_t total_ops, Body body) {
    const int threads = static_cast<int>(state.range(0));
    std::uint64_t per_thread = total_ops / static_cast<std::uint64_t>(threads);
    for (;;) {
        const double wall = run_workers(threads, per_thread, body).wall_ns;
        if (wall >= min_run_ns) break;
        const double grow = wall > 0 ? min_run_ns * 1.2 / wall : 16.0;
        per_thread = static_cast<std::uint64_t>(static_cast<double>(per_thread) * (grow > 16.0 ? 16.0 : grow)) + 1;
    }
    double wall = 0, cpu = 0, ops = 0;
    for (auto _ : state) {
        const run_result r = run_workers(threads, per_thread, body);
        state.SetIterationTime(r.wall_ns * 1e-9);
        wall += r.wall_ns;
        cpu += r.cpu_ns;
        ops += static_cast<double>(per_thread) * threads;
    }
    state.counters["ns_per_op"] = wall / ops;
    state.counters["cpu_ns_per_op"] = cpu / ops;
    state.counters["ops_per_s"] = ops / (wall * 1e-9);
}

template <class Lock>
void counter(benchmark::State& state) {
    static shared_state<Lock> s;
    s.counter = 0;
    run_contended(state, 400'000, [] {
        s.lock.lock();
        ++s.counter;
        s.lock.unlock();
    });
}

// One player of ping_pong: takes `turns` turns of parity `parity`, each a wait for the
// other's turn, an increment and a notify, all under the lock.
template <class Mutex, class Cv>
struct cv_pair {
    Mutex m;
    Cv cv;
    long turn = 0;
    void play(long parity, long turns) {
        std::unique_lock lk(m);
        for (long r = 0; r < turns; ++r) {
            while (turn % 2 != parity) cv.wait(lk);
            ++turn;
            cv.notify_one();
        }
    }
};
struct thin_lock_pair {
    contend::thin_lock l;
    long turn = 0;
    void play(long parity, long turns) {
        l.lock();
        for (long r = 0; r < turns; ++r) {
            while (turn % 2 != parity) l.wait();
            ++turn;
            l.notify_one();
        }
        l.unlock();
    }
};

template <class Pair>
void ping_pong(benchmark::State& state) {
    constexpr long turns_each = 10'000;
    double wall = 0, turns = 0;
    for (auto _ : state) {
        Pair p;
        const auto t0 = std::chrono::steady_clock::now();
        std::thread other([&] { p.play(1, turns_each); });
        p.play(0, turns_each);
        other.join();
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(ns * 1e-9);
        wall += ns;
        turns += 2.0 * turns_each;
    }
    state.counters["ns_per_turn"] = wall / turns;
}

}  // namespace

int main(int argc, char** argv) {
    // For tuning experiments: CONTEND_MUTEX_SPIN=<rounds> overrides the mutex's spin limit.
    // glibc takes a non-atomic shortcut in pthread_mutex_lock while a process has never had
    // a second thread. Real users of a mutex are multi-threaded, so leave that mode first:
    // every row, including uncontended/std_mutex, then measures the atomic path.
    std::thread([] {}).join();
    if (const char* spin = std::getenv("CONTEND_MUTEX_SPIN"))
        contend::mutex::set_spin_limit(static_cast<std::uint32_t>(std::atoi(spin)));
    benchmark::RegisterBenchmark("uncontended/bare_cas_pair", uncontended<bare_cas_pair>);
    benchmark::RegisterBenchmark("uncontended/contend_mutex", uncontended<contend::mutex>);
    // The thin lock (the Monitor's header word) shares the mutex's fast-path design.
    benchmark::RegisterBenchmark("uncontended/thin_lock", uncontended<contend::thin_lock>);
    benchmark::RegisterBenchmark("uncontended/thin_lock_inflated", uncontended<inflated_thin_lock>);
    benchmark::RegisterBenchmark("uncontended/mutex_via_index", uncontended<mutex_via_index>);
    benchmark::RegisterBenchmark("uncontended/model_mutex_bits_in_word", uncontended<model_mutex_bits_in_word>);
    benchmark::RegisterBenchmark("uncontended/std_mutex", uncontended<std::mutex>);
    benchmark::RegisterBenchmark("uncontended/bare_cas_cas_pair", uncontended<bare_cas_cas_pair>);
    benchmark::RegisterBenchmark("uncontended/contend_shared_mutex_write", uncontended<contend::shared_mutex>);
    benchmark::RegisterBenchmark("uncontended/contend_shared_mutex_read",
                                 uncontended<read_side<contend::shared_mutex>>);
    benchmark::RegisterBenchmark("uncontended/std_shared_mutex_write", uncontended<std::shared_mutex>);
    benchmark::RegisterBenchmark("uncontended/std_shared_mutex_read", uncontended<read_side<std::shared_mutex>>);
    benchmark::RegisterBenchmark("uncontended/backoff_spin_lock", uncontended<contend::backoff_spin_lock>);
    benchmark::RegisterBenchmark("uncontended/sleeping_spin_lock", uncontended<contend::sleeping_spin_lock>);
    benchmark::RegisterBenchmark("uncontended/ttas_lock", uncontended<contend::ttas_lock>);
    benchmark::RegisterBenchmark("uncontended/ticket_lock", uncontended<contend::ticket_lock>);
    benchmark::RegisterBenchmark("uncontended/tas_lock", uncontended<contend::tas_lock>);
    // The inflated thin_lock's contended cost in parts, beside the two locks it sits between.
    for (const auto& [n, fn] : std::initializer_list<std::pair<const char*, void (*)(benchmark::State&)>>{
             {"contend_mutex", counter<contend::mutex>},
             {"thin_lock", counter<contend::thin_lock>},
             {"mutex_via_index", counter<mutex_via_index>},
             {"mutex_with_owner", counter<mutex_with_owner<true>>},
             {"mutex_with_owner_not_cleared", counter<mutex_with_owner<false>>},
             {"mutex_with_thread_owner", counter<mutex_with_thread_owner>}}) {
        benchmark::RegisterBenchmark((std::string("counter/") + n).c_str(), fn)
            ->ArgName("threads")
            ->Arg(2)
            ->Arg(64)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    }
    for (const auto& [n, fn] : std::initializer_list<std::pair<const char*, void (*)(benchmark::State&)>>{
             {"contend_mutex", ping_pong<cv_pair<contend::mutex, contend::condition_variable>>},
             {"std_mutex", ping_pong<cv_pair<std::mutex, std::condition_variable>>},
             {"thin_lock", ping_pong<thin_lock_pair>}})
        benchmark::RegisterBenchmark((std::string("ping_pong/") + n).c_str(), fn)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
