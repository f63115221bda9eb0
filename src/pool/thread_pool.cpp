// contend::thread_pool and blocking_scope: the public face over pool_core (pool_core.cpp).
#include <memory>
#include <stdexcept>
#include <thread>

#include "pool/pool_core.hpp"

namespace contend {

thread_pool::thread_pool(thread_pool_options options)
    : core_(std::make_unique<internal::pool_core>(this, std::move(options))) {}

thread_pool::~thread_pool() noexcept(false) {
    if (internal::current_worker != nullptr && internal::current_worker->core == core_.get()) {
        // Joining this worker from itself cannot work. Another thread drains and stops the
        // core once the calling item has returned, then frees it; current() says nullptr
        // from here on, since this object is gone.
        internal::pool_core* core = core_.release();
        core->owner.store(nullptr, std::memory_order_relaxed);
        std::thread([core] {
            core->shutdown();
            delete core;
        }).detach();
        throw std::logic_error(
            "contend::thread_pool::~thread_pool: called from a worker of the same pool; the pool drains and stops "
            "on another thread");
    }
    // Drain and stop while core_ still points at the core: items running now may post.
    core_->shutdown();
    core_.reset();
}

void thread_pool::post_node(internal::task_node* node, bool local) { core_->post(node, local); }

thread_pool::timer_id thread_pool::add_timer(std::chrono::steady_clock::time_point when, internal::task_node* node) {
    return core_->timers->add(when, node);
}

bool thread_pool::cancel_timer(timer_id id) { return core_->timers->cancel(id); }

wait_registration thread_pool::register_wait_impl(void* event, bool auto_reset, std::function<void(bool)> callback,
                                                  std::chrono::steady_clock::duration timeout, bool once) {
    return wait_registration(core_->waits->add(event, auto_reset, std::move(callback), timeout, once));
}

bool thread_pool::set_min_threads(std::size_t n) {
    std::lock_guard guard(core_->config_lock);
    if (n == 0 || n > core_->max_threads.load()) return false;
    core_->min_threads.store(n);
    if (core_->goal.load() < n) core_->goal.store(n);
    core_->climber_reset.store(true);
    while (core_->alive.load() < n)
        if (!core_->spawn_worker()) break;
    return true;
}

bool thread_pool::set_max_threads(std::size_t n) {
    std::lock_guard guard(core_->config_lock);
    if (n == 0 || n < core_->min_threads.load() || n > internal::max_pool_threads) return false;
    core_->max_threads.store(n);
    if (core_->goal.load() > n) core_->goal.store(n);
    core_->climber_reset.store(true);
    return true;  // workers above the new maximum retire after their current item
}

bool thread_pool::work_waiting() const noexcept {
    const auto& core = *core_;
    if (!core.global.empty() || !core.urgent.empty()) return true;
    const internal::worker* w = internal::current_worker;
    if (w != nullptr && w->core == core_.get()) return !w->deque.empty() || !w->outbox.empty();
    // Off the pool: the workers' outboxes hold items posted to the global queue too.
    const std::size_t used = core.slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i)
        if (internal::worker* o = core.slots[i].load(std::memory_order_acquire); o && !o->outbox.empty()) return true;
    return false;
}

void thread_pool::wait_idle() {
    if (internal::current_worker != nullptr && internal::current_worker->core == core_.get())
        throw std::logic_error("contend::thread_pool::wait_idle: called from a worker of the same pool");
    core_->wait_idle();
}

thread_pool_stats thread_pool::stats() const {
    thread_pool_stats s;
    const auto& c = *core_;
    const std::size_t used = c.slots_used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i) {
        internal::worker* w = c.slots[i].load(std::memory_order_acquire);
        if (w == nullptr) continue;
        s.completed += w->completed->load(std::memory_order_relaxed);
        s.steals += w->steals.load(std::memory_order_relaxed);
        s.local_queue_length += w->deque.size();
        if (w->alive.load(std::memory_order_relaxed)) {
            ++s.threads;
            if (w->running_item.load(std::memory_order_relaxed)) ++s.active;
        }
    }
    s.idle = s.threads - s.active;
    s.global_queue_length = c.global.size() + c.urgent.size();
    for (std::size_t i = 0; i < used; ++i)
        if (internal::worker* w = c.slots[i].load(std::memory_order_acquire)) s.global_queue_length += w->outbox.size();
    s.starvation_injections = c.starvation_injections.load(std::memory_order_relaxed);
    s.hill_climbing_adjustments = c.adjustments.load(std::memory_order_relaxed);
    s.last_throughput = c.last_throughput.load(std::memory_order_relaxed);
    s.thread_goal = c.target_threads();
    s.active_timers = c.timers ? c.timers->size() : 0;
    s.registered_waits = c.waits ? c.waits->size() : 0;
    s.unhandled_exceptions = c.unhandled_exceptions.load(std::memory_order_relaxed);
    s.min_threads = c.min_threads.load(std::memory_order_relaxed);
    s.max_threads = c.max_threads.load(std::memory_order_relaxed);
    s.blocked = c.blocked.load(std::memory_order_relaxed);
    return s;
}

thread_pool* thread_pool::current() noexcept {
    return internal::current_worker != nullptr ? internal::current_worker->core->owner.load(std::memory_order_relaxed)
                                               : nullptr;
}

blocking_scope::blocking_scope() noexcept {
    internal::worker* w = internal::current_worker;
    if (w == nullptr) return;
    worker_ = w;
    item_ = w->completed->load(std::memory_order_relaxed);  // its own counter: this item's number
    try {
        w->core->begin_blocking(w);
    } catch (...) {
        // Starting a thread failed: the gate thread will inject one if work starves.
    }
}

blocking_scope::~blocking_scope() {
    // Only on its own thread, within its own item: otherwise the item's end has closed it
    // already (run_item), and the worker's fields belong to another thread.
    internal::worker* w = worker_;
    if (w != nullptr && internal::current_worker == w && w->completed->load(std::memory_order_relaxed) == item_)
        w->core->end_blocking(w);
}

}  // namespace contend
