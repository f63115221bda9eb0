// The timer thread sleeps on a condition variable until the earliest deadline; add() wakes
// it only when the new timer becomes the earliest, so 100,000 timers cost one wake-up per
// batch of due ones, not one per add. Due callbacks are handed to dispatch outside the
// lock, so a callback (or the pool) may add and cancel timers while others are dispatched.
#include "pool/timer_queue.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "model/mutation.hpp"
#include "platform/yield.hpp"
#include "pool/os_thread.hpp"

namespace contend::internal {

namespace {

// Rebuild the heap only when it is mostly dead entries and big enough for it to matter: a
// rebuild is linear, so at most one per as many cancels as there were live timers.
constexpr std::size_t compact_min_heap = 1024;

// Timer ids come from one counter for the whole process, so an id names one timer of one
// pool: cancel_timer with another pool's id finds nothing, instead of another timer.
// Padded: every pool's timer thread and posters write it.
contend::cache_padded<internal::atomic<std::uint64_t>> next_timer_id{std::in_place, 1};

}  // namespace

timer_queue::timer_queue(std::string name, dispatch_fn dispatch)
    : dispatch_(std::move(dispatch)), thread_(std::move(name) + "-timer", [this] { run(); }) {}

timer_queue::~timer_queue() { close(); }

void timer_queue::close() {
    std::unordered_map<std::uint64_t, task_node*> dropped;
    {
        std::lock_guard guard(lock_);
        stopping_ = true;
        dropped.swap(pending_);
        heap_.clear();
    }
    wake_.notify_all();
    thread_.stop();  // a second close() finds it stopped already
    // Outside the lock: a captured object's destructor may add or cancel a timer.
    for (auto& [id, node] : dropped) node->discard(node);
}

std::uint64_t timer_queue::add(clock::time_point due, task_node* callback) {
    task_holder held(callback);  // discarded, not leaked, if anything below throws
    bool earliest = false;
    std::uint64_t id = 0;
    {
        std::lock_guard guard(lock_);
        if (stopping_) return 0;  // closed: `held` discards the callback
        thread_.start_once();
        id = next_timer_id->fetch_add(1, std::memory_order_relaxed);
        pending_.emplace(id, held.node);
        try {
            heap_.push_back(entry{due, id});
        } catch (...) {
            pending_.erase(id);
            throw;
        }
        held.release();
        // Cancelled entries may sit above the new one: waking for it then costs a spurious
        // wake-up at worst, while not waking could sleep past its deadline.
        earliest = heap_.size() == 1 || due < heap_.front().due;
        std::push_heap(heap_.begin(), heap_.end(), later{});
    }
    if (earliest && !CONTEND_MUTATION(timer_add_skips_the_wake)) wake_.notify_one();
    return id;
}

bool timer_queue::cancel(std::uint64_t id) {
    task_node* node = nullptr;
    {
        std::lock_guard guard(lock_);
        const auto it = pending_.find(id);
        if (it == pending_.end()) return false;
        node = it->second;
        pending_.erase(it);
        compact_if_stale();
    }
    node->discard(node);  // outside the lock: a captured object's destructor may do anything
    return true;
}

std::size_t timer_queue::size() const {
    std::lock_guard guard(lock_);
    return pending_.size();
}

void timer_queue::compact_if_stale() {
    if (heap_.size() < compact_min_heap || heap_.size() - pending_.size() <= pending_.size()) return;
    std::erase_if(heap_, [this](const entry& e) { return !pending_.contains(e.id); });
    std::make_heap(heap_.begin(), heap_.end(), later{});
}

std::optional<timer_queue::clock::time_point> timer_queue::earliest() {
    // Cancelled timers on top would only cost a wake-up at their old deadline.
    while (!heap_.empty() && !pending_.contains(heap_.front().id)) {
        std::pop_heap(heap_.begin(), heap_.end(), later{});
        heap_.pop_back();
    }
    if (heap_.empty()) return std::nullopt;
    return heap_.front().due;
}

void timer_queue::take_due(clock::time_point now, std::vector<task_node*>& due) {
    // Never early: only entries whose deadline is at or before a clock reading taken now
    // leave the heap, in (due, id) order.
    while (!heap_.empty() && heap_.front().due <= now) {
        const std::uint64_t id = heap_.front().id;
        std::pop_heap(heap_.begin(), heap_.end(), later{});
        heap_.pop_back();
        const auto it = pending_.find(id);
        if (it == pending_.end()) continue;  // cancelled
        due.push_back(it->second);
        pending_.erase(it);
    }
}

void timer_queue::note_lateness(clock::duration late) noexcept {
    const std::int64_t ns =
        std::clamp<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(late).count(), 0,
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(max_lead).count());
    const std::int64_t old = lateness_ns_.load(std::memory_order_relaxed);
    lateness_ns_.store(old + (ns - old) / 8, std::memory_order_relaxed);  // one watcher at a time writes
}

