#include "model/scheduler.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "contend/cpu_relax.hpp"
#include "contend/internal/deadline.hpp"
#include "model/model.hpp"
#include "model/mutation.hpp"
#include "model/strategy.hpp"

namespace contend::model {
namespace detail {
namespace {

using time_point = std::chrono::steady_clock::time_point;
// Every execution starts at the same time, so a replay reads the same clock.
constexpr time_point model_origin{std::chrono::hours(1)};
// What a yield costs in model time: a spin bounded by the clock ends after a bounded number of
// yields even when no other thread can run.
constexpr auto yield_quantum = std::chrono::microseconds(1);
// A failure's report shows its last steps; a replay (CONTEND_MODEL_SEED), which is for reading,
// shows them all.
constexpr std::size_t schedule_lines_shown = 400;

enum class thread_state { runnable, blocked, finished };

struct model_thread {
    int id = 0;
    std::atomic<std::uint32_t> baton{0};  // 1: this thread runs next (the scheduler's own word)
    thread_state state = thread_state::runnable;
    const void* blocked_on = nullptr;
    time_point until = time_point::max();
    std::uint64_t block_order = 0;  // wakes go to the longest-blocked waiter first
    bool timed_out = false;
    bool yielded = false;  // yielded or spun since its last scheduling point
    std::uint32_t spins = 0;  // points that followed a yield or spin since it last took the baton
    std::function<void()> body;
};

struct step {
    int thread;
    step_kind kind;
    const void* address;
    std::uint64_t before = 0, after = 0;
    bool recorded = false;
};

struct choice {
    int current;
    bool current_runnable;
    bool yielded;
    int chosen;
    int default_thread;  // what default_choice would have run (the bounded search's free choice)
    std::vector<int> enabled;
    std::vector<bool> timed;  // per enabled thread: a timed waiter, which would time out
};

struct execution {
    std::unique_ptr<strategy> chooser;
    std::uint64_t max_steps = 0;
    int report_fd = -1;
    std::vector<std::unique_ptr<model_thread>> threads;  // never shrinks: the pointers stay valid
    std::uint64_t steps = 0;
    std::uint64_t blocks = 0;
    time_point now = model_origin;
    std::vector<step> log;
    std::vector<choice> choices;
};

execution* current_execution = nullptr;
// A plain pointer, so it stays readable while the thread's other thread_locals are destroyed.
thread_local model_thread* self = nullptr;
std::string active_mutation;

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) noexcept {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

void give_baton(model_thread* next) noexcept {
    next->baton.store(1, std::memory_order_release);
    futex(next->baton, FUTEX_WAKE_PRIVATE, 1);
}

// No spin before sleeping: a spin measured no faster on the 2-CPU VM (the woken thread and two
// executions side by side need both CPUs), and much slower with long spins.
void take_baton(model_thread* me) noexcept {
    while (me->baton.load(std::memory_order_acquire) == 0) futex(me->baton, FUTEX_WAIT_PRIVATE, 0);
    me->baton.store(0, std::memory_order_relaxed);
}

const char* kind_name(step_kind k) noexcept {
    switch (k) {
        case step_kind::load:
            return "load";
        case step_kind::store:
            return "store";
        case step_kind::exchange:
            return "exchange";
        case step_kind::compare_exchange:
            return "compare_exchange";
        case step_kind::fetch_add:
            return "fetch_add";
        case step_kind::fetch_sub:
            return "fetch_sub";
        case step_kind::fetch_and:
            return "fetch_and";
        case step_kind::fetch_or:
            return "fetch_or";
        case step_kind::fetch_xor:
            return "fetch_xor";
        case step_kind::fence:
            return "fence";
        case step_kind::wait:
            return "wait";
        case step_kind::wake_one:
            return "wake_one";
        case step_kind::wake_all:
            return "wake_all";
        case step_kind::yield:
            return "yield";
        case step_kind::spawn:
            return "spawn";
        case step_kind::join:
            return "join";
        case step_kind::exit:
            return "exit";
    }
    return "?";
}

std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

void write_all(int fd, const std::string& text) noexcept {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

void write_report(bool failed, const std::string& message) noexcept {
    execution& e = *current_execution;
    std::string out;
    out += failed ? "status fail\n" : "status ok\n";
    out += "steps " + std::to_string(e.steps) + "\n";
    out += std::string("diverged ") + (e.chooser && e.chooser->diverged() ? "1" : "0") + "\n";
    out += "message " + one_line(message) + "\n";
    for (const choice& c : e.choices) {
        out += "choice " + std::to_string(c.current) + " " + (c.current_runnable ? "1" : "0") + " " +
               (c.yielded ? "1" : "0") + " " + std::to_string(c.chosen) + " " + std::to_string(c.default_thread) + " ";
        for (std::size_t i = 0; i < c.enabled.size(); ++i) {
            if (i) out += ',';
            out += std::to_string(c.enabled[i]);
            if (c.timed[i]) out += 't';
        }
        out += '\n';
    }
    out += "schedule\n";
    const std::size_t shown = std::getenv("CONTEND_MODEL_SEED") ? e.log.size() : schedule_lines_shown;
    const std::size_t first = e.log.size() > shown ? e.log.size() - shown : 0;
    if (first > 0) out += "  (" + std::to_string(first) + " earlier steps not shown)\n";
    char line[160];
    for (std::size_t i = first; i < e.log.size(); ++i) {
        const step& s = e.log[i];
        if (s.recorded)
            std::snprintf(line, sizeof line, "  %6zu  T%d  %-16s %p  %" PRIu64 " -> %" PRIu64 "\n", i + 1, s.thread,
                          kind_name(s.kind), s.address, s.before, s.after);
        else std::snprintf(line, sizeof line, "  %6zu  T%d  %-16s %p\n", i + 1, s.thread, kind_name(s.kind), s.address);
        out += line;
    }
    write_all(e.report_fd, out);
}

[[noreturn]] void fail(const std::string& message) noexcept {
    write_report(true, message);
    ::_exit(1);
}

std::string blocked_threads() {
    std::string out;
    for (const auto& t : current_execution->threads) {
        if (t->state != thread_state::blocked) continue;
        char line[96];
        std::snprintf(line, sizeof line, "%sT%d waits on %p", out.empty() ? "" : ", ", t->id, t->blocked_on);
        out += line;
    }
    return out;
}

// The scheduling point proper: the strategy picks who runs next among the runnable threads
// and the timed waiters, and the baton goes there. Returns when the calling thread runs again
// (at once if it was chosen), or at once for a thread that has just finished.
void schedule() noexcept {
    execution& e = *current_execution;
    model_thread* me = self;
    if (++e.steps > e.max_steps)
        fail("more than " + std::to_string(e.max_steps) +
             " scheduling points: a livelock, or a spin that never ends (raise plan.max_steps if the model is "
             "just long)");
    choice_view view;
    view.current = me->id;
    view.current_runnable = me->state == thread_state::runnable;
    view.current_yielded = me->yielded;
    if (me->yielded) ++me->spins;
    view.current_spins = me->spins;
    view.step = e.steps;
    for (const auto& t : e.threads) {
        if (t->state == thread_state::runnable) view.enabled.push_back({t->id, false, {}});
        else if (t->state == thread_state::blocked && t->until != time_point::max())
            view.enabled.push_back({t->id, true, t->until});
    }
    if (view.enabled.empty())
        fail("deadlock: every thread is blocked and none can time out (" + blocked_threads() +
             "): a lost wake-up, or a wait that nobody can end");
    std::size_t pick = 0;
    if (view.enabled.size() > 1) {
        pick = e.chooser->choose(view);
        choice c{view.current,
                 view.current_runnable,
                 view.current_yielded,
                 view.enabled[pick].thread,
                 view.enabled[default_choice(view)].thread,
                 {},
                 {}};
        for (const auto& cand : view.enabled) {
            c.enabled.push_back(cand.thread);
            c.timed.push_back(cand.timed_waiter);
        }
        e.choices.push_back(std::move(c));
    }
    me->yielded = false;
    model_thread* next = e.threads[static_cast<std::size_t>(view.enabled[pick].thread)].get();
    if (next->state == thread_state::blocked) {  // a timed waiter: its wait times out now
        next->state = thread_state::runnable;
        next->timed_out = true;
        next->blocked_on = nullptr;
        if (next->until > e.now) e.now = next->until;
    }
    if (next == me) return;
    me->spins = 0;
    const bool leaving = me->state == thread_state::finished;
    give_baton(next);
    if (!leaving) take_baton(me);
}

// Blocks the calling thread on `address` until woken (or, with a deadline, timed out).
// Returns whether it timed out.
bool block_on(const void* address, time_point until) noexcept {
    execution& e = *current_execution;
    self->state = thread_state::blocked;
    self->blocked_on = address;
    self->until = until;
    self->block_order = ++e.blocks;
    self->timed_out = false;
    schedule();
    return self->timed_out;
}

std::size_t wake_waiters(const void* address, bool all) noexcept {
    std::size_t woken = 0;
    for (;;) {
        model_thread* first = nullptr;
        for (const auto& t : current_execution->threads)
            if (t->state == thread_state::blocked && t->blocked_on == address &&
                (!first || t->block_order < first->block_order))
                first = t.get();
        if (!first) return woken;
        first->state = thread_state::runnable;
        first->blocked_on = nullptr;
        first->until = time_point::max();
        ++woken;
        if (!all) return woken;
    }
}

void point_and_log(step_kind kind, const void* address) noexcept {
    if (kind == step_kind::yield) {
        self->yielded = true;
        current_execution->now += yield_quantum;
    }
    schedule();
    current_execution->log.push_back({self->id, kind, address});
}

// Destroyed after every other thread_local of its thread (it is constructed first), so the
// library's thread-exit work (returning a thread id, a parking slot) runs as steps of the model
// thread, and the thread's exit is the last of them.
struct exit_point {
    bool armed = false;
    ~exit_point() {
        if (!armed || !self) return;
        point_and_log(step_kind::exit, self);
        self->state = thread_state::finished;
        wake_waiters(self, true);  // joiners
        wake_waiters(&current_execution->threads, true);  // the end of the body waits for all
        schedule();  // hands the baton on and returns: this thread is done
        self = nullptr;
    }
};

void thread_main(model_thread* t) {
    self = t;
    take_baton(t);
    // Only now, holding the baton: registering the destructor allocates, and an allocation
    // racing the running model thread could change the addresses it gets.
    thread_local exit_point at_exit;
    at_exit.armed = true;
    try {
        t->body();
    } catch (const std::exception& ex) {
        fail("thread T" + std::to_string(t->id) + " ended with an uncaught exception: " + ex.what());
    } catch (...) {
        fail("thread T" + std::to_string(t->id) + " ended with an uncaught exception");
    }
}

void on_crash(int sig) {
    fail("the execution crashed with signal " + std::to_string(sig) + " (" + strsignal(sig) + ")");
}

}  // namespace

void set_mutation(const std::string& name) { active_mutation = name; }

void run_execution(const std::string& spec, std::uint64_t max_steps, const std::function<void()>& body, int report_fd) {
    static execution e;  // the child's one execution; never destroyed (the process ends in _exit)
    e.max_steps = max_steps;
    e.report_fd = report_fd;
    current_execution = &e;
    auto main = std::make_unique<model_thread>();
    self = main.get();
    e.threads.push_back(std::move(main));
    try {
        e.chooser = make_strategy(spec);
    } catch (const std::exception& ex) {
        fail(ex.what());
    }
    e.chooser->on_spawn(0);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, on_crash);
    try {
        body();
    } catch (const std::exception& ex) {
        fail(std::string("the model's body ended with an uncaught exception: ") + ex.what());
    } catch (...) {
        fail("the model's body ended with an uncaught exception");
    }
    point_and_log(step_kind::join, &e.threads);
    for (;;) {
        bool all_done = true;
        for (std::size_t i = 1; i < e.threads.size(); ++i)
            if (e.threads[i]->state != thread_state::finished) all_done = false;
        if (all_done) break;
        block_on(&e.threads, time_point::max());
    }
    write_report(false, "");
    ::_exit(0);
}

}  // namespace detail

namespace hooks {

bool in_execution() noexcept { return detail::self != nullptr; }

void point(step_kind kind, const void* address) noexcept {
    if (detail::self) detail::point_and_log(kind, address);
}

void record(std::uint64_t before, std::uint64_t after) noexcept {
    if (!detail::self) return;
    auto& s = detail::current_execution->log.back();
    s.before = before;
    s.after = after;
    s.recorded = true;
}

void spin_hint() noexcept {
    if (detail::self) detail::self->yielded = true;
}

std::chrono::steady_clock::time_point now() noexcept {
    return detail::self ? detail::current_execution->now : std::chrono::steady_clock::now();
}

bool mutation(const char* name) noexcept { return !detail::active_mutation.empty() && detail::active_mutation == name; }

bool wait(const void* address, bool (*still_blocks)(const void*, std::uint32_t), std::uint32_t expected,
          std::chrono::steady_clock::time_point until) noexcept {
    detail::point_and_log(step_kind::wait, address);
    const bool blocks = still_blocks(address, expected);
    record(expected, blocks ? 1 : 0);
    if (!blocks) return false;
    if (until != detail::time_point::max() && until <= detail::current_execution->now) return true;
    return detail::block_on(address, until);
}

void wake(const void* address, bool all) noexcept {
    detail::point_and_log(all ? step_kind::wake_all : step_kind::wake_one, address);
    const std::size_t woken = detail::wake_waiters(address, all);
    record(0, woken);
}

}  // namespace hooks

thread::thread(std::function<void()> body) {
    if (!detail::self) throw std::logic_error("model::thread: started outside a model::explore body");
    auto& e = *detail::current_execution;
    auto t = std::make_unique<detail::model_thread>();
    t->id = static_cast<int>(e.threads.size());
    t->body = std::move(body);
    detail::model_thread* raw = t.get();
    e.threads.push_back(std::move(t));
    e.chooser->on_spawn(raw->id);
    std::thread(detail::thread_main, raw).detach();
    state_ = raw;
    hooks::point(step_kind::spawn, raw);
}

thread::~thread() {
    if (!joined_ && detail::self) join();
}

void thread::join() {
    if (joined_) throw std::logic_error("model::thread::join: joined twice");
    joined_ = true;
    auto* t = static_cast<detail::model_thread*>(state_);
    hooks::point(step_kind::join, t);
    while (t->state != detail::thread_state::finished) detail::block_on(t, detail::time_point::max());
}

void check(bool ok, const char* what) {
    if (ok) return;
    if (!detail::self) throw std::logic_error(std::string("model::check outside an execution failed: ") + what);
    detail::fail(std::string("check failed: ") + what);
}

}  // namespace contend::model
