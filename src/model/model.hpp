// The model checker's interface for tests (the model-checking build only: CONTEND_MODEL_CHECK;
// docs/design/model-checking.md). A model is a function that starts a few model::threads over
// the library's real code and states what must hold with model::check. explore() runs it many
// times, each time in a forked child process, under a scheduler that runs one thread at a time
// and picks the next at every atomic operation, wait, wake, yield, thread start and exit.
//
//   const auto result = model::explore({.strategy = model::strategy_kind::pct}, [] {
//       static contend::mutex m;  // static: the same address in every execution
//       model::thread a([] { m.lock(); m.unlock(); });
//       m.lock(); m.unlock();
//       a.join();
//   });
//   EXPECT_FALSE(result.failed) << result.report;
//
// An execution fails on a model::check that does not hold, on every thread blocked with none
// able to time out (a deadlock or a lost wake-up), on more than max_steps scheduling points
// (a livelock, or a spin that never ends), on an uncaught exception or a crash, and on an
// execution that runs longer than a real-time bound (a block outside the model). The report
// names the schedule spec, and CONTEND_MODEL_SEED=<spec> makes explore() run that one
// execution again, exactly.
//
// The primitives a model uses should be static objects, so that their addresses (which choose
// waiter slots and parking-lot buckets) are the same in every execution and in a replay; the
// test program disables address-space randomization for the same reason (tests/model/main.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace contend::model {

enum class strategy_kind { random, pct, bounded };

struct plan {
    strategy_kind strategy = strategy_kind::pct;
    // random and pct: how many executions; bounded: the most it may run before it reports an
    // incomplete search. CONTEND_MODEL_SCHEDULES=N overrides it (scripts/model_check.sh).
    std::uint64_t executions = 1000;
    unsigned pct_depth = 3;
    unsigned preemptions = 2;  // bounded: at most this many preemptive switches per execution
    std::uint64_t seed = 1;
    std::uint64_t max_steps = 100'000;
    // A deliberately broken variant of one protocol step (CONTEND_MUTATION in the library),
    // or empty for the real code.
    std::string mutation;
};

struct outcome {
    bool failed = false;
    std::string message;  // why the failing execution failed
    std::string spec;  // the failing schedule's spec, for CONTEND_MODEL_SEED
    std::string schedule;  // its steps: which thread did which operation
    std::uint64_t executions = 0;  // executions run
    bool complete = false;  // bounded: every schedule within the preemption bound was run
    std::uint64_t longest = 0;  // the most scheduling points one execution took
    std::uint64_t diverged = 0;  // bounded: replays that did not follow their prefix
    std::string report;  // all of the above, as text
};

outcome explore(const plan& p, const std::function<void()>& body);

// A thread of the model. It must be joined or finish by itself before the model's body ends;
// the body's end waits for every thread.
class thread {
public:
    explicit thread(std::function<void()> body);
    thread(const thread&) = delete;
    thread& operator=(const thread&) = delete;
    ~thread();
    void join();

private:
    void* state_;
    bool joined_ = false;
};

// Fails the execution unless `ok`; `what` says what should have held.
void check(bool ok, const char* what);

}  // namespace contend::model
