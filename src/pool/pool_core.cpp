// pool_core (pool_core.hpp): posting, the worker loop, waking and retiring workers, draining
// and stopping. The public face, contend::thread_pool and blocking_scope, is thread_pool.cpp;
// the gate thread (hill climbing, starvation) is gate_thread.cpp.
//
// Waking without a herd (after Tokio's "searching" workers; see docs/references.md,
// tokio-scheduler): a worker that runs out of local work becomes a searcher (it polls the
// queues for a short while, if fewer than half the awake workers poll already, as Go's
// spinning threads do: may_poll()); a post wakes a sleeping worker only when no worker is
// searching, and the woken worker starts as a searcher, so a burst of posts wakes one
// thread, which wakes the next when it finds work, and so on: at most one wake-up per item
// found, none for items a polling worker takes.
//
// Outboxes: a worker's post() goes to its own outbox (src/pool/outbox.hpp), not straight to
// the global queue, so that a worker posting one item per item run does not move the
// queue's lock line between CPUs per item. The outbox moves to the global queue in one lock
// hold: when it is full (outbox_capacity), when its worker runs out of other work (before
// it takes from the global queue, in the same lock hold) unless the worker runs them itself
// first (once for each item at the queue's head: take_from_global), every
// global_check_interval items its worker runs, and before its worker blocks (blocking_scope)
// or retires. Meanwhile its items are not hidden: idle workers look in outboxes as in
// deques, and take half of one (steal_from_outboxes). So no worker idles while an item waits
// in an outbox; what an outbox delays is an item's place in the global FIFO, by at most 32
// of its worker's posts or 61 items its worker runs (docs/design/pool.md has the numbers and
// the history).
//
// Why no wake-up is lost. The places a worker looks for work are the time-sensitive and the
// global queues, every worker's deque and every worker's outbox; any_work_visible() reads
// them all. A worker about to sleep pushes itself on the idle stack, stops searching (an RMW
// on `searching`), issues a full fence and looks at all of them once more. A thread that
// makes an item visible in any of them (a post, and also a move: an outbox emptied into the
// global queue, a share of the global queue or of an outbox pushed on a deque, a retiring
// worker's hand-back) issues a full fence after it and reads `searching` and the idle count
// (notify()). With both fences seq_cst, either the worker's last look sees the item, or the
// poster sees the worker (idle, and wakes one; or still searching, and that worker's last
// look sees it). An item is out of sight only while one worker holds it: running it (then
// that worker looks again when it is done) or moving it (then the move notifies, as above).
// Besides, a worker that searches, sleeps or has retired has an empty outbox: it emptied
// it on the way (take_from_global runs before a worker finds nothing; try_retire flushes),
// and only its owner puts items in one; a worker in a blocking_scope flushed it on the way
// in and posts to the global queue while inside.
//
// Posts without the fence. Most notifications come from a running worker about its own
// outbox or deque, or a move into them (notify_own()): one an item in a pool whose items
// post items, where the fence cost about 6 ns of a 58 ns item on one worker (Intel Xeon VM).
// So while the switch `posts_fence` is lifted (on, below; platform/fence_switch.hpp),
// notify_own() has a compiler barrier in its place; the one that ends a search pays
// instead: a worker about to sleep (after its fence, before its last look) and the last
// searcher to stop (after its RMW, before it looks to pass the search on) turn it off and
// then issue heavy_fence(), the process-wide barrier
// (membarrier: every thread of the process running then executes a full barrier; one not
// running has passed a context switch). Against a poster that read `on`: the poster's
// barrier came after its item's store, which the looker then sees, or before its read of
// the switch, which would then have read `off`. Against a poster that read `on` after it
// was turned on again, by a store later than the looker's read of `off`: all of the
// looker's, the switch's and the poster's reads of `searching` and the idle count are
// seq_cst, so the poster's reads come after the looker's RMWs in their single total order,
// and the poster sees the looker idle and wakes it (or the last searcher gone). A poster
// that read `off` fenced, as before. A worker turns the switch on (maybe_unfence_posts)
// when, at two of its looks quiet_look_every items apart, no worker searched and none slept:
// in a pool that is never short of work, posts go unfenced, and one barrier is paid when
// that ends; in one whose workers sleep and wake all the time, the switch stays off and no
// barrier is paid (the barrier at every sleep cost the lab's burst rows 30 to 80 %: an
// interrupt on the CPU of every running thread). The looks read two lines the workers read
// anyway; a count of ended searches, an RMW on a shared line at every search's end, cost the
// lab's server rows 3 to 5 % (two alternating runs each way). And it stays off for
// fence_lift_hold_off after each end, so that a pool of many workers that is saturated at one
// look and short of work at the next pays at most one barrier per hold-off, not one per
// look of every worker. Without a process-wide barrier (heavy_fence_available()), always off.
//
// Two workers on one CPU. The kernel balances runnable threads per CPU, not per program:
// with 2 workers and another program's busy thread on 2 CPUs it settles on 2 + 1, and
// mostly on the pool's two together, each getting half a CPU while the other program's
// thread has a whole one (moving a thread would only mirror the imbalance, so its balancer
// seldom does). The pool then runs on one CPU and its workers preempt each other. So a
// worker looks at its CPU (current_thread_cpu, a nanosecond) every look_every items and at
// its first item after it ran dry, and says where it is in `cpu`; when an earlier worker
// says the same CPU and some CPU it may run on has no worker of the pool, it moves there
// (move_current_thread_to_free_cpu) and keeps its affinity as it was, so the kernel may
// move it again. Only the later of two moves, so that two do not swap. When every CPU it may
// use has a worker (more workers than CPUs, or a worker the program pinned) there is nothing
// to do, and it looks half as often each time, down to once in placement_look_most items.
// docs/design/pool.md, "Beside a co-tenant", has the measurements.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include "contend/internal/atomic.hpp"
#include "contend/internal/prefetch.hpp"
#include "contend/internal/thread_id.hpp"
#include "model/mutation.hpp"
#include "platform/background_threads.hpp"
#include "platform/heavy_fence.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"
#include "pool/os_thread.hpp"
#include "pool/pool_core.hpp"

