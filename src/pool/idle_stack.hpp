// The idle workers' LIFO semaphore. Internal to the pool.
//
// A worker that found no work (after a short spin) pushes itself and sleeps on its own
// event; a post that needs a worker pops the most recently pushed one. LIFO, as in .NET's
// LowLevelLifoSemaphore: the worker that went to sleep last has the warmest cache and
// stack, and the ones at the bottom stay asleep long enough to retire. Each waiter has its
// own event, so a wake-up is aimed at one thread, never broadcast.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

struct idle_waiter {
    auto_reset_event wake;
    bool queued = false;  // guarded by the stack's lock
};

class idle_stack {
public:
    void push(idle_waiter* w) {
        std::lock_guard guard(lock_);
        w->queued = true;
        waiters_.push_back(w);
        if (CONTEND_MUTATION(idle_stack_push_leaves_count_stale)) return;  // a waker reads no sleeper
        count_.store(waiters_.size(), std::memory_order_seq_cst);
    }

    // True if `w` was still queued and is now removed (nobody will wake it).
    bool remove(idle_waiter* w) {
        std::lock_guard guard(lock_);
        if (!w->queued) return false;
        w->queued = false;
        waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
        count_.store(waiters_.size(), std::memory_order_relaxed);
        return true;
    }

    // Pops the most recent waiter (its event is the caller's to set), or nullptr.
    idle_waiter* pop() {
        std::lock_guard guard(lock_);
        if (waiters_.empty()) return nullptr;
        idle_waiter* w = waiters_.back();
        waiters_.pop_back();
        w->queued = false;
        count_.store(waiters_.size(), std::memory_order_relaxed);
        return w;
    }

    std::size_t size() const noexcept { return count_.load(std::memory_order_seq_cst); }

private:
    contend::mutex lock_;
    std::vector<idle_waiter*> waiters_;
    internal::atomic<std::size_t> count_{0};
};

}  // namespace contend::internal