timer_queue::clock::duration timer_queue::lead() const noexcept {
    return std::chrono::nanoseconds(lateness_ns_.load(std::memory_order_relaxed));
}

std::optional<timer_queue::watch_plan> timer_queue::watch(clock::duration horizon) {
    std::lock_guard guard(lock_);
    if (stopping_ || watched_) return std::nullopt;
    const auto first = earliest();
    const auto now = clock::now();
    // Only a deadline ahead: one due already is the timer thread's (and a deadline as far
    // back as time_point::min(), a post_at of the distant past, must not be subtracted from).
    if (!first || *first <= now || *first > now + horizon) return std::nullopt;
    watched_ = *first;
    return watch_plan{*first, std::max(now, *first - lead())};
}

void timer_queue::abandon_watch() {
    std::lock_guard guard(lock_);
    watched_.reset();
}

bool timer_queue::fire_watch(const watch_plan& plan, clock::time_point woke) {
    note_lateness(woke - plan.wake_at);
    clock::time_point until;
    {
        std::lock_guard guard(lock_);
        const auto first = earliest();
        if (stopping_ || !first || *first > plan.deadline) {
            watched_.reset();  // cancelled, or taken already: nothing to wait out
            return false;
        }
        until = *first;  // the watched deadline, or an earlier one added since
    }
    // The last stretch, at most the lead: spinning, since a timed wake comes this late.
    const bool trust_the_plan = CONTEND_MUTATION(timer_watch_fires_at_its_wake);  // early by the lead
    while (!trust_the_plan && clock::now() < until) {
        if constexpr (every_pause_yields) yield_cpu();  // the model's clock moves only then
        else cpu_relax();
    }
    // The batch's storage is kept per thread, as the service thread keeps its own, so that
    // taking the timers allocates nothing under the lock once it has grown; moved out while in
    // use, so that a callback run here that fires a watch of its own gets storage of its own.
    thread_local std::vector<task_node*> spare;
    std::vector<task_node*> due = std::move(spare);
    due.clear();
    {
        std::lock_guard guard(lock_);
        watched_.reset();
        if (!stopping_) take_due(trust_the_plan ? plan.deadline : clock::now(), due);
    }
    const bool fired = !due.empty();
    for (task_node* node : due) dispatch_(node);
    due.clear();
    spare = std::move(due);
    return fired;
}

void timer_queue::run() {
    // Its sleeps end at deadlines, and the default 50 us of slack is for threads that can be
    // late: a coroutine looping on 100 us timers took 176 us a round with it, 135 us with
    // 1 us (median, 2-vCPU AMD EPYC VM).
    set_current_thread_timer_slack(std::chrono::microseconds(1));
    std::vector<task_node*> due;
    std::unique_lock lk(lock_);
    while (!stopping_) {
        const auto first = earliest();
        if (!first) {
            wake_.wait(lk);
            continue;
        }
        const auto now = clock::now();
        if (*first > now) {
            // Also when a worker watches it: whichever comes first takes the due timers, and
            // this thread, late by a wake-up, usually finds them gone.
            wake_.wait_until(lk, *first);
            continue;
        }
        take_due(now, due);
        lk.unlock();
        for (task_node* node : due) dispatch_(node);
        due.clear();
        lk.lock();
    }
}

}  // namespace contend::internal
