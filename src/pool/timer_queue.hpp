// The pool's timers: a deadline-ordered heap served by one service thread. Internal.
//
// The thread sleeps until the earliest deadline (or a new earlier one), then hands every
// due callback to `dispatch` (the pool's time-sensitive queue) in deadline order, ties in
// the order they were added. A callback is never dispatched before its deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "contend/condition_variable.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/task.hpp"
#include "contend/mutex.hpp"
#include "pool/service_thread.hpp"

namespace contend::internal {

class timer_queue {
public:
    using clock = internal::clock;  // the steady clock; the model's time in the model-checking build
    using dispatch_fn = std::function<void(task_node*)>;  // takes ownership; must not throw

    // The service thread (small stack, named "<name>-timer") starts with the first add().
    timer_queue(std::string name, dispatch_fn dispatch);
    // Stops the thread; callbacks not yet due are discarded (never run).
    ~timer_queue();
    // What the destructor does, ahead of it (idempotent): the pool calls it when its
    // destructor starts, while items that may still add or cancel timers drain. After it,
    // add() discards its callback and returns 0, and cancel() returns false.
    void close();
    timer_queue(const timer_queue&) = delete;
    timer_queue& operator=(const timer_queue&) = delete;

    // Takes ownership of `callback`. Returns its id, >= 1, never reused and unique across
    // every timer_queue of the process (so another pool's id cancels nothing here); 0 after
    // close(), the callback discarded.
    std::uint64_t add(clock::time_point due, task_node* callback);
    // True if the timer was still waiting: it is removed and its callback discarded.
    // False if it was already dispatched, cancelled, or never existed.
    bool cancel(std::uint64_t id);
    // Timers waiting (added, not yet dispatched or cancelled).
    std::size_t size() const;

private:
    // A heap entry. Ids grow with every add(), so ordering by (due, id) gives deadline
    // order with ties in the order added.
    struct entry {
        clock::time_point due;
        std::uint64_t id;
    };
    struct later {
        bool operator()(const entry& a, const entry& b) const noexcept {
            return a.due != b.due ? a.due > b.due : a.id > b.id;
        }
    };

    void run();
    // Drops heap entries whose timer was cancelled, once they outnumber the live ones.
    void compact_if_stale();

    const dispatch_fn dispatch_;
    mutable contend::mutex lock_;
    contend::condition_variable wake_;
    // A min-heap on (due, id). cancel() leaves its entry behind (lazy deletion): an entry
    // whose id is no longer in pending_ is skipped when it comes to the top.
    std::vector<entry> heap_;
    // The timers waiting, by id: the exact count, and the node that cancel() discards.
    std::unordered_map<std::uint64_t, task_node*> pending_;
    bool stopping_ = false;  // close() has begun: add() refuses, the thread ends
    service_thread thread_;  // started by the first add()
};

}  // namespace contend::internal