namespace contend {
namespace internal {
thread_local worker* current_worker = nullptr;

namespace {

// A worker that found nothing polls every queue for this long before it sleeps, unless half
// the awake workers poll already (may_poll()): a look every ~250 ns, the CPU yielded as
// platform/spin_wait.hpp says. 50 us: a
// sleep costs the next poster a futex wake and this worker 16 to 19 us to run again (both
// 2-CPU VMs), so polling about a round trip's worth catches the next item of a steady
// stream without either, at most doubling what a sleep would have cost when none comes.
// How it was chosen: docs/design/pool.md.
// (The model-checking build's budget is its own: platform/yield.hpp.)
constexpr auto idle_poll_budget = internal::poll_budget(std::chrono::microseconds(50));
// A sleeping worker above min_threads retires after this long without work; never in the
// model-checking build, where a lost wake-up must leave a worker asleep for good
// (platform/yield.hpp).
constexpr auto idle_retire_after = internal::tidy_up_after(std::chrono::seconds(5));
// Tokio and Go look at the global queue first every 61st item (docs/references.md,
// tokio-scheduler), so that two items posting each other locally cannot keep a worker from
// the global queue forever.
constexpr std::uint32_t global_check_interval = 61;
// At most this many items move from the global queue to a worker's deque at once.
constexpr std::size_t global_batch_max = 32;
// A worker looks at its CPU every 64 items: a look reads the CPU number (about a
// nanosecond) and one line per worker, under a nanosecond an item for a pool of up to 64
// workers, whose cheapest items take tens of nanoseconds. A count of items, not a time, as
// the global queue's check is: a clock read per item would cost more than the look.
constexpr std::uint32_t placement_look_every = 64;
// A worker asks whether its posts may go unfenced every 4,096 items: the answer is yes when
// the pool was saturated (no worker searching or asleep) at this look and the last, and the
// first search to end after a yes costs a process-wide barrier (0.1 to 0.5 us on the 2-CPU
// VMs, and an interrupt on every CPU that runs a thread of the program): at most one per
// 4,096 items a worker runs. And not sooner than fence_lift_hold_off after the last barrier
// (platform/fence_switch.hpp): at most a thousand barriers a second in a pool of any size.
constexpr std::uint32_t quiet_look_every = 4096;
// While no CPU is free it looks half as often each time, down to this.
constexpr std::uint32_t placement_look_most = 65536;
// A worker that cannot tell its CPU (not Linux, the model-checking build) never looks.
constexpr std::uint32_t placement_never = UINT32_MAX;

std::size_t hardware_threads() noexcept {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : n;
}

// Reads a thread-count override: unset, the default; set, a count of 1 or more in decimal
// digits and nothing else (no space, no sign: not strtoull, which skips a leading space and
// takes a sign), else std::invalid_argument.
bool env_size(const char* name, std::size_t& out) {
    const char* v = std::getenv(name);
    if (v == nullptr) return false;
    const std::string s(v);
    std::size_t n = 0;
    bool valid = !s.empty();
    for (const char c : s) {
        if (c < '0' || c > '9') {
            valid = false;
            break;
        }
        // Held just past the most threads a pool may have, which the caller then refuses.
        n = std::min(n * 10 + static_cast<std::size_t>(c - '0'), max_pool_threads + 1);
    }
    if (!valid || n == 0)
        throw std::invalid_argument(std::string("contend::thread_pool: ") + name + " is not a count of threads (1 or " +
                                    "more, in decimal digits only): '" + s + "'");
    if (n > max_pool_threads)
        throw std::invalid_argument(std::string("contend::thread_pool: ") + name + " is above " +
                                    std::to_string(max_pool_threads) + ", the most threads a pool may have: '" + s +
                                    "'");
    out = n;
    return true;
}

bool env_bool(const char* name, bool& out) {
    const char* v = std::getenv(name);
    if (v == nullptr) return false;
    const std::string s(v);
    if (s == "1" || s == "true" || s == "on") out = true;
    else if (s == "0" || s == "false" || s == "off") out = false;
    else
        throw std::invalid_argument(std::string("contend::thread_pool: ") + name + " is not 0/1/true/false/on/off: '" +
                                    s + "'");
    return true;
}

std::uint64_t next_random(std::uint64_t& s) noexcept {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

std::string worker_name(const std::string& pool_name, std::size_t index) {
    // Linux keeps 15 bytes of a thread name: keep the "-worker-N" suffix whole and shorten
    // the pool's name in front of it.
    const std::string suffix = "-worker-" + std::to_string(index);
    const std::size_t room = suffix.size() < 15 ? 15 - suffix.size() : 0;
    return pool_name.substr(0, room) + suffix;
}

}  // namespace

pool_core::pool_core(thread_pool* o, thread_pool_options opts)
    : owner(o), options(std::move(opts)), may_unfence_posts(heavy_fence_available()) {
    // Overrides apply to fields left at their defaults.
    if (options.min_threads == 0) env_size("CONTEND_POOL_MIN_THREADS", options.min_threads);
    if (options.max_threads == 0) env_size("CONTEND_POOL_MAX_THREADS", options.max_threads);
    if (options.hill_climbing) env_bool("CONTEND_POOL_HILL_CLIMBING", options.hill_climbing);
    if (options.spread_workers) env_bool("CONTEND_POOL_SPREAD_WORKERS", options.spread_workers);

    // The default minimum is the CPU count, but never above a maximum that was given (by the
    // option or the override): CONTEND_POOL_MAX_THREADS=1 makes a one-thread pool.
    std::size_t min_n = options.min_threads;
    if (min_n == 0) {
        min_n = hardware_threads();
        if (options.max_threads != 0) min_n = std::min(min_n, options.max_threads);
    }
    std::size_t max_n = options.max_threads;
    if (max_n == 0) max_n = std::max({min_n, 4 * hardware_threads(), std::size_t{64}});
    max_n = std::min(max_n, max_pool_threads);
    if (min_n > max_pool_threads || options.max_threads > max_pool_threads)
        throw std::invalid_argument("contend::thread_pool: at most 32767 threads");
    if (max_n < min_n)
        throw std::invalid_argument("contend::thread_pool: max_threads (" + std::to_string(max_n) +
                                    ") is below min_threads (" + std::to_string(min_n) + ")");
    min_threads.store(min_n);
    max_threads.store(max_n);
    goal.store(min_n);

    slots = std::make_unique<internal::atomic<worker*>[]>(max_pool_threads);
    timers = std::make_unique<timer_queue>(options.name, [this](task_node* n) { post_urgent(n); });
    waits = std::make_unique<wait_thread>(options.name, [this](task_node* n) { post_urgent(n); });

    // A thread that cannot start fails the constructor, and the threads started before it
    // are stopped first: a thread object destroyed still joinable as the exception unwinds
    // would end the process (std::terminate).
    try {
        for (std::size_t i = 0; i < min_n; ++i) spawn_worker(start_failure::rethrow);
        // Not in the model-checking build (platform/background_threads.hpp): the gate's hill
        // climbing and starvation checks read real time and CPU use, outside the model.
        if constexpr (background_threads)
            gate = os_thread(options.name + "-gate", service_thread_stack, [this] { gate_main(); });
    } catch (const std::system_error& e) {
        shutdown();
        // what(): "contend::thread_pool 'NAME': a thread could not start: " and the reason.
        throw std::system_error(e.code(), "contend::thread_pool '" + options.name + "': a thread could not start");
    } catch (...) {
        shutdown();
        throw;
    }
}

pool_core::~pool_core() { shutdown(); }

void pool_core::shutdown() {
    if (shut_down) return;
    shut_down = true;
    // No more timer or wait callbacks: pending timers are discarded, waits end, and from
    // here on a new timer or wait is refused (thread_pool.hpp). The two stay alive, closed,
    // until the core goes: an item still running may add or cancel a timer or register a
    // wait while the pool drains.
    timers->close();
    waits->close();
    wait_idle();  // every item posted so far, and what they post, runs
    stopping.store(true, std::memory_order_seq_cst);
    gate_stop.set();
    gate.join();
    // Wake every sleeper; one about to sleep sees `stopping` after pushing itself.
    while (idle_waiter* iw = idle.pop()) {
        searching->fetch_add(1, std::memory_order_seq_cst);
        iw->wake.set();
    }
    std::vector<worker_thread> threads;
    {
        std::lock_guard guard(workers_lock);  // not held while joining: a worker may still want it
        for (auto& w : workers)
            if (w->thread.joinable()) threads.push_back(std::move(w->thread));
    }
    for (auto& t : threads) t.join();
    // Anything posted by an outside thread while we were stopping never ran: free it.
    task_node* n = nullptr;
    while (urgent.pop(n)) n->discard(n);
    while (global.pop(n)) n->discard(n);
    for (auto& w : workers) {
        while (w->deque.pop(n)) n->discard(n);
        while (w->outbox.take(&n, 1) == 1) n->discard(n);
    }
}

bool pool_core::on_own_worker() const noexcept { return current_worker != nullptr && current_worker->core == this; }

thread_pool* pool_core::current_owner() noexcept {
    return current_worker != nullptr ? current_worker->core->owner.load(std::memory_order_relaxed) : nullptr;
}

void pool_core::disown() noexcept { owner.store(nullptr, std::memory_order_relaxed); }

std::size_t pool_core::target_threads() const noexcept {
    const std::size_t g = std::max(goal.load(std::memory_order_relaxed), min_threads.load(std::memory_order_relaxed));
    return std::min(g + blocked.load(std::memory_order_relaxed), max_threads.load(std::memory_order_relaxed));
}

bool pool_core::set_min_threads(std::size_t n) {
    std::lock_guard guard(config_lock);
    if (n == 0 || n > max_threads.load()) return false;
    min_threads.store(n);
    if (goal.load() < n) goal.store(n);
    climber_reset.store(true);
    while (alive.load() < n)
        if (!spawn_worker()) break;
    return true;
}

bool pool_core::set_max_threads(std::size_t n) {
    std::lock_guard guard(config_lock);
    if (n == 0 || n < min_threads.load() || n > max_pool_threads) return false;
    max_threads.store(n);
    if (goal.load() > n) goal.store(n);
    climber_reset.store(true);
    return true;  // workers above the new maximum retire after their current item
}

bool pool_core::spawn_worker(start_failure on_failure) {
    std::lock_guard guard(workers_lock);
    if (stopping.load(std::memory_order_relaxed)) return false;
    if (alive.load(std::memory_order_relaxed) >= max_threads.load(std::memory_order_relaxed)) return false;
    worker* w = nullptr;
    for (auto& candidate : workers) {
        if (!candidate->alive.load(std::memory_order_acquire)) {
            w = candidate.get();
            break;
        }
    }
    if (w == nullptr) {
        if (workers.size() >= max_pool_threads) return false;
        workers.push_back(std::make_unique<worker>());
        w = workers.back().get();
        w->core = this;
        w->index = workers.size() - 1;
        w->rng = 0x9E3779B97F4A7C15ull * (w->index + 1);
        slots[w->index].store(w, std::memory_order_release);
        slots_used.store(workers.size(), std::memory_order_release);
    }
    if (w->thread.joinable()) w->thread.join();  // a retired thread that has not quite returned
    w->searching = false;
    w->blocking_depth = 0;
    w->alive.store(true, std::memory_order_release);
    alive.fetch_add(1, std::memory_order_relaxed);
    try {
        w->thread = worker_thread(worker_name(options.name, w->index), 0, [this, w] { worker_main(w); });
    } catch (...) {
        w->alive.store(false, std::memory_order_release);
        alive.fetch_sub(1, std::memory_order_relaxed);
        if (on_failure == start_failure::rethrow) throw;
        return false;
    }
    return true;
}

void pool_core::ensure_workers() {
    while (alive.load(std::memory_order_relaxed) < target_threads() && queued() > 0) {
        if (!spawn_worker()) return;
    }
}

void pool_core::post(task_node* n, bool local) {
    worker* w = current_worker;
    if (w != nullptr && w->core == this) {
        // A worker counts its own posts: one writer, no locked instruction.
        w->posted->store(w->posted->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (local) {
            w->deque.push(n);
        } else if (w->blocking_depth > 0) {
            global.push(n);  // it is about to block, or blocked already: no outbox to wait in
        } else if (!w->outbox.push(n)) {
            // Full: the outbox goes to the global queue in one lock hold, this item last.
            flush_outbox(w);
            w->outbox.push(n);  // room now: only this thread pushes
        }
        if (local || w->blocking_depth == 0) {
            notify_own();
            return;
        }
    } else {
        posted[compact_thread_id() % post_stripes]->fetch_add(1, std::memory_order_relaxed);
        global.push(n);
    }
    notify();
}

void pool_core::post_urgent(task_node* n) {
    posted[compact_thread_id() % post_stripes]->fetch_add(1, std::memory_order_relaxed);
    urgent.push(n);
    notify();
}

void pool_core::notify() {
    internal::thread_fence(std::memory_order_seq_cst);
    if (searching->load(std::memory_order_relaxed) == 0 && idle.size() > 0) wake_one();
}

void pool_core::notify_own() {
    if (posts_fence->lifted()) std::atomic_signal_fence(std::memory_order_seq_cst);
    else internal::thread_fence(std::memory_order_seq_cst);
    // Both loads seq_cst: with the fence left out, they are what orders this post after a
    // search that ended while posts were being fenced again (pool_core.cpp, top).
    if (searching->load(std::memory_order_seq_cst) == 0 && idle.size() > 0) wake_one();
}

void pool_core::end_unfenced_posts() {
    if (may_unfence_posts) posts_fence->restore();
}

void pool_core::maybe_unfence_posts(worker* self) {
    self->items_since_quiet_look = 0;
    // Saturated: no worker searching and none asleep, now and at this worker's last look.
    const bool saturated = searching->load(std::memory_order_relaxed) == 0 && idle.size() == 0;
    if (saturated && self->saturated_at_last_look) posts_fence->lift();
    self->saturated_at_last_look = saturated;
}

void pool_core::wake_one() {
    if (idle_waiter* iw = idle.pop()) {
        // Counted as searching before it runs, so the next posts do not wake another.
        searching->fetch_add(1, std::memory_order_seq_cst);
        iw->wake.set();
    }
}

std::size_t pool_core::queued() const noexcept {
    std::size_t n = global.size() + urgent.size();
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire)) n += w->deque.size() + w->outbox.size();
    return n;
}

bool pool_core::any_work_visible() const noexcept {
    if (!global.empty() || !urgent.empty()) return true;
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire); w && (!w->deque.empty() || !w->outbox.empty()))
            return true;
    return false;
}

