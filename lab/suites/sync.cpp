// The sync suite: the rest of the toolbox against the standard library's and the platform's
// own. Rows: sync/<primitive>_<kind>/workers:N.
//   - ring: N semaphores in a ring, one permit going round (worker i acquires its own and
//     releases the next's): one operation is one turn, a release that wakes the next worker;
//     at 2 workers a ping-pong.
//   - buffer: a bounded buffer of 4 slots, half the workers producing and half consuming
//     (an odd one out produces) through a "free" and a "full" semaphore: one operation is
//     one item put or taken.
//   - barrier: every worker arrives and waits, phase after phase: one operation is one
//     worker's phase.
//   - once: call_once on a flag whose call has run: the hot path every later caller takes.
//   - async_mutex_tasks / blocking_mutex_tasks: N tasks sharing one lock on a 2-worker pool,
//     holding it across a 100 us wait (async_lock_rows.cpp).
#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <utility>
#include <vector>

#include "contend/barrier.hpp"
#include "contend/cache_padded.hpp"
#include "contend/once.hpp"
#include "contend/semaphore.hpp"
#include "suites/async_lock_rows.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// The semaphores behind one interface: acquire, release(n); made with an initial count.
struct contend_sem {
    contend::counting_semaphore<> s;
    explicit contend_sem(int n) : s(n) {}
    void acquire() { s.acquire(); }
    void release(int n) { s.release(n); }
};
struct std_sem {
    std::counting_semaphore<> s;
    explicit std_sem(int n) : s(n) {}
    void acquire() { s.acquire(); }
    void release(int n) { s.release(n); }
};
struct posix_sem {
    sem_t s;
    explicit posix_sem(int n) { sem_init(&s, 0, static_cast<unsigned>(n)); }
    ~posix_sem() { sem_destroy(&s); }
    posix_sem(const posix_sem&) = delete;
    posix_sem& operator=(const posix_sem&) = delete;
    void acquire() {
        while (sem_wait(&s) != 0) {
        }
    }
    void release(int n) {
        for (int i = 0; i < n; ++i) sem_post(&s);
    }
};

// What a workload builds per cell once it knows the worker count, which the harness tells
// only through run()'s progress counters: the first repetition's first worker builds it,
// every later reset() rebuilds it for the same count, outside the timed interval.
template <class Built>
class per_cell {
public:
    Built& get(std::size_t workers) {
        if (workers_.load(std::memory_order_acquire) != workers) {
            std::lock_guard guard(lock_);
            if (workers_.load(std::memory_order_relaxed) != workers) {
                built_ = std::make_unique<Built>(workers);
                workers_.store(workers, std::memory_order_release);
            }
        }
        return *built_;
    }
    void rebuild() {
        const std::size_t n = workers_.load(std::memory_order_relaxed);
        if (n != 0) built_ = std::make_unique<Built>(n);
    }

private:
    std::mutex lock_;
    std::atomic<std::size_t> workers_{0};
    std::unique_ptr<Built> built_;
};

// The ring's semaphores, the first holding the permit.
template <class Sem>
struct ring_sems {
    std::vector<std::unique_ptr<contend::cache_padded<Sem>>> sems;
    explicit ring_sems(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            sems.push_back(std::make_unique<contend::cache_padded<Sem>>(std::in_place, i == 0 ? 1 : 0));
    }
};

// The ring. The worker that stops (its operations done, or the stop flag) passes the permit
// on with quit_ set, and each worker that then gets it passes it on and leaves.
template <class Sem>
class ring_workload final : public counting_workload {
public:
    void reset() override {
        built_.rebuild();
        turns_ = 0;
        quit_.store(false);
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& mine = progress[static_cast<std::size_t>(worker)].value;
        auto& ring = built_.get(progress.size()).sems;
        Sem& own = ring[static_cast<std::size_t>(worker)]->value;
        Sem& next = ring[(static_cast<std::size_t>(worker) + 1) % ring.size()]->value;
        std::uint64_t done = 0;
        for (;;) {
            own.acquire();
            if (quit_.load(std::memory_order_relaxed)) {
                next.release(1);
                break;
            }
            ++turns_;  // only the permit's holder writes it
            ++done;
            if (done % poll_every == 0) mine.store(done, std::memory_order_relaxed);
            const bool leave = done >= ops || stop.load(std::memory_order_relaxed);
            if (leave) quit_.store(true, std::memory_order_relaxed);
            next.release(1);
            if (leave) break;
        }
        mine.store(done, std::memory_order_relaxed);
        return done;
    }
    std::uint64_t observed_total() override { return turns_; }

private:
    per_cell<ring_sems<Sem>> built_;
    std::uint64_t turns_ = 0;
    std::atomic<bool> quit_{false};
};

// The bounded buffer: 4 slots.
constexpr int buffer_slots = 4;
template <class Sem>
struct buffer_sems {
    contend::cache_padded<Sem> free_slots{std::in_place, buffer_slots};
    contend::cache_padded<Sem> full_slots{std::in_place, 0};
    explicit buffer_sems(std::size_t) {}
};

