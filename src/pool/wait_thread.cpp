// Registered waits. One thread serves every registration: it sleeps on its inbox until the
// earliest timeout, and an event's set() (contend/event.hpp, watch_event) puts the
// registration in the inbox. No OS wait object per event, so one thread serves any number
// (.NET's portable pool watches at most 63 per wait thread, WaitForMultipleObjects' limit
// less its own wake event, and adds wait threads beyond that; see docs/references.md,
// dotnet-runtime-portable-thread-pool).
//
// Firings of one registration are serialized: the record itself is the task handed to the
// pool (at most one in flight, so firing allocates nothing), and it re-arms when the
// callback returns. A repeating wait on an event set faster than its callback runs thus
// coalesces sets instead of queueing callbacks without bound, and a callback never races
// with itself. The timeout restarts at re-arming: the time between firings is at least the
// timeout plus the callback's run.
//
// No set() is lost between firings. A manual_reset_event's set() while the wait is disarmed
// is latched on the record and fires it on re-arming, even if the event was reset in
// between; an auto_reset_event's set stays in the event until the re-armed wait consumes it
// (or a thread waiting on the event takes it first). A manual event that stays set fires a
// repeating wait again at each re-arming, as .NET's does, but one callback at a time: the
// rate is the callback's, never a queue flood, and the wait thread never spins: it wakes
// for a set(), a re-arming or a deadline. A set() that races with a firing may cause one
// extra firing later. unregister() also stops a firing already handed to the pool whose
// callback has not started: the task checks before it calls back.
//
// Locks, always taken in this order: wait_state::lock (records, phases, timeouts), the
// watch table's stripe lock (inside watch_event/unwatch_event, and around a set()'s
// notification), wait_state::inbox_lock (what the thread has to look at). signalled() runs
// under the stripe lock, so it takes only the inbox lock; and the event is unwatched under
// wait_state::lock, so exactly one party (the thread ending a `once` wait, an unregister(),
// the destructor) unwatches, and unregister() returns only once the event is untouched.
#include "pool/wait_thread.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "contend/condition_variable.hpp"
#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "contend/thread_pool.hpp"
#include "model/mutation.hpp"

namespace contend::internal {

using wait_clock = wait_thread::clock;
using timeout_map = std::multimap<wait_clock::time_point, wait_record*>;

enum class wait_phase {
    armed,  // watching for a set() or the timeout
    firing,  // its task is on the pool; a set() now is remembered for re-arming
    ended,  // unregistered, fired once, or its wait_thread is gone
};

struct wait_state {
    mutex lock;
    bool stopping = false;  // the wait_thread is being destroyed
    // The registrations not ended, owning them; the thread and the handles share them.
    std::unordered_map<wait_record*, std::shared_ptr<wait_record>> records;
    timeout_map timeouts;  // armed records with a finite timeout, by deadline

    mutex inbox_lock;
    condition_variable inbox_wake;
    wait_record* inbox_head = nullptr;  // records to look at, FIFO, linked through the records
    wait_record* inbox_tail = nullptr;
    bool inbox_stop = false;

    void post(wait_record& r) noexcept;
};

struct wait_record final : event_watcher, task_node, std::enable_shared_from_this<wait_record> {
    wait_record(std::shared_ptr<wait_state> s, void* e, bool ar, std::function<void(bool)> cb, wait_clock::duration t,
                bool o)
        : state(std::move(s)), event(e), auto_reset(ar), once(o), timeout(t), callback(std::move(cb)) {
        event_watcher::signalled = &on_signalled;
        task_node::run = &run_firing;
        task_node::discard = &discard_firing;
    }

    bool has_timeout() const noexcept { return timeout != wait_clock::duration::max(); }

    static void on_signalled(event_watcher* w) noexcept;
    static void run_firing(task_node* n);
    static void discard_firing(task_node* n) noexcept;

    const std::shared_ptr<wait_state> state;
    void* const event;
    const bool auto_reset;
    const bool once;
    const wait_clock::duration timeout;
    const std::function<void(bool)> callback;  // called by one task at a time

    // Any thread.
    internal::atomic<bool> ended{false};  // stored after the event was unwatched
    internal::atomic<bool> unregistered{false};  // a task that has not called back yet will not
    internal::atomic<bool> latched{false};  // a set() came since the last look (manual events fire on it)

    // Under state->lock.
    wait_phase phase = wait_phase::armed;
    bool in_timeouts = false;
    timeout_map::iterator timeout_pos;
    // The map node while not in `timeouts`: re-arming reuses it, so it allocates nothing.
    timeout_map::node_type timeout_node;

    // Written by the thread before it dispatches, read by the task (the pool's queue
    // orders the two); the task's reference to the record.
    std::shared_ptr<wait_record> in_flight;
    bool fire_timed_out = false;