bool pool_core::work_waiting() const noexcept {
    if (!global.empty() || !urgent.empty()) return true;
    const worker* w = current_worker;
    if (w != nullptr && w->core == this) return !w->deque.empty() || !w->outbox.empty();
    // Off the pool: the workers' outboxes hold items posted to the global queue too.
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* o = slots[i].load(std::memory_order_acquire); o && !o->outbox.empty()) return true;
    return false;
}

task_node* pool_core::steal(worker* self) {
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    if (used <= 1) return nullptr;
    for (int attempt = 0; attempt < 2; ++attempt) {
        bool lost = false;
        const std::size_t start = next_random(self->rng) % used;
        for (std::size_t k = 0; k < used; ++k) {
            worker* v = slots[(start + k) % used].load(std::memory_order_acquire);
            if (v == nullptr || v == self) continue;
            task_node* n = nullptr;
            switch (v->deque.steal(n)) {
                case work_stealing_deque<task_node*>::steal_result::success:
                    self->steals.store(self->steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
                    return n;
                case work_stealing_deque<task_node*>::steal_result::lost_race:
                    lost = true;
                    break;
                case work_stealing_deque<task_node*>::steal_result::empty:
                    break;
            }
        }
        if (!lost) break;
    }
    return nullptr;
}

std::size_t pool_core::flush_outbox(worker* self) {
    task_node* batch[outbox_capacity];
    const std::size_t n = self->outbox.take(batch, outbox_capacity);
    global.push_batch(batch, n);
    return n;
}

bool pool_core::take_from_global(worker* self, task_node*& out, std::size_t max) {
    // A worker that ran dry while every other worker is busy (none searching, none asleep)
    // runs its own outbox next, if the global queue is empty or it is the first to pass over
    // the item at the queue's head (global_queue::claim_bypass):
    // without the lock, and without sending its items to be run on another CPU. Else, in one
    // lock hold, a share of the queue from its head (Go's runtime takes len/workers + 1, up
    // to half its local queue), and then its own items kept on the same terms against the
    // new head, or else appended. So the head item waits for at most one batch of a worker's
    // own items, and the queue stays fair to what others posted; but in a pool whose items
    // post items, each worker mostly runs its own (the global/sustained row on 2 workers,
    // quiet: 44 to 48 ns an item when every item went through the queue, 31 to 32 now;
    // docs/design/pool.md, "A worker's own posts first, once per head"). The rest of the
    // share, and the own items after the first, wait in this worker's deque, where idle
    // workers can steal them. A take for the head (max 1, the global_check_interval look)
    // never passes over it; and with a worker idle, the outbox goes to the queue as before,
    // where that worker takes a share in one lock hold instead of stealing item by item.
    task_node* mine[outbox_capacity];
    const std::size_t flushed = self->outbox.take(mine, outbox_capacity);
    const bool may_keep = max > 1 && searching->load(std::memory_order_relaxed) == 0 && idle.size() == 0;
    if (flushed > 0 && may_keep && global.claim_bypass()) {
        out = mine[0];
        for (std::size_t i = flushed; i > 1; --i) self->deque.push(mine[i - 1]);
        if (flushed > 1) notify_own();
        return true;
    }
    const std::size_t workers_now = std::max<std::size_t>(1, alive.load(std::memory_order_relaxed));
    task_node* batch[global_batch_max];
    bool kept = false;
    const std::size_t got =
        may_keep ? global.pop_share_then_keep_or_push(mine, flushed, batch, workers_now, global_batch_max, kept)
                 : global.push_and_pop_share(mine, flushed, batch, workers_now, std::min(max, global_batch_max));
    if (got == 0 && !kept) return false;
    // The share's nodes were written on the CPU that posted them, most often another: ask for
    // every line now, so that the misses overlap instead of coming one per item as each runs
    // (the global/sustained row on 2 workers: 61 to 62 ns an item against 64 to 69 without,
    // docs/design/pool.md). For writing: the item's run frees its node.
    for (std::size_t i = 0; i < got; ++i) prefetch_for_write(batch[i]);
    // Run order: the share, then this worker's own items if it kept them. Items that moved
    // (out of the outbox into the global queue, out of the queue into the deque) were out of
    // sight on the way: say so as a post would (top of the file).
    const std::size_t own = kept ? flushed : 0;
    for (std::size_t i = own; i > (got == 0 ? 1 : 0); --i) self->deque.push(mine[i - 1]);
    for (std::size_t i = got; i > 1; --i) self->deque.push(batch[i - 1]);
    out = got > 0 ? batch[0] : mine[0];
    if (got + own > 1 || (flushed > own && !global.empty())) notify_own();
    return true;
}

task_node* pool_core::steal_from_outboxes(worker* self) {
    // Half of the first outbox found with items, the oldest first (Go's runqsteal takes
    // half too): the owner keeps the rest, and a few steals even out two busy workers.
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    if (used <= 1) return nullptr;
    const std::size_t start = next_random(self->rng) % used;
    for (std::size_t k = 0; k < used; ++k) {
        worker* v = slots[(start + k) % used].load(std::memory_order_acquire);
        if (v == nullptr || v == self) continue;
        const std::size_t len = v->outbox.size();
        if (len == 0) continue;
        task_node* batch[outbox_capacity];
        const std::size_t got = v->outbox.take(batch, (len + 1) / 2);
        if (got == 0) continue;
        for (std::size_t i = got; i > 1; --i) self->deque.push(batch[i - 1]);
        if (got > 1) notify_own();
        self->steals.store(self->steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return batch[0];
    }
    return nullptr;
}

task_node* pool_core::find_work(worker* self) {
    task_node* n = nullptr;
    if (!urgent.empty() && urgent.pop(n)) return n;
    // Every 61st item the global queue's head first, this worker's outbox flushed into it
    // on the way: so neither two items posting each other locally nor a long run of local
    // work keeps this worker from the global queue, or its posts out of it, for long.
    if (++self->tick % global_check_interval == 0 && take_from_global(self, n, 1)) return n;
    if (self->deque.pop(n)) return n;
    if (take_from_global(self, n, global_batch_max)) return n;
    if (task_node* stolen = steal_from_outboxes(self)) return stolen;
    return steal(self);
}

bool pool_core::may_poll() const noexcept {
    // Go's scheduler spins an idle thread only while the spinning ones are fewer than half
    // the busy ones (docs/references.md, go-proc): one poller catches the next item as well
    // as two, and a second one holds a CPU that a thread outside the pool (the producer the
    // items wait for, a client, the rest of the program) needs. With 2 workers on 2 CPUs and
    // a producer thread, two pollers keep the producer waiting for a CPU for a whole poll
    // after each burst (docs/design/pool.md). The caller counts itself among `searching`.
    const std::size_t workers_alive = alive.load(std::memory_order_relaxed);
    const std::size_t awake = workers_alive - std::min(workers_alive, idle.size());
    const std::size_t other_searchers = searching->load(std::memory_order_relaxed) - 1;
    return 2 * other_searchers < awake;
}

void pool_core::stop_searching(worker* self) {
    self->searching = false;
    // The last searcher to find work wakes another, which searches for the rest: the
    // chain that spreads a burst without waking everyone at once.
    if (searching->fetch_sub(1, std::memory_order_seq_cst) != 1) return;
    end_unfenced_posts();
    if (any_work_visible() && !CONTEND_MUTATION(pool_last_searcher_forgets_the_rest)) notify();
}

void pool_core::run_item(worker* self, task_node* n) {
    self->running_item.store(true, std::memory_order_relaxed);
    try {
        n->run(n);
    } catch (...) {
        unhandled_exceptions.fetch_add(1, std::memory_order_relaxed);
        const auto e = std::current_exception();
        bool reported = false;
        if (options.on_exception) {
            try {
                options.on_exception(e);
                reported = true;
            } catch (...) {
            }
        }
        if (!reported) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "contend::thread_pool '%s': a work item threw: %s\n", options.name.c_str(),
                             ex.what());
            } catch (...) {
                std::fprintf(stderr, "contend::thread_pool '%s': a work item threw a non-standard exception\n",
                             options.name.c_str());
            }
        }
    }
    self->running_item.store(false, std::memory_order_relaxed);
    if (self->blocking_depth > 0) {
        // A scope outlived its item (a coroutine suspended inside it): it ends here.
        self->blocking_depth = 1;
        end_blocking(self);
    }
    // Release: wait_idle reads completions before it trusts the item's effects.
    self->completed->store(self->completed->load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool pool_core::try_retire(worker* self) {
    if (stopping.load(std::memory_order_relaxed) || self->blocking_depth > 0) return false;
    std::size_t a = alive.load(std::memory_order_relaxed);
    const std::size_t target = target_threads();
    while (a > target && a > min_threads.load(std::memory_order_relaxed)) {
        if (alive.compare_exchange_weak(a, a - 1, std::memory_order_relaxed)) {
            // Hand back what this worker still owns; thieves may race for it, which is fine.
            task_node* n = nullptr;
            bool moved = flush_outbox(self) > 0;
            while (self->deque.pop(n)) {
                global.push(n);
                moved = true;
            }
            if (moved) notify();
            return true;
        }
    }
    return false;
}

// A worker going to sleep with a timer due before it would retire watches that deadline
// (timer_queue::watch): it sleeps until the deadline less how late its timed wakes come,
// spins out the rest and dispatches the timer itself, then runs what the timer posted from
// its own CPU. Without it the timer thread woke at the deadline, late by the VM's wake-up of
// an idle CPU, and then woke a sleeping worker on the other idle CPU, late again: a
// coroutine's 100 us timer among 64 others fired 45 to 53 us late (Intel Xeon VM,
// docs/design/pool.md, "A worker watches the next timer"). True: it woke (for the timer or
// for work) and searches again, counted as searching; false: no watch, still asleep-bound.
bool pool_core::watch_next_timer(worker* self) {
    const auto plan = timers->watch(idle_retire_after);
    if (!plan) return false;
    // Its timed wake as punctual as the timer thread's: 1 us of slack for this wait only.
    const auto slack = current_thread_timer_slack();
    set_current_thread_timer_slack(std::chrono::microseconds(1));
    const bool woken = self->idle.wake.wait_until(plan->wake_at);
    const auto woke = internal::clock::now();
    set_current_thread_timer_slack(slack);
    if (woken) {  // a post: its work first, and the deadline back to the timer thread
        timers->abandon_watch();
        self->searching = true;
        return true;
    }
    // Off the idle stack and searching before the timer's post, so that it wakes nobody.
    if (idle.remove(&self->idle)) {
        searching->fetch_add(1, std::memory_order_seq_cst);
    } else {
        self->idle.wake.wait();  // a waker popped us (and counted us searching): consume its wake-up
    }
    self->searching = true;
    timers->fire_watch(*plan, woke);
    return true;
}

void pool_core::look_at_placement(worker* self) {
    self->items_since_look = 0;
    const int here = current_thread_cpu();
    if (here < 0) {
        self->look_every = placement_never;
        return;
    }
    if (self->cpu.load(std::memory_order_relaxed) != here) self->cpu.store(here, std::memory_order_relaxed);
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    const auto worker_on = [&](int c, bool earlier_only) {
        for (std::size_t i = 0; i < used; ++i) {
            const worker* w = slots[i].load(std::memory_order_acquire);
            if (w == nullptr || w == self || (earlier_only && w->index > self->index)) continue;
            if (w->cpu.load(std::memory_order_relaxed) == c) return true;
        }
        return false;
    };
    if (!worker_on(here, true)) {
        self->look_every = placement_look_every;
        return;
    }
    const int to = move_current_thread_to_free_cpu([&](int c) { return worker_on(c, false); });
    if (to < 0) {
        self->look_every = std::min(self->look_every * 2, placement_look_most);
        return;
    }
    self->cpu.store(to, std::memory_order_relaxed);
    self->moves.store(self->moves.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    self->look_every = placement_look_every;
}

void pool_core::worker_main(worker* self) {
    current_worker = self;
#ifdef __linux__
    self->os_tid.store(static_cast<int>(::syscall(SYS_gettid)), std::memory_order_relaxed);
#endif
    self->look_every = options.spread_workers ? placement_look_every : placement_never;
    self->items_since_look = 0;
    if (options.on_thread_start) options.on_thread_start(self->index);
    for (;;) {
        if (task_node* n = find_work(self)) {
            if (self->searching) stop_searching(self);
            run_item(self, n);
            if (self->look_every != placement_never && ++self->items_since_look >= self->look_every)
                look_at_placement(self);
            if (may_unfence_posts && ++self->items_since_quiet_look >= quiet_look_every) maybe_unfence_posts(self);
            if (alive.load(std::memory_order_relaxed) > target_threads() && try_retire(self)) break;
            continue;
        }
        // Nothing to run: it takes no CPU from the others now, and looks at its first item,
        // unless its last looks found no CPU free (then a pool with more workers than CPUs
        // would pay a scan and a system call at every wake-up): it waits for its count.
        if (self->cpu.load(std::memory_order_relaxed) != -1) {
            self->cpu.store(-1, std::memory_order_relaxed);
            if (self->look_every == placement_look_every) self->items_since_look = self->look_every;
        }
        if (idle_waiters.load(std::memory_order_relaxed) > 0) {
            std::lock_guard guard(idle_wait_lock);
            idle_wait_cv.notify_all();
        }
        if (stopping.load(std::memory_order_acquire) && !any_work_visible()) {
            alive.fetch_sub(1, std::memory_order_relaxed);
            break;
        }
        // Spin a little: the next item of a steady stream usually comes within microseconds.
        if (!self->searching) {
            self->searching = true;
            searching->fetch_add(1, std::memory_order_seq_cst);
        }
        if (may_poll()) {
            bool found = false;
            spin_wait poll(idle_poll_budget);
            while (!found && poll.pause()) found = any_work_visible();
            if (found) continue;
        }

        // Sleep. See the top of the file for why this order loses no wake-up.
        idle.push(&self->idle);
        self->searching = false;
        searching->fetch_sub(1, std::memory_order_seq_cst);
        internal::thread_fence(std::memory_order_seq_cst);
        end_unfenced_posts();
        if (!CONTEND_MUTATION(pool_sleep_skips_the_last_look) &&
            (any_work_visible() ||
             (!CONTEND_MUTATION(pool_sleep_ignores_stopping) && stopping.load(std::memory_order_seq_cst)))) {
            if (!idle.remove(&self->idle)) {
                self->idle.wake.wait();  // a waker popped us: consume its wake-up
                self->searching = true;  // and it counted us as searching
            }
            continue;
        }
        self->sleeps.store(self->sleeps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (watch_next_timer(self)) continue;
        if (self->idle.wake.wait_for(idle_retire_after)) {
            self->searching = true;
            continue;
        }
        // Idle for long: retire if above the minimum, else sleep again.
        if (idle.remove(&self->idle)) {
            std::size_t a = alive.load(std::memory_order_relaxed);
            bool retired = false;
            while (a > min_threads.load(std::memory_order_relaxed) && !stopping.load(std::memory_order_relaxed)) {
                if (alive.compare_exchange_weak(a, a - 1, std::memory_order_relaxed)) {
                    retired = true;
                    break;
                }
            }
            if (retired) break;
        } else {
            self->idle.wake.wait();
            self->searching = true;
        }
    }
    if (self->searching) {
        self->searching = false;
        searching->fetch_sub(1, std::memory_order_seq_cst);
    }
    if (options.on_thread_stop) options.on_thread_stop(self->index);
    self->cpu.store(-1, std::memory_order_relaxed);
    self->os_tid.store(0, std::memory_order_relaxed);
    current_worker = nullptr;
    self->alive.store(false, std::memory_order_release);
}

bool pool_core::quiescent() const noexcept {
    // Completions first, then posts: if the sums match, at the moment the completions were
    // read every item posted by then had finished (each completion follows its post, and
    // both only grow).
    const std::uint64_t done = completed_sum();
    std::uint64_t started = 0;
    for (const auto& stripe : posted) started += stripe->load(std::memory_order_acquire);
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire)) started += w->posted->load(std::memory_order_acquire);
    return done == started;
}

std::uint64_t pool_core::completed_sum() const noexcept {
    std::uint64_t done = 0;
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire)) done += w->completed->load(std::memory_order_acquire);
    return done;
}

