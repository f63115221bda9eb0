// Models of contend::barrier and contend::call_once: the last arrival of a phase against a
// drop and a waiter; a call_once whose first call throws while another caller waits; and the
// mutations the checker must find.
#include "contend/barrier.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/once.hpp"
#include "model_support.hpp"
#include "platform/yield.hpp"

namespace {

using namespace contend;
using model_test::expect_found;

internal::atomic<int> completions{0};
internal::atomic<int> made{0};
internal::atomic<int> work{0};

// Three arrive in phase 0, one of them dropping out; main and the other then meet in phase 1.
// Both phases complete, once each, and nobody waits for the dropped thread.
void last_arrival_against_a_drop() {
    completions.store(0);
    barrier sync(3, []() noexcept { completions.fetch_add(1); });
    model::thread dropper([&sync] { sync.arrive_and_drop(); });
    model::thread other([&sync] {
        sync.arrive_and_wait();
        sync.arrive_and_wait();
    });
    sync.arrive_and_wait();
    model::check(completions.load() >= 1, "a thread left phase 0 before its completion");
    sync.arrive_and_wait();
    model::check(completions.load() == 2, "phase 1 did not complete exactly once");
    dropper.join();
    other.join();
}

// Two meet in one phase, the second after 100 steps of work, each of which yields: the first
// watches the phase for a while (its watch yields too, so every strategy runs the two in
// turn), then sleeps, and the late arrival must wake it.
void a_late_last_arrival() {
    work.store(0);
    barrier sync(2);
    model::thread late([&sync] {
        for (int i = 0; i < 100; ++i) {
            work.fetch_add(1);
            internal::yield_cpu();
        }
        sync.arrive_and_wait();
    });
    sync.arrive_and_wait();
    model::check(work.load() == 100, "the phase ended before the late arrival");
    late.join();
}

// A first call that throws, against a second caller that may wait for it: one call returns,
// and it is made exactly once.
void call_once_whose_first_call_throws() {
    made.store(0);
    once_flag flag;
    model::thread thrower([&flag] {
        try {
            call_once(flag, [] { throw 1; });
        } catch (int) {
        }
    });
    call_once(flag, [] { made.fetch_add(1); });
    thrower.join();
    model::check(made.load() == 1, "the call that returns was made once");
}

TEST(BarrierModel, TheLastArrivalOfAPhaseAgainstADrop) {
    model_test::expect_holds_under_every_strategy(last_arrival_against_a_drop, 1);
}

TEST(OnceModel, ACallThatThrowsWhileAnotherWaits) {
    model_test::expect_holds_under_every_strategy(call_once_whose_first_call_throws, 2);
}

TEST(BarrierModel, ALateLastArrival) { model_test::expect_holds_under_every_strategy(a_late_last_arrival, 1); }

// A waiter watches the phase word before it sleeps; the mutation shows only once it sleeps,
// so the model's last arrival comes late, after the watch has run out.
TEST(BarrierModel, ALastArrivalThatWakesNobodyIsFound) {
    expect_found("barrier_last_arrival_wakes_nobody", a_late_last_arrival, 2000, model_test::every_strategy);
}

TEST(OnceModel, AnEndThatWakesNobodyIsFound) {
    expect_found("once_end_wakes_nobody", call_once_whose_first_call_throws, 2000, model_test::every_strategy);
}

}  // namespace
