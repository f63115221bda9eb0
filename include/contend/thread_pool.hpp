// contend::thread_pool: a work-stealing pool with a global FIFO queue, hill climbing,
// starvation injection, timers, registered waits and coroutine scheduling.
//
// After .NET's portable thread pool (see docs/references.md, dotnet-runtime-portable-thread-pool):
//   - post() appends to a global FIFO queue (fairness between producers); post_local(),
//     called on a worker, pushes on that worker's own deque, which the owner pops LIFO
//     without a lock and idle workers steal from FIFO (src/pool/work_stealing_deque.hpp).
//   - post() called on one of this pool's workers (outside a blocking_scope) first gathers
//     the item in that worker's outbox, which joins the global queue in one piece: when it
//     holds 32 items, when the worker has nothing else to run, at least every 61 items the
//     worker runs, and when the worker enters a blocking_scope or retires. Idle workers
//     take from outboxes as from deques, so an item never waits there while a worker is
//     free; but a worker's posts may join the global queue behind items that other threads
//     posted after them. Each thread's posts join it in the order it made them. A worker
//     that runs out of work while every other worker is busy runs its outbox's items itself,
//     without the queue, when the queue is empty or once for each item that reaches its
//     head (the first worker to pass over that item; the next one takes it): an item at the
//     head waits for at most one such batch (up to 32 items), and in a busy pool whose items
//     post items each worker mostly runs its own, on its own CPU.
//   - A worker that finds no work polls the queues briefly (about 50 us, yielding its CPU
//     to any thread that wants it as it goes; at most half the awake workers poll at once,
//     the others sleep at once), then sleeps on a LIFO semaphore (the most
//     recently idle worker, whose cache is warmest, wakes first). A post wakes at most one
//     sleeper, and only when no worker is already searching: no thundering herd.
//   - Hill climbing moves the number of running workers between min_threads and
//     max_threads by the completion rate it observes (src/pool/hill_climbing.hpp).
//   - A gate thread adds a worker when queued work has made no progress for 500 ms
//     (blocked items starving the queue); blocking_scope asks for one at once.
//   - Timer and registered-wait callbacks go to a time-sensitive queue that workers serve
//     before the global queue, so a backed-up queue does not starve them.
//
// Every item posted before the destructor starts (and every item those items post) runs
// exactly once before it returns. Timers not yet due when it starts are discarded and
// registered waits end; a timer or wait that a draining item adds then is refused
// (post_after/post_at return 0 and destroy the callable, register_wait returns an inactive
// registration). An exception escaping an item goes to
// options.on_exception (or stderr) and the worker goes on; submit() puts it in the future.
//
// Destroying a pool from one of its own items (`delete pool` in an item) cannot wait for
// that item: the destructor throws std::logic_error, as wait_idle does, and the pool still
// ends, on a thread of its own that keeps the promise above (the item that threw included)
// and then frees it. The pool object is gone either way: the item must not touch it again.
// A destructor that throws ends the program where one may not (a unique_ptr's reset, a
// scope already unwinding an exception, a member of a class whose destructor is noexcept).
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "contend/event.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/task.hpp"