std::uint64_t pool_core::sleeps_sum() const noexcept {
    std::uint64_t n = 0;
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire)) n += w->sleeps.load(std::memory_order_relaxed);
    return n;
}

thread_pool_stats pool_core::stats() const {
    thread_pool_stats s;
    const std::size_t used = slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i) {
        worker* w = slots[i].load(std::memory_order_acquire);
        if (w == nullptr) continue;
        s.completed += w->completed->load(std::memory_order_relaxed);
        s.steals += w->steals.load(std::memory_order_relaxed);
        s.worker_moves += w->moves.load(std::memory_order_relaxed);
        s.local_queue_length += w->deque.size();
        if (w->alive.load(std::memory_order_relaxed)) {
            ++s.threads;
            if (w->running_item.load(std::memory_order_relaxed)) ++s.active;
        }
    }
    s.idle = s.threads - s.active;
    s.global_queue_length = global.size() + urgent.size();
    for (std::size_t i = 0; i < used; ++i)
        if (worker* w = slots[i].load(std::memory_order_acquire)) s.global_queue_length += w->outbox.size();
    s.starvation_injections = starvation_injections.load(std::memory_order_relaxed);
    s.hill_climbing_adjustments = adjustments.load(std::memory_order_relaxed);
    s.last_throughput = last_throughput.load(std::memory_order_relaxed);
    s.thread_goal = target_threads();
    s.active_timers = timers ? timers->size() : 0;
    s.registered_waits = waits ? waits->size() : 0;
    s.unhandled_exceptions = unhandled_exceptions.load(std::memory_order_relaxed);
    s.min_threads = min_threads.load(std::memory_order_relaxed);
    s.max_threads = max_threads.load(std::memory_order_relaxed);
    s.blocked = blocked.load(std::memory_order_relaxed);
    return s;
}