// The repetition ends once ops x workers items have moved, whoever moved them. A worker that
// stops sets quit_ and adds a permit per worker to both semaphores, so that
// every worker blocked in an acquire, or about to be, comes back, sees quit_ and leaves.
template <class Sem>
class buffer_workload final : public counting_workload {
public:
    void reset() override {
        built_.rebuild();
        moved_.store(0);
        quit_.store(false);
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& mine = progress[static_cast<std::size_t>(worker)].value;
        const int n = static_cast<int>(progress.size());
        auto& b = built_.get(progress.size());
        const bool producer = worker % 2 == 0;
        Sem& take = producer ? b.free_slots.value : b.full_slots.value;
        Sem& give = producer ? b.full_slots.value : b.free_slots.value;
        std::uint64_t done = 0;
        for (;;) {
            if (n == 1) {  // alone: put an item, then take it back (uncontended)
                b.free_slots.value.acquire();
                b.full_slots.value.release(1);
                b.full_slots.value.acquire();
                moved_.fetch_add(1, std::memory_order_relaxed);
                ++done;
                b.free_slots.value.release(1);
                if (done % poll_every == 0) mine.store(done, std::memory_order_relaxed);
                if (done >= ops || stop.load(std::memory_order_relaxed)) break;
                continue;
            }
            take.acquire();
            if (quit_.load(std::memory_order_relaxed)) break;
            const std::uint64_t moved = moved_.fetch_add(1, std::memory_order_relaxed) + 1;
            ++done;
            give.release(1);
            if (done % poll_every == 0) mine.store(done, std::memory_order_relaxed);
            // The repetition's items are counted all together: a semaphore that lets some
            // workers move more items than others (barging) must not end it early or late.
            if (moved >= ops * static_cast<std::uint64_t>(n) || stop.load(std::memory_order_relaxed)) {
                if (!quit_.exchange(true)) {
                    b.free_slots.value.release(n);
                    b.full_slots.value.release(n);
                }
                break;
            }
        }
        mine.store(done, std::memory_order_relaxed);
        return done;
    }
    std::uint64_t observed_total() override { return moved_.load(); }

private:
    per_cell<buffer_sems<Sem>> built_;
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> moved_{0};
    alignas(contend::cache_line_size) std::atomic<bool> quit_{false};
};

// The barriers behind one interface: arrive_and_wait.
struct contend_barrier {
    contend::barrier<> b;
    explicit contend_barrier(std::size_t n) : b(static_cast<std::ptrdiff_t>(n)) {}
    void arrive_and_wait() { b.arrive_and_wait(); }
};
struct std_barrier {
    std::barrier<> b;
    explicit std_barrier(std::size_t n) : b(static_cast<std::ptrdiff_t>(n)) {}
    void arrive_and_wait() { b.arrive_and_wait(); }
};
struct posix_barrier {
    pthread_barrier_t b;
    explicit posix_barrier(std::size_t n) { pthread_barrier_init(&b, nullptr, static_cast<unsigned>(n)); }
    ~posix_barrier() { pthread_barrier_destroy(&b); }
    posix_barrier(const posix_barrier&) = delete;
    posix_barrier& operator=(const posix_barrier&) = delete;
    void arrive_and_wait() { pthread_barrier_wait(&b); }
};

// Phases. Worker 0 decides when all stop: before it arrives in phase k it writes k to
// stop_after_; every worker leaves after the phase stop_after_ names, which it can read only
// once that phase is over (a value read earlier is a later phase's, or none).
template <class Barrier>
class barrier_workload final : public counting_workload {
public:
    void reset() override {
        built_.rebuild();
        stop_after_.store(none);
        phases_ = 0;
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& mine = progress[static_cast<std::size_t>(worker)].value;
        Barrier& b = built_.get(progress.size());
        std::uint64_t phase = 0;
        for (;; ++phase) {
            if (worker == 0 && (phase + 1 >= ops || stop.load(std::memory_order_relaxed)) &&
                stop_after_.load(std::memory_order_relaxed) == none)
                stop_after_.store(phase, std::memory_order_relaxed);
            b.arrive_and_wait();
            if (worker == 0) ++phases_;
            if (phase % poll_every == 0) mine.store(phase + 1, std::memory_order_relaxed);
            if (stop_after_.load(std::memory_order_relaxed) <= phase) break;
        }
        mine.store(phase + 1, std::memory_order_relaxed);
        if (worker == 0) workers_ = progress.size();
        return phase + 1;
    }
    std::uint64_t observed_total() override { return phases_ * workers_; }

private:
    static constexpr std::uint64_t none = ~std::uint64_t{0};
    per_cell<Barrier> built_;
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> stop_after_{none};
    std::uint64_t phases_ = 0;  // worker 0's
    std::size_t workers_ = 0;  // worker 0's
};

