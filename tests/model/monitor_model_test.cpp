// Models of contend::monitor over the real code: enter, re-entry and exit of an address
// against contending enters and a thread in wait() that a pulse releases, and the stripe's
// idle entries dropped to make room while a thread waits on an entry of the same stripe.
// With the mutations the checker must find.
#include <chrono>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/monitor.hpp"
#include "contend/synchronization_error.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

// Nine addresses that share one stripe: the one the models lock, and eight that fill the
// stripe so that the next new entry drops the idle ones. Found before the first execution
// (so every fork sees them), with the stripe hash of src/monitor.cpp.
char objects[1 << 14];
const void* same_stripe[9];

std::uint64_t stripe_of(const void* address) {
    return (static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address)) * 0x9E3779B97F4A7C15ull) >> 56;
}

bool find_same_stripe() {
    std::size_t found = 1;
    same_stripe[0] = &objects[0];
    for (std::size_t i = 1; i < sizeof objects && found < 9; ++i)
        if (stripe_of(&objects[i]) == stripe_of(same_stripe[0])) same_stripe[found++] = &objects[i];
    return found == 9;
}

const void* object() { return same_stripe[0]; }

internal::atomic<int> inside{0};

void critical_section() {
    model::check(inside.fetch_add(1) == 0, "at most one thread has entered the address (on entry)");
    model::check(inside.load() == 1, "at most one thread has entered the address (inside)");
    inside.fetch_sub(1);
}

bool exit_throws() {
    try {
        monitor::exit(object());
    } catch (const synchronization_error&) {
        return true;
    }
    return false;
}

bool ready = false;  // under the monitor of object()

// Enters twice, waits (which lets go of both levels) until ready, and exits twice.
void wait_until_ready() {
    monitor::enter(object());
    monitor::enter(object());
    while (!ready) monitor::wait(object());
    critical_section();
    monitor::exit(object());
    model::check(monitor::is_entered(object()), "wait() restored the depth");
    monitor::exit(object());
    model::check(exit_throws(), "a third exit of two enters is refused");
}

// With a deadline that may pass at any point (the strategy chooses when): a timed-out
// enterer must pass on a wake-up it consumed.
void enter_once_timed() {
    if (!monitor::try_enter_for(object(), std::chrono::microseconds(20))) return;
    critical_section();
    monitor::exit(object());
}

void set_ready_and_pulse() {
    monitor::enter(object());
    critical_section();
    ready = true;
    monitor::pulse(object());
    monitor::exit(object());
}

// A waiter, a timed enterer, and a thread that first enters eight more addresses of the
// same stripe, each left idle by its exit (the ninth entry makes the stripe drop its idle
// ones; the entry of object() must stay while it is waited on, since its pulse is counted
// there), then sets ready and pulses. The pulse releases the waiter (or it finds ready set
// and never waits), and no two threads hold object() together.
void enter_wait_pulse() {
    ready = false;
    model::thread waiter(wait_until_ready);
    model::thread other(enter_once_timed);
    for (int i = 1; i < 9; ++i) {
        monitor::enter(same_stripe[i]);
        monitor::exit(same_stripe[i]);
    }
    set_ready_and_pulse();
    waiter.join();
    other.join();
    model::check(monitor::try_enter(object()), "the address is free at the end");
    monitor::exit(object());
}

class MonitorModel : public ::testing::Test {
protected:
    static void SetUpTestSuite() { ASSERT_TRUE(find_same_stripe()) << "no nine addresses share a stripe"; }
};

TEST_F(MonitorModel, EnterWaitPulseAndDroppedEntriesNeverBreakExclusionNorLoseAWaiter) {
    model_test::expect_holds_under_every_strategy(enter_wait_pulse, 1);
}

// A pulse that finds a waiter counted and unparks nobody: the waiter sleeps for good.
TEST_F(MonitorModel, APulseThatWakesNobodyIsFound) {
    expect_found("monitor_pulse_wakes_nobody", enter_wait_pulse, 2000, model_test::every_strategy);
}

// Dropping an idle-looking entry a thread waits on: the pulser's enter makes a new entry
// with no waiter counted, its pulse wakes nobody, and the waiter sleeps for good.
TEST_F(MonitorModel, DroppingAWaitedEntryIsFound) {
    expect_found("monitor_drops_a_waited_entry", enter_wait_pulse, 2000, model_test::every_strategy);
}

}  // namespace