void pool_core::wait_idle() {
    idle_waiters.fetch_add(1, std::memory_order_seq_cst);
    while (!quiescent()) {
        ensure_workers();  // a pool whose workers all retired must start one for new work
        std::unique_lock lock(idle_wait_lock);
        idle_wait_cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    idle_waiters.fetch_sub(1, std::memory_order_relaxed);
}

void pool_core::adjust_goal(std::size_t to, const char* reason, double throughput) {
    const std::size_t from = goal.exchange(to, std::memory_order_relaxed);
    if (from == to) return;
    adjustments.fetch_add(1, std::memory_order_relaxed);
    if (options.on_adjustment) options.on_adjustment(hill_climbing_adjustment{from, to, throughput, reason});
    ensure_workers();
}

void pool_core::begin_blocking(worker* w) {
    if (w->blocking_depth++ > 0) return;
    blocked.fetch_add(1, std::memory_order_relaxed);
    // Its outbox to the global queue, in order: idle workers could steal from it, but the
    // global queue is where a worker that wakes or starts for the work looks first.
    if (flush_outbox(w) > 0) notify();
    // Another worker now, not at the gate's next tick: wake a sleeper if there is one
    // (it will find the queued work), else start a thread if the target allows.
    if (queued() > 0) {
        if (idle.size() > 0) wake_one();
        else if (alive.load(std::memory_order_relaxed) < target_threads()) spawn_worker();
    }
}

void pool_core::end_blocking(worker* w) {
    if (--w->blocking_depth > 0) return;
    blocked.fetch_sub(1, std::memory_order_relaxed);  // the surplus retires after its item
}

worker* pool_core::open_blocking_scope(std::uint64_t& item) noexcept {
    worker* w = current_worker;
    if (w == nullptr) return nullptr;
    item = w->completed->load(std::memory_order_relaxed);  // its own counter: this item's number
    try {
        w->core->begin_blocking(w);
    } catch (...) {
        // Starting a thread failed: the gate thread will inject one if work starves.
    }
    return w;
}

void pool_core::close_blocking_scope(worker* w, std::uint64_t item) {
    if (w != nullptr && current_worker == w && w->completed->load(std::memory_order_relaxed) == item)
        w->core->end_blocking(w);
}

}  // namespace internal
}  // namespace contend
