// The sync suite's pool rows: N tasks share one lock on a contend::thread_pool of 2 workers
// (N = the cell's worker count), each round a wait outside the lock (a stand-in for I/O:
// 0 or 400 us), then a critical section that waits 100 us holding the lock. One operation is
// one round.
//  - async_mutex: the tasks are coroutines, the lock a contend::async_mutex, the waits the
//    pool's timers: a task that waits, for the lock or the time, holds no worker.
//  - blocking: the tasks are pool items, the lock a contend::mutex, the waits nanosleep: a
//    task that waits blocks its worker. An item runs one round and posts the next, so the N
//    tasks take turns on the two workers.
// With nothing outside the lock, both are bound by the critical section, one at a time. The
// wait outside is where they part: the blocking tasks' waits take turns on two workers,
// the coroutines' all overlap. With enough tasks a blocking round costs a worker the wait
// outside and the held one, two workers sharing it: (O + C) / 2 per round, against the
// coroutines' C (the held wait, one at a time). So the ratio is (O + C) / 2C: 1 at O <= C,
// 2.5 at O = 4C, this row's.
#include <sys/prctl.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "contend/async_mutex.hpp"
#include "contend/event.hpp"
#include "contend/mutex.hpp"
#include "contend/thread_pool.hpp"
#include "suites/pool_workload.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

constexpr std::chrono::microseconds held_wait{100};

// A coroutine started at once that nobody awaits; it frees itself at its end.
struct detached_task {
    struct promise_type {
        detached_task get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

// co_await pool_wait{pool, d}: resumes on the pool once d has passed (one of its timers).
struct pool_wait {
    thread_pool& pool;
    std::chrono::microseconds delay;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const {
        pool.post_after(delay, [h] { h.resume(); });
    }
    void await_resume() const noexcept {}
};

// A blocking wait as punctual as the pool's timers: the timer thread sleeps with 1 us of
// timer slack (src/pool/timer_queue.cpp), so the blocking tasks' worker does too, and the
// rows differ in who waits, not in how late a wait ends (with the default 50 us a 100 us
// nanosleep took 170 us, median, on the 2-vCPU AMD EPYC VM).
void sleep_for(std::chrono::microseconds d) {
    thread_local const bool punctual = prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL) == 0;
    (void)punctual;
    const timespec ts{0, static_cast<long>(std::chrono::nanoseconds(d).count())};
    nanosleep(&ts, nullptr);
}

thread_pool_options two_workers() {
    thread_pool_options o;
    o.min_threads = o.max_threads = 2;
    o.hill_climbing = false;
    o.name = "lab-lock-pool";
    return o;
}

template <bool Async>
class shared_lock_tasks final : public workload {
public:
    explicit shared_lock_tasks(std::chrono::microseconds outside) : outside_(outside) {}

    void reset() override {
        claimed_.store(0);
        rounds_ = 0;
        overlaps_.store(0);
        cpu_ns_ = 0;
    }

    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker != 0) return 0;  // the pool's workers run the tasks; harness worker 0 starts them
        if (!pool_) pool_ = std::make_unique<thread_pool>(two_workers());
        const std::size_t tasks = progress.size();
        total_ = ops * tasks;
        finished_.store(0);
        all_finished_.reset();
        stopping_ = &stop;
        tasks_ = tasks;
        const double cpu0 = pool_bench::process_cpu_ns();
        for (std::size_t i = 0; i < tasks; ++i) start_task();
        while (!all_finished_.wait_for(std::chrono::milliseconds(1))) {
            progress[0].value.store(claimed_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        }
        cpu_ns_ = pool_bench::process_cpu_ns() - cpu0;
        const std::uint64_t done = rounds_;  // every task has finished: no round is running
        progress[0].value.store(done, std::memory_order_relaxed);
        return done;
    }