namespace contend {

// One decision of the hill climber, for tracing (thread_pool_options::on_adjustment).
struct hill_climbing_adjustment {
    std::size_t from_threads = 0;
    std::size_t to_threads = 0;
    double throughput = 0;  // completions per second measured at from_threads
    const char* reason = "";  // "probe", "climb", "revert", "starvation", "blocking"
};

struct thread_pool_options {
    // 0: std::thread::hardware_concurrency(), or max_threads if that was given and is lower.
    std::size_t min_threads = 0;
    std::size_t max_threads = 0;  // 0: max(min_threads, 4 * hardware threads, 64), at most 32,767
    std::string name = "contend";  // workers are "<name>-worker-N" at OS level (truncated to 15 bytes)
    bool hill_climbing = true;
    // A worker that finds another worker of this pool on its CPU while some CPU it may run
    // on has none moves itself there, its affinity left as it was (so the kernel may move it
    // again); a worker the program pinned to one CPU stays. The kernel balances threads per
    // CPU, not per program, and beside another program's busy thread it often leaves two
    // workers sharing one CPU. A move reads the worker's mask and puts it back after: an
    // affinity another thread sets for that worker meanwhile may be undone (set it in
    // on_thread_start, or turn this off). false: the kernel alone places the workers.
    bool spread_workers = true;
    std::function<void(std::exception_ptr)> on_exception;  // empty: print to stderr, go on
    // Tracing hooks; called on the thread concerned (start/stop) or the adjusting thread.
    // They must not throw.
    std::function<void(std::size_t worker_index)> on_thread_start;
    std::function<void(std::size_t worker_index)> on_thread_stop;
    std::function<void(const hill_climbing_adjustment&)> on_adjustment;
};

struct thread_pool_stats {
    std::size_t threads = 0;  // worker threads alive
    std::size_t active = 0;  // running an item now
    std::size_t idle = 0;  // alive, not running an item
    std::size_t global_queue_length = 0;  // global and time-sensitive queues, workers' outboxes
    std::size_t local_queue_length = 0;  // all workers' deques together
    std::uint64_t completed = 0;  // items that have finished (normally or by throwing)
    std::uint64_t steals = 0;
    std::uint64_t worker_moves = 0;  // times a worker moved off a CPU another worker ran on (spread_workers)
    std::uint64_t starvation_injections = 0;  // workers added by the gate thread
    std::uint64_t hill_climbing_adjustments = 0;
    double last_throughput = 0;  // completions/s in the hill climber's last sample
    std::size_t thread_goal = 0;  // workers the hill climber currently wants running
    std::size_t active_timers = 0;
    std::size_t registered_waits = 0;
    std::uint64_t unhandled_exceptions = 0;
    std::size_t min_threads = 0;
    std::size_t max_threads = 0;
    std::size_t blocked = 0;  // items inside a blocking_scope now (outermost scopes)
};

namespace internal {
class async_permits;
struct pool_core;
struct wait_record;
struct worker;
}  // namespace internal

// A registered wait (thread_pool::register_wait). Move-only. Destroying it, or calling
// unregister(), ends the wait: no callback is dispatched afterwards (one already handed to
// the pool may still run). Safe to destroy after the pool itself.
class wait_registration {
public:
    wait_registration() noexcept = default;
    wait_registration(wait_registration&&) noexcept = default;
    wait_registration& operator=(wait_registration&& other) noexcept;
    ~wait_registration();
    void unregister() noexcept;
    // False once unregistered, or once a `once` wait has fired.
    bool active() const noexcept;

private:
    friend class thread_pool;
    explicit wait_registration(std::shared_ptr<internal::wait_record> r) noexcept : record_(std::move(r)) {}
    std::shared_ptr<internal::wait_record> record_;
};

class thread_pool {
public:
    using timer_id = std::uint64_t;
    static constexpr std::chrono::steady_clock::duration no_timeout = std::chrono::steady_clock::duration::max();

    // Options left at their defaults take the environment's overrides, if set:
    // CONTEND_POOL_MIN_THREADS and CONTEND_POOL_MAX_THREADS (a count of 1 or more in decimal
    // digits only: no space, no sign), CONTEND_POOL_HILL_CLIMBING and
    // CONTEND_POOL_SPREAD_WORKERS (0/1/true/false/on/off).
    // Throws std::invalid_argument for max_threads < min_threads, counts above 32,767, or
    // an override that is not as above (the message names it). Starts min_threads workers
    // and the gate thread; if one cannot start, stops those it started and throws the
    // std::system_error ("contend::thread_pool 'NAME': a thread could not start: ...").
    explicit thread_pool(thread_pool_options options = {});
    // Throws std::logic_error on a worker of this pool (see the top of this header).
    ~thread_pool() noexcept(false);
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    template <class F>
    void post(F&& f) {
        post_node(internal::make_task(std::forward<F>(f)), false);
    }
    // On one of this pool's workers: that worker's deque. Elsewhere: the global queue.
    template <class F>
    void post_local(F&& f) {
        post_node(internal::make_task(std::forward<F>(f)), true);
    }
    template <class F>
    auto submit(F&& f) -> std::future<std::invoke_result_t<std::decay_t<F>>> {
        std::packaged_task<std::invoke_result_t<std::decay_t<F>>()> job(std::forward<F>(f));
        auto result = job.get_future();
        post_node(internal::make_task(std::move(job)), false);
        return result;
    }

    // co_await pool.schedule(): the coroutine continues on a worker (global queue).
    struct schedule_awaiter {
        thread_pool* pool;
        bool local;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) {
            pool->post_node(internal::make_task([h] { h.resume(); }), local);
        }
        void await_resume() const noexcept {}
    };
    schedule_awaiter schedule() noexcept { return {this, false}; }
    schedule_awaiter schedule_local() noexcept { return {this, true}; }

