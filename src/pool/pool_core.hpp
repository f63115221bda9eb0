// The thread pool's shared state: workers, queues, counters. Internal; the public face is
// include/contend/thread_pool.hpp (thread_pool.cpp). The worker loop, the posting paths,
// draining and stopping are in pool_core.cpp, the gate thread (hill climbing, starvation)
// in gate_thread.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/condition_variable.hpp"
#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/internal/task.hpp"
#include "contend/mutex.hpp"
#include "contend/thread_pool.hpp"
#include "platform/fence_switch.hpp"
#include "pool/global_queue.hpp"
#include "pool/hill_climbing.hpp"
#include "pool/idle_stack.hpp"
#include "pool/os_thread.hpp"
#include "pool/outbox.hpp"
#include "pool/timer_queue.hpp"
#include "pool/wait_thread.hpp"
#include "pool/work_stealing_deque.hpp"

namespace contend::internal {

// No pool has more workers than this (the slot table is sized once).
inline constexpr std::size_t max_pool_threads = 32767;
// A worker's post()s wait in its outbox until this many are there, or another rule moves
// them to the global queue (pool_core.cpp). The same as the most a worker takes from the
// global queue at once: a batch goes in and comes out in one lock hold.
inline constexpr std::size_t outbox_capacity = 32;

struct pool_core;
struct worker;

// A worker's thread: an os_thread (a model thread in the model-checking build, whose start
// and join are scheduling points; docs/design/model-checking.md).
using worker_thread = os_thread;

// The worker the calling thread is, of whichever pool, or nullptr.
extern thread_local worker* current_worker;

struct worker {
    pool_core* core = nullptr;
    std::size_t index = 0;
    work_stealing_deque<task_node*> deque;
    worker_outbox<task_node*, outbox_capacity> outbox;  // its post()s on their way to the global queue
    idle_waiter idle;
    worker_thread thread;
    // Written by the owner only; read by stats and wait_idle.
    cache_padded<internal::atomic<std::uint64_t>> completed;
    cache_padded<internal::atomic<std::uint64_t>> posted;  // items this worker posted to this pool
    internal::atomic<std::uint64_t> steals{0};
    internal::atomic<bool> running_item{false};
    internal::atomic<bool> alive{false};
    internal::atomic<int> os_tid{0};  // the thread's kernel id while it runs (Linux), for the gate's CPU view
    internal::atomic<std::uint64_t> sleeps{0};  // times it went to sleep for want of work (owner writes)
    // Its placement (pool_core.cpp, "Two workers on one CPU"). Plain std::atomic, not the
    // model's: only a heuristic reads it, and a model pool never looks (it has no CPUs).
    std::atomic<int> cpu{-1};  // where it ran its last items; -1 while it has none to run (owner writes)
    std::atomic<std::uint64_t> moves{0};  // times it moved itself to a CPU none of the pool ran on (owner writes)
    // Owner-thread state.
    bool searching = false;
    std::uint32_t tick = 0;
    std::uint64_t rng = 0;
    int blocking_depth = 0;
    std::uint32_t items_since_look = 0;
    std::uint32_t look_every = 0;  // items between looks at its CPU; set when it starts
    // Items since it last asked whether its posts may go unfenced, and whether the pool was
    // saturated then (pool_core::maybe_unfence_posts).
    std::uint32_t items_since_quiet_look = 0;
    bool saturated_at_last_look = false;
};

struct pool_core {
    explicit pool_core(thread_pool* owner, thread_pool_options opts);
    ~pool_core();
    void shutdown();  // runs what is queued, stops every thread; idempotent
    bool shut_down = false;

    // Posting.
    void post(task_node* n, bool local);
    void post_urgent(task_node* n);  // timers and registered waits: served before the global queue
    void notify();  // a new item is visible: make sure some worker will look
    // notify() for an item a running worker made visible in its own outbox or deque, or
    // moved there: without the fence while posts_fence is lifted (pool_core.cpp, top).
    void notify_own();
    // A worker about to look for the last time before it sleeps, or the last searcher to
    // stop: restores posts_fence, with the process-wide barrier.
    void end_unfenced_posts();
    // Every quiet_look_every items: lifts posts_fence if the pool was saturated (no worker
    // searching or asleep) at this look and the last, and it has been restored for
    // fence_lift_hold_off at least.
    void maybe_unfence_posts(worker* self);