    check_result check(const std::vector<std::uint64_t>& completed) override {
        if (overlaps_.load() != 0)
            return {"mutual_exclusion", std::to_string(overlaps_.load()) + " rounds found another in the lock"};
        if (completed.empty() || completed[0] != rounds_)
            return {"wrong_count", "the lock's counter says " + std::to_string(rounds_) + " rounds"};
        return {};
    }

    void measure(const repetition_facts& facts, metric_list& out) override {
        out.emplace_back("rounds_per_ms",
                         facts.wall_ns > 0 ? static_cast<double>(facts.completed) / (facts.wall_ns / 1e6) : 0);
    }
    double cpu_ns(const repetition_facts&) const override { return cpu_ns_; }

private:
    // A round to run, unless the repetition has its rounds or was stopped.
    bool claim() {
        if (stopping_->load(std::memory_order_relaxed)) return false;
        return claimed_.fetch_add(1, std::memory_order_relaxed) < total_;
    }
    void task_done() {
        if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks_) all_finished_.set();
    }
    void enter() {
        if (inside_.fetch_add(1, std::memory_order_relaxed) != 0) overlaps_.fetch_add(1);
    }
    void leave() {
        ++rounds_;
        inside_.fetch_sub(1, std::memory_order_relaxed);
    }

    void start_task() {
        if constexpr (Async) {
            coroutine_task();
        } else {
            pool_->post([this] { blocking_round(); });
        }
    }

    detached_task coroutine_task() {
        co_await pool_->schedule();
        while (claim()) {
            if (outside_.count() > 0) co_await pool_wait{*pool_, outside_};
            auto guard = co_await async_lock_.scoped_lock();
            enter();
            co_await pool_wait{*pool_, held_wait};
            leave();
        }
        task_done();
    }

    void blocking_round() {
        if (!claim()) {
            task_done();
            return;
        }
        if (outside_.count() > 0) sleep_for(outside_);
        {
            std::lock_guard guard(blocking_lock_);
            enter();
            sleep_for(held_wait);
            leave();
        }
        pool_->post([this] { blocking_round(); });
    }

    const std::chrono::microseconds outside_;
    async_mutex async_lock_;
    contend::mutex blocking_lock_;
    std::uint64_t rounds_ = 0;  // under the lock
    alignas(cache_line_size) std::atomic<std::uint64_t> claimed_{0};
    alignas(cache_line_size) std::atomic<int> inside_{0};
    std::atomic<std::uint64_t> overlaps_{0};
    std::atomic<std::size_t> finished_{0};
    manual_reset_event all_finished_;
    std::uint64_t total_ = 0;
    std::size_t tasks_ = 0;
    const std::atomic<bool>* stopping_ = nullptr;
    double cpu_ns_ = 0;
    std::unique_ptr<thread_pool> pool_;  // last: destroyed first, running what is left
};

template <bool Async>
contender tasks_row(const std::string& name, const std::string& description, std::chrono::microseconds outside) {
    contender c;
    c.name = name;
    c.description = description;
    c.is_lock = false;
    c.workload_type = demangled_type_name<shared_lock_tasks<Async>>();
    c.operation = "round";
    c.params = {{"outside_us", std::to_string(outside.count())}};
    c.make = [outside] { return std::make_unique<shared_lock_tasks<Async>>(outside); };
    return c;
}

}  // namespace

void append_async_lock_rows(std::vector<contender>& out) {
    for (const auto outside : {std::chrono::microseconds(0), std::chrono::microseconds(400)}) {
        out.push_back(tasks_row<true>("async_mutex_tasks",
                                      "coroutines on a 2-worker contend::thread_pool sharing a contend::async_mutex, "
                                      "holding it across a 100 us timer",
                                      outside));
        out.push_back(tasks_row<false>("blocking_mutex_tasks",
                                       "items on a 2-worker contend::thread_pool sharing a contend::mutex, holding it "
                                       "across a 100 us nanosleep",
                                       outside));
    }
}

}  // namespace contend::lab
