// The pool's timers: a deadline-ordered heap served by one service thread. Internal.
//
// The thread sleeps until the earliest deadline (or a new earlier one), then hands every
// due callback to `dispatch` (the pool's time-sensitive queue) in deadline order, ties in
// the order they were added. A callback is never dispatched before its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
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

    // A worker going to sleep may watch the earliest deadline instead of the service thread,
    // and fire it from its own CPU: on a VM the service thread's wake-up and then a sleeping
    // worker's, on another idle CPU, each cost tens of microseconds (docs/design/pool.md,
    // "A worker watches the next timer").
    //   watch(horizon): when no thread watches and a timer falls due within `horizon`, the
    //     caller becomes the watcher of that deadline, and gets the time to wake at: the
    //     deadline less how late this machine's timed wakes come (lead()). Otherwise nullopt.
    //   fire_watch / abandon_watch: ends the caller's watch, firing the deadline itself or
    //     not. The service thread still sleeps until every deadline, watched or not, and
    //     whichever thread comes first takes the due timers (under the lock: each once, never
    //     early): a watcher kept off its CPU costs a timer nothing, and one that leaves for
    //     other work hands nothing back.
    struct watch_plan {
        clock::time_point deadline;
        clock::time_point wake_at;
    };
    std::optional<watch_plan> watch(clock::duration horizon);
    // The watcher's wake time came (`woke`: when its timed wait returned): it spins out the
    // rest of the deadline, dispatches every due timer itself and ends the watch. True if it
    // dispatched any. A deadline whose timers were cancelled or taken meanwhile ends the
    // watch at once.
    bool fire_watch(const watch_plan& plan, clock::time_point woke);
    // The watcher was woken for other work: the service thread fires the deadline.
    void abandon_watch();
    // How late a watcher's timed wake has come, lately: a moving average of the last few
    // (an eighth per wake), at most max_lead.
    clock::duration lead() const noexcept;
    static constexpr clock::duration max_lead = std::chrono::microseconds(50);

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
    // Takes the entries due at `now` off the heap (lock_ held), in (due, id) order.
    void take_due(clock::time_point now, std::vector<task_node*>& due);
    // The first live entry's deadline, dropping cancelled entries off the top (lock_ held).
    std::optional<clock::time_point> earliest();
    // Notes how late a watcher's timed wake came.
    void note_lateness(clock::duration late) noexcept;
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
    // The deadline a worker watches (watch()), or none: one watcher at a time.
    std::optional<clock::time_point> watched_;
    std::atomic<std::int64_t> lateness_ns_{0};
    service_thread thread_;  // started by the first add()
};

}  // namespace contend::internal