    // Under state->inbox_lock.
    bool in_inbox = false;
    wait_record* inbox_next = nullptr;
    std::shared_ptr<wait_record> inbox_ref;  // keeps a queued record alive
};

namespace {

wait_clock::time_point timeout_deadline(wait_clock::time_point now, wait_clock::duration timeout) noexcept {
    if (timeout <= wait_clock::duration::zero()) return now;
    if (timeout >= wait_clock::time_point::max() - now) return wait_clock::time_point::max();
    return now + timeout;
}

// Under state.lock. The record leaves `timeouts`, keeping its node.
void disarm(wait_state& s, wait_record& r) noexcept {
    if (!r.in_timeouts) return;
    r.timeout_node = s.timeouts.extract(r.timeout_pos);
    r.in_timeouts = false;
}

// Under state.lock. The timeout counts from `now`.
void arm(wait_state& s, wait_record& r, wait_clock::time_point now) noexcept {
    r.phase = wait_phase::armed;
    if (!r.has_timeout() || r.in_timeouts) return;
    r.timeout_node.key() = timeout_deadline(now, r.timeout);
    r.timeout_pos = s.timeouts.insert(std::move(r.timeout_node));
    r.in_timeouts = true;
}

// Under state.lock. Returns the map's reference, for the caller to drop after unlocking
// (the record may die with it, and with the record its share of the state).
std::shared_ptr<wait_record> end_wait(wait_state& s, wait_record& r) noexcept {
    disarm(s, r);
    r.phase = wait_phase::ended;
    unwatch_event(r.event, r.auto_reset, &r);
    r.ended.store(true, std::memory_order_release);
    std::shared_ptr<wait_record> ref;
    if (const auto it = s.records.find(&r); it != s.records.end()) {
        ref = std::move(it->second);
        s.records.erase(it);
    }
    return ref;
}

// Under state.lock, for an armed record: whether a set() is there for it to fire on.
bool take_signal(wait_record& r) noexcept {
    const bool latched = r.latched.exchange(false, std::memory_order_acq_rel);
    if (r.auto_reset) return take_event(r.event, true);  // consumes it, or a waiting thread had it
    return latched || take_event(r.event, false);
}

// Under state.lock: the record leaves the armed state and joins `out` for dispatch.
void fire(wait_state& s, wait_record& r, bool timed_out, std::vector<wait_record*>& out) {
    std::shared_ptr<wait_record> ref;
    if (r.once) {
        ref = end_wait(s, r);
    } else {
        disarm(s, r);
        r.phase = wait_phase::firing;
        ref = r.shared_from_this();
    }
    r.in_flight = std::move(ref);
    r.fire_timed_out = timed_out;
    out.push_back(&r);
}

// A firing's callback returned (or threw): watch again, unless the wait ended meanwhile.
void rearm(wait_record& r) noexcept {
    wait_state& s = *r.state;
    {
        std::lock_guard guard(s.lock);
        if (r.phase != wait_phase::firing || s.stopping) return;
        arm(s, r, wait_clock::now());
    }
    s.post(r);  // the thread looks at the event again, and at the new deadline
}

}  // namespace

void wait_state::post(wait_record& r) noexcept {
    {
        std::lock_guard guard(inbox_lock);
        if (r.in_inbox) return;  // already due for a look, which will see this set() too
        // Closed (rearm's check of `stopping` can come just before close()): no look will
        // come, and the reference below would keep the record alive for ever.
        if (inbox_stop) return;
        r.inbox_ref = r.weak_from_this().lock();
        if (!r.inbox_ref) return;  // being destroyed: nobody needs the look
        r.in_inbox = true;
        r.inbox_next = nullptr;
        (inbox_tail ? inbox_tail->inbox_next : inbox_head) = &r;
        inbox_tail = &r;
    }
    inbox_wake.notify_one();
}

void wait_record::on_signalled(event_watcher* w) noexcept {
    auto& r = static_cast<wait_record&>(*w);
    r.latched.store(true, std::memory_order_release);
    if (CONTEND_MUTATION(wait_set_posts_nothing)) return;
    r.state->post(r);
}

void wait_record::run_firing(task_node* n) {
    auto& r = static_cast<wait_record&>(*n);
    const std::shared_ptr<wait_record> self = std::move(r.in_flight);
    const bool timed_out = r.fire_timed_out;
    struct rearm_on_exit {
        wait_record& r;
        ~rearm_on_exit() { rearm(r); }
    } rearm_after{r};
    if (CONTEND_MUTATION(wait_firing_ignores_unregister) || !r.unregistered.load(std::memory_order_acquire))
        r.callback(timed_out);
}

void wait_record::discard_firing(task_node* n) noexcept {
    // The pool is going away: drop the task's reference; the wait stays disarmed.
    auto& r = static_cast<wait_record&>(*n);
    std::shared_ptr<wait_record> self = std::move(r.in_flight);
}

wait_thread::wait_thread(std::string name, dispatch_fn dispatch)
    : state_(std::make_shared<wait_state>()),
      dispatch_(std::move(dispatch)),
      thread_(std::move(name) + "-wait", [this] { run(); }) {}

wait_thread::~wait_thread() { close(); }

void wait_thread::close() {
    if (closed_) return;
    closed_ = true;
    wait_state& s = *state_;
    decltype(s.records) ended;
    {
        std::lock_guard guard(s.lock);
        s.stopping = true;
        for (auto& [raw, ref] : s.records) {
            disarm(s, *raw);
            raw->phase = wait_phase::ended;
            unwatch_event(raw->event, raw->auto_reset, raw);
            raw->ended.store(true, std::memory_order_release);
        }
        ended.swap(s.records);
    }
    {
        std::lock_guard guard(s.inbox_lock);
        s.inbox_stop = true;
    }
    s.inbox_wake.notify_all();
    thread_.stop();
    // Nothing posts any more (every event is unwatched and no record re-arms): release the
    // inbox's references, which would otherwise keep records and state alive in a cycle.
    std::lock_guard guard(s.inbox_lock);
    for (wait_record* r = s.inbox_head; r;) {
        wait_record* next = r->inbox_next;
        r->in_inbox = false;
        r->inbox_next = nullptr;
        r->inbox_ref.reset();
        r = next;
    }
    s.inbox_head = s.inbox_tail = nullptr;
}

std::shared_ptr<wait_record> wait_thread::add(void* event, bool auto_reset, std::function<void(bool)> callback,
                                              clock::duration timeout, bool once) {
    auto r = std::make_shared<wait_record>(state_, event, auto_reset, std::move(callback), timeout, once);
    wait_state& s = *state_;
    {
        std::lock_guard guard(s.lock);
        if (s.stopping) {  // closed: an ended record, never watched, never fired
            r->phase = wait_phase::ended;
            r->ended.store(true, std::memory_order_release);
            return r;
        }
        thread_.start_once();
        s.records.emplace(r.get(), r);
        try {
            if (r->has_timeout()) {
                r->timeout_pos = s.timeouts.emplace(timeout_deadline(clock::now(), timeout), r.get());
                r->in_timeouts = true;
            }
            // A set() before this point notified nobody: latch it for the first look.
            if (watch_event(event, auto_reset, r.get()) && !auto_reset) r->latched.store(true);
        } catch (...) {
            disarm(s, *r);
            s.records.erase(r.get());
            throw;
        }
    }
    s.post(*r);  // the first look: the event may be set already
    return r;
}

std::size_t wait_thread::size() const {
    std::lock_guard guard(state_->lock);
    return state_->records.size();
}

void wait_thread::run() {
    wait_state& s = *state_;
    std::vector<std::shared_ptr<wait_record>> looked_at;
    std::vector<wait_record*> due;
    for (;;) {
        wait_clock::time_point next = wait_clock::time_point::max();
        {
            std::lock_guard guard(s.lock);
            if (s.stopping) return;
            {
                std::lock_guard inbox(s.inbox_lock);
                for (wait_record* r = s.inbox_head; r; r = r->inbox_next) {
                    r->in_inbox = false;
                    looked_at.push_back(std::move(r->inbox_ref));
                }
                s.inbox_head = s.inbox_tail = nullptr;
            }
            due.reserve(s.records.size());  // fire() then never allocates
            for (const auto& r : looked_at) {
                if (r->phase == wait_phase::armed && take_signal(*r)) fire(s, *r, false, due);
            }
            const auto now = wait_clock::now();
            while (!s.timeouts.empty() && s.timeouts.begin()->first <= now) {
                wait_record& r = *s.timeouts.begin()->second;
                // A set() that came with the timeout wins, as for a thread's timed wait.
                fire(s, r, !take_signal(r), due);
            }
            if (!s.timeouts.empty()) next = s.timeouts.begin()->first;
        }
        looked_at.clear();  // outside the lock: an ended record may die here
        // Outside the lock too: a callback run inline may unregister or re-arm.
        for (wait_record* r : due) dispatch_(r);
        due.clear();

        std::unique_lock lk(s.inbox_lock);
        while (!s.inbox_head && !s.inbox_stop) {
            if (s.inbox_wake.wait_until(lk, next) == std::cv_status::timeout) break;
        }
        if (s.inbox_stop) return;
    }
}

void unregister_wait(wait_record& record) noexcept {
    record.unregistered.store(true, std::memory_order_release);
    if (record.ended.load(std::memory_order_acquire)) return;  // unwatched already
    std::shared_ptr<wait_record> ref;
    {
        std::lock_guard guard(record.state->lock);
        if (record.phase != wait_phase::ended) ref = end_wait(*record.state, record);
    }
}

bool wait_is_active(const wait_record& record) noexcept { return !record.ended.load(std::memory_order_acquire); }

}  // namespace contend::internal

namespace contend {

wait_registration& wait_registration::operator=(wait_registration&& other) noexcept {
    if (this != &other) {
        unregister();
        record_ = std::move(other.record_);
    }
    return *this;
}

wait_registration::~wait_registration() { unregister(); }

void wait_registration::unregister() noexcept {
    if (!record_) return;
    internal::unregister_wait(*record_);
    record_.reset();
}

bool wait_registration::active() const noexcept { return record_ && internal::wait_is_active(*record_); }

}  // namespace contend