// call_once's hot path: the call made in reset(), every operation a call_once that finds it
// done. Each flag counts the calls made on it, which the check requires to be one.
struct contend_once {
    contend::once_flag flag;
    std::atomic<int> made{0};
    void call() {
        contend::call_once(flag, [this] { made.fetch_add(1, std::memory_order_relaxed); });
    }
    int calls() const { return made.load(); }
};
struct std_once {
    std::once_flag flag;
    std::atomic<int> made{0};
    void call() {
        std::call_once(flag, [this] { made.fetch_add(1, std::memory_order_relaxed); });
    }
    int calls() const { return made.load(); }
};
// pthread_once's routine takes no argument: it counts in one global, and each flag
// remembers where the count stood when it was made.
std::atomic<int> posix_once_calls{0};
void posix_once_init() { posix_once_calls.fetch_add(1, std::memory_order_relaxed); }
struct posix_once {
    pthread_once_t flag = PTHREAD_ONCE_INIT;
    int before = posix_once_calls.load();
    void call() { pthread_once(&flag, posix_once_init); }
    int calls() const { return posix_once_calls.load() - before; }
};

template <class Once>
class once_workload final : public workload {
public:
    void reset() override {
        once_ = std::make_unique<contend::cache_padded<Once>>();
        once_->value.call();
        total_.store(0);
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        Once& o = once_->value;
        const std::uint64_t done = run_polled(worker, ops, stop, progress, [&] { o.call(); });
        total_.fetch_add(done, std::memory_order_relaxed);
        return done;
    }
    check_result check(const std::vector<std::uint64_t>& completed) override {
        const int calls = once_->value.calls();
        if (calls != 1) return {"wrong_count", "the once call ran " + std::to_string(calls) + " times, expected once"};
        std::uint64_t sum = 0;
        for (const auto c : completed) sum += c;
        if (sum != total_.load())
            return {"wrong_count",
                    "the workers counted " + std::to_string(total_.load()) + " calls, expected " + std::to_string(sum)};
        return {};
    }

private:
    std::unique_ptr<contend::cache_padded<Once>> once_;
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> total_{0};
};

template <class Workload>
contender row(const std::string& name, const std::string& description, const std::string& operation) {
    contender c;
    c.name = name;
    c.description = description;
    c.is_lock = false;
    c.workload_type = demangled_type_name<Workload>();
    c.operation = operation;
    c.make = [] { return std::make_unique<Workload>(); };
    return c;
}

}  // namespace

suite make_sync_suite() {
    suite s{"sync",
            "semaphores, barriers and call_once against the standard library's and the platform's: a ring of "
            "semaphores passing one permit, a bounded buffer of 4 slots, a barrier's phases, call_once's hot path; "
            "and tasks sharing an async_mutex on a 2-worker pool against a blocking mutex",
            {},
            {2, 4, 16, 64}};
    s.contenders.push_back(row<ring_workload<contend_sem>>(
        "contend_semaphore_ring", "contend::counting_semaphore, a ring passing one permit", "turn"));
    s.contenders.push_back(row<ring_workload<std_sem>>("std_semaphore_ring",
                                                       "std::counting_semaphore, a ring passing one permit", "turn"));
    s.contenders.push_back(
        row<ring_workload<posix_sem>>("sem_t_ring", "POSIX sem_t (glibc), a ring passing one permit", "turn"));
    s.contenders.push_back(row<buffer_workload<contend_sem>>(
        "contend_semaphore_buffer", "contend::counting_semaphore, a bounded buffer of 4 slots", "item"));
    s.contenders.push_back(row<buffer_workload<std_sem>>(
        "std_semaphore_buffer", "std::counting_semaphore, a bounded buffer of 4 slots", "item"));
    s.contenders.push_back(
        row<buffer_workload<posix_sem>>("sem_t_buffer", "POSIX sem_t (glibc), a bounded buffer of 4 slots", "item"));
    s.contenders.push_back(
        row<barrier_workload<contend_barrier>>("contend_barrier", "contend::barrier, arrive_and_wait", "phase"));
    s.contenders.push_back(row<barrier_workload<std_barrier>>("std_barrier", "std::barrier, arrive_and_wait", "phase"));
    s.contenders.push_back(row<barrier_workload<posix_barrier>>(
        "pthread_barrier", "pthread_barrier_t (glibc), pthread_barrier_wait", "phase"));
    s.contenders.push_back(
        row<once_workload<contend_once>>("contend_call_once", "contend::call_once on a done flag", "call"));
    s.contenders.push_back(row<once_workload<std_once>>("std_call_once", "std::call_once on a done flag", "call"));
    s.contenders.push_back(
        row<once_workload<posix_once>>("pthread_once", "pthread_once on a done pthread_once_t", "call"));
    append_async_lock_rows(s.contenders);
    return s;
}

}  // namespace contend::lab
