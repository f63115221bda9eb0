// The wait-policy suite: the sleeping-spinlock study (docs/references.md) separated the two choices inside its sleeping
// lock (read before exchanging; eventually leave the run queue) by holding the lock and the critical section fixed and
// changing only what a losing waiter does. The probes suite (probes.cpp) sweeps the other choice.
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/parking_lot.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// A test-and-test-and-set lock: it reads the word and exchanges only when the word looks
// free. After every failed probe it calls Policy::wait. Unlock is a store, except for the
// park policy, which must learn whether someone sleeps (see park_policy).
template <class Policy>
class policy_lock {
public:
    void lock() {
        Policy policy;
        for (;;) {
            if (state_.load(std::memory_order_relaxed) == 0 &&
                state_.exchange(policy.lock_value(), std::memory_order_acquire) == 0)
                return;
            policy.wait(state_);
        }
    }
    void unlock() { Policy::release(state_); }

private:
    std::atomic<std::uint32_t> state_{0};  // 0 free, 1 held, 2 held and a waiter may sleep
};

// The policies that leave the waiter runnable share the plain release.
struct spin_release {
    static std::uint32_t lock_value() { return 1; }
    static void release(std::atomic<std::uint32_t>& s) { s.store(0, std::memory_order_release); }
};

struct retry_policy : spin_release {
    void wait(std::atomic<std::uint32_t>&) {}
};
struct pause_policy : spin_release {
    void wait(std::atomic<std::uint32_t>&) { contend::cpu_relax(); }
};
// Doubles the pauses after every failed probe, up to 1,024; starts over per acquisition.
struct exp_pause_policy : spin_release {
    std::uint32_t pauses = 1;
    void wait(std::atomic<std::uint32_t>&) {
        for (std::uint32_t i = 0; i < pauses; ++i) contend::cpu_relax();
        if (pauses < 1024) pauses *= 2;
    }
};
struct yield_policy : spin_release {
    void wait(std::atomic<std::uint32_t>&) { sched_yield(); }
};
// A request for 1 ns: the scheduler decides how long it really is (timer slack, ~90 us
// with the default 50 us slack).
struct nanosleep_policy : spin_release {
    void wait(std::atomic<std::uint32_t>&) {
        const timespec one{0, 1};
        nanosleep(&one, nullptr);
    }
};
// Parks in the parking lot until an unlock wakes it. The word says 2 while someone may
// sleep, so that unlock knows to wake; a thread that has slept takes the lock with 2
// (it cannot know whether others still sleep), as in Drepper's "Futexes are tricky".
struct park_policy {
    bool slept = false;
    std::uint32_t lock_value() const { return slept ? 2 : 1; }
    void wait(std::atomic<std::uint32_t>& s) {
        std::uint32_t v = s.load(std::memory_order_relaxed);
        if (v == 0) return;
        if (v == 1 && !s.compare_exchange_strong(v, 2, std::memory_order_relaxed)) return;
        parking_lot::park(&s, [&s] { return s.load(std::memory_order_relaxed) == 2; });
        slept = true;
    }
    static void release(std::atomic<std::uint32_t>& s) {
        if (s.exchange(0, std::memory_order_release) == 2) parking_lot::unpark_one(&s);
    }
};

}  // namespace

suite make_wait_policy_suite() {
    return {"wait-policy",
            "one read-before-exchange lock and one critical section (a plain increment); only what a losing "
            "waiter does changes",
            {
                lock_contender<policy_lock<retry_policy>>("retry", "probe again at once"),
                lock_contender<policy_lock<pause_policy>>("pause", "one pause per failed probe"),
                lock_contender<policy_lock<exp_pause_policy>>("exp_pause", "pauses doubling to 1,024"),
                lock_contender<policy_lock<yield_policy>>("sched_yield", "sched_yield after a failed probe"),
                lock_contender<policy_lock<nanosleep_policy>>("nanosleep", "1 ns nanosleep after a failed probe"),
                lock_contender<policy_lock<park_policy>>("park", "park in the parking lot; unlock wakes one"),
            },
            {2, 4, 64}};
}

}  // namespace contend::lab
