// contend::thread_pool and blocking_scope: the public face over pool_core (pool_core.cpp).
#include <memory>
#include <stdexcept>
#include <thread>

#include "pool/pool_core.hpp"

namespace contend {

thread_pool::thread_pool(thread_pool_options options)
    : core_(std::make_unique<internal::pool_core>(this, std::move(options))) {}

thread_pool::~thread_pool() noexcept(false) {
    if (core_->on_own_worker()) {
        // Joining this worker from itself cannot work. Another thread drains and stops the
        // core once the calling item has returned, then frees it; current() says nullptr
        // from here on, since this object is gone.
        internal::pool_core* core = core_.release();
        core->disown();
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

bool thread_pool::set_min_threads(std::size_t n) { return core_->set_min_threads(n); }

bool thread_pool::set_max_threads(std::size_t n) { return core_->set_max_threads(n); }

bool thread_pool::work_waiting() const noexcept { return core_->work_waiting(); }

void thread_pool::wait_idle() {
    if (core_->on_own_worker())
        throw std::logic_error("contend::thread_pool::wait_idle: called from a worker of the same pool");
    core_->wait_idle();
}

thread_pool_stats thread_pool::stats() const { return core_->stats(); }

thread_pool* thread_pool::current() noexcept { return internal::pool_core::current_owner(); }

blocking_scope::blocking_scope() noexcept {
    // In the body, not the initializer list: item_ is initialized after worker_.
    worker_ = internal::pool_core::open_blocking_scope(item_);
}

// Only on its own thread, within its own item: otherwise the item's end has closed it
// already (run_item).
blocking_scope::~blocking_scope() { internal::pool_core::close_blocking_scope(worker_, item_); }

}  // namespace contend