    // Workers.
    void worker_main(worker* self);
    bool watch_next_timer(worker* self);
    void look_at_placement(worker* self);
    task_node* find_work(worker* self);
    task_node* steal(worker* self);
    task_node* steal_from_outboxes(worker* self);
    bool take_from_global(worker* self, task_node*& out, std::size_t max);
    std::size_t flush_outbox(worker* self);  // to the global queue; returns how many moved (caller notifies)
    bool any_work_visible() const noexcept;
    std::size_t queued() const noexcept;
    void run_item(worker* self, task_node* n);
    void stop_searching(worker* self);
    // Whether an idle, searching worker may poll before it sleeps (Go's spinning rule).
    bool may_poll() const noexcept;
    bool try_retire(worker* self);
    void wake_one();
    std::size_t target_threads() const noexcept;
    void ensure_workers();  // start workers up to the target while work is queued
    // What spawn_worker does when the thread cannot start: return false (the pool carries
    // on with the workers it has, and tries again when work calls for one), or throw the
    // thread's std::system_error (the constructor, which must start min_threads).
    enum class start_failure { give_up, rethrow };
    bool spawn_worker(start_failure on_failure = start_failure::give_up);
    bool quiescent() const noexcept;
    std::uint64_t completed_sum() const noexcept;
    std::uint64_t sleeps_sum() const noexcept;
    void wait_idle();
    void begin_blocking(worker* w);
    void end_blocking(worker* w);
    // blocking_scope's two ends (thread_pool.hpp): open_blocking_scope counts the calling
    // worker as blocked and returns it, with the number of the item it runs (its completion
    // count), or returns nullptr off every pool's workers; close_blocking_scope ends the count
    // if it is called on that worker within that item (once the item has returned, run_item
    // has ended it already, and the worker's fields belong to another thread).
    static worker* open_blocking_scope(std::uint64_t& item) noexcept;
    static void close_blocking_scope(worker* w, std::uint64_t item);
    void adjust_goal(std::size_t to, const char* reason, double throughput);
    void gate_main();

    // What contend::thread_pool's members of the same names do (thread_pool.hpp states their
    // contracts); thread_pool.cpp forwards to these.
    bool set_min_threads(std::size_t n);
    bool set_max_threads(std::size_t n);
    bool work_waiting() const noexcept;
    thread_pool_stats stats() const;
    // Whether the calling thread is one of this pool's workers.
    bool on_own_worker() const noexcept;
    // The pool whose worker the calling thread is, or nullptr (thread_pool::current()).
    static thread_pool* current_owner() noexcept;
    // The thread_pool object is gone (destroyed from its own item): current_owner() says
    // nullptr from here on, on this pool's workers.
    void disown() noexcept;

    internal::atomic<thread_pool*> owner;  // nullptr once the pool was destroyed from its own item
    thread_pool_options options;

    internal::atomic<std::size_t> min_threads{0};
    internal::atomic<std::size_t> max_threads{0};
    internal::atomic<std::size_t> goal{0};  // workers the hill climber wants
    internal::atomic<std::size_t> blocked{0};  // workers inside a blocking_scope
    internal::atomic<std::size_t> alive{0};  // worker threads alive (or starting)
    internal::atomic<bool> stopping{false};

    // Whether heavy_fence() is at hand (platform/heavy_fence.hpp); without it posts are
    // always fenced.
    const bool may_unfence_posts;
    // Lifted: a worker's notify_own() is a compiler barrier, and whoever ends a search pays
    // the process-wide barrier first (end_unfenced_posts). pool_core.cpp, top, has the argument.
    // Read at every post; written when it is lifted or restored only.
    cache_padded<internal::fence_switch> posts_fence;

    global_queue<task_node*> global;
    global_queue<task_node*> urgent;
    idle_stack idle;
    cache_padded<internal::atomic<std::size_t>> searching;

    // Items posted, in stripes by posting thread (completions are counted per worker).
    static constexpr std::size_t post_stripes = 64;
    cache_padded<internal::atomic<std::uint64_t>> posted[post_stripes];

    // Worker slots: thieves scan [0, slots_used) without a lock; worker objects are never
    // freed before the pool, a slot's object is reused only after its old thread is joined.
    std::unique_ptr<internal::atomic<worker*>[]> slots;
    internal::atomic<std::size_t> slots_used{0};
    contend::mutex workers_lock;  // spawning, retiring, reusing slots
    std::vector<std::unique_ptr<worker>> workers;

    internal::atomic<std::uint64_t> unhandled_exceptions{0};
    internal::atomic<std::uint64_t> starvation_injections{0};
    internal::atomic<std::uint64_t> adjustments{0};
    internal::atomic<double> last_throughput{0};
    contend::mutex config_lock;  // set_min_threads / set_max_threads
    internal::atomic<bool> climber_reset{false};

    // wait_idle and the destructor's drain sleep here; a worker that runs dry notifies.
    contend::mutex idle_wait_lock;
    contend::condition_variable idle_wait_cv;
    internal::atomic<int> idle_waiters{0};

    // The gate thread sleeps on this between ticks; the destructor sets it to stop it.
    manual_reset_event gate_stop;
    os_thread gate;

    std::unique_ptr<timer_queue> timers;
    std::unique_ptr<wait_thread> waits;
};

}  // namespace contend::internal