    // Runs f on the pool once the time has come (never earlier). Ids are never reused and
    // are unique across every pool of the process (another pool's id cancels nothing). A
    // delay or time too far off to represent in the steady clock's nanoseconds (no_timeout,
    // duration::max(), hours::max(), a steady time_point of hours' max()) means never; a
    // delay not positive (NaN too), now. Once the pool's destructor has begun, f is destroyed
    // without running and the result is 0.
    template <class Rep, class Period, class F>
    timer_id post_after(const std::chrono::duration<Rep, Period>& delay, F&& f) {
        return add_timer(internal::steady_after(internal::saturated_duration(delay)),
                         internal::make_task(std::forward<F>(f)));
    }
    template <class Duration, class F>
    timer_id post_at(const std::chrono::time_point<std::chrono::steady_clock, Duration>& when, F&& f) {
        return add_timer(internal::steady_deadline(when.time_since_epoch()), internal::make_task(std::forward<F>(f)));
    }
    // True only if the timer had not been dispatched yet (its callback will never run).
    // False for an id of another pool, and for every id once the destructor has begun
    // (pending timers are discarded then).
    bool cancel_timer(timer_id id);

    // Calls f(false) on the pool when the event is set, f(true) when `timeout` passes
    // first (no_timeout, or any duration too long for the steady clock's nanoseconds: never). once: at most one call;
    // otherwise the wait re-arms after each call and the timeout restarts. On an auto_reset_event a firing consumes the
    // set. Firings of one registration never overlap: the wait re-arms when the callback returns (or throws), so a
    // manual event left set fires again after each call, one call at a time; reset it in the callback, or use `once` or
    // an auto_reset_event, for one call per set. A set while the wait is disarmed is not lost (it fires on re-arm).
    // When a set and the timeout coincide, the set wins. The event must outlive the registration (or the pool):
    // unregistering clears a bit in the event's state word. Once the pool's destructor has begun, the registration
    // returned is inactive and f never runs.
    template <class Event, class F, class Rep, class Period>
    requires(std::is_same_v<Event, manual_reset_event> || std::is_same_v<Event, auto_reset_event>) wait_registration
        register_wait(Event& event, F&& f, const std::chrono::duration<Rep, Period>& timeout, bool once) {
        return register_wait_impl(&event, std::is_same_v<Event, auto_reset_event>,
                                  std::function<void(bool)>(std::forward<F>(f)), internal::saturated_duration(timeout),
                                  once);
    }

    bool set_min_threads(std::size_t n);  // false, nothing changed, if 0 or > max
    bool set_max_threads(std::size_t n);  // false, nothing changed, if 0 or < min
    // Until every item posted so far (and every item they post) has finished. Timers not yet
    // due are not waited for. Must not be called from a worker of this pool (throws
    // std::logic_error: it would wait for itself).
    void wait_idle();
    thread_pool_stats stats() const;

    // The pool whose worker the calling thread is, or nullptr.
    static thread_pool* current() noexcept;
    // On one of this pool's workers: whether an item waits that this worker would otherwise
    // run next (its own deque or outbox, the global or the time-sensitive queue). An item
    // that may wait a long time for something outside the pool (an event loop's poll)
    // blocks only while this is false, and otherwise polls without waiting and returns, so
    // that it never sits on work. Off the pool's workers: whether the global queues (the
    // workers' outboxes included) hold items.
    bool work_waiting() const noexcept;

private:
    friend class blocking_scope;
    friend class internal::async_permits;  // resumes a waiter with the node it holds: no allocation
    void post_node(internal::task_node* node, bool local);
    timer_id add_timer(std::chrono::steady_clock::time_point when, internal::task_node* node);
    wait_registration register_wait_impl(void* event, bool auto_reset, std::function<void(bool)> callback,
                                         std::chrono::steady_clock::duration timeout, bool once);

    std::unique_ptr<internal::pool_core> core_;
};

// RAII: on a pool worker, tells the pool this worker is about to block (a lock, I/O, a
// sleep). The pool starts or wakes another worker at once (bounded by max_threads) so the
// queued work goes on; when the scope ends, the extra worker retires once the work allows.
// Elsewhere it does nothing. Nesting is allowed; only the outermost scope counts.
// A scope belongs to the item that opened it, on that item's thread: it ends when it is
// destroyed there or when the item returns, whichever comes first. So a coroutine that
// suspends inside a scope and resumes elsewhere (another worker, another pool, a plain
// thread) stops counting as blocked when its item returns, and destroying the scope then
// changes nothing.
class blocking_scope {
public:
    blocking_scope() noexcept;
    ~blocking_scope();
    blocking_scope(const blocking_scope&) = delete;
    blocking_scope& operator=(const blocking_scope&) = delete;

private:
    internal::worker* worker_ = nullptr;  // the worker that opened it, or none
    std::uint64_t item_ = 0;  // which of that worker's items: its completion count then
};

}  // namespace contend
