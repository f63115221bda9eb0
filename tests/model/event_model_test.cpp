// Models of contend::manual_reset_event and auto_reset_event: set against waiters that are
// checking, queueing or parked, a timed waiter, an auto event's one-waiter-per-set, and the
// mutations the checker must find.
#include "contend/cpu_relax.hpp"
#include "contend/event.hpp"
#include "contend/internal/atomic.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

manual_reset_event manual;
auto_reset_event automatic;
internal::atomic<int> released{0};

// Two waiters, one of them timed, and a set: the untimed one always returns; the timed one
// returns true exactly when the event is set.
void manual_set_releases_waiters() {
    manual.reset();
    model::thread a([] { manual.wait(); });
    model::thread b([] {
        const bool got = manual.wait_for(std::chrono::microseconds(30));
        model::check(got == manual.is_set(), "a timed wait's result says whether the event is set");
    });
    manual.set();
    a.join();
    b.join();
}

// Two waiters and two sets, the second only after one waiter was released (two sets with no
// waiter in between release one thread: the event is a flag, not a count).
void auto_set_releases_one_waiter_per_set() {
    released.store(0);
    const auto consume = [] {
        automatic.wait();
        released.fetch_add(1);
    };
    model::thread a(consume);
    model::thread b(consume);
    automatic.set();
    while (released.load() < 1) cpu_relax();
    automatic.set();
    a.join();
    b.join();
    model::check(released.load() == 2 && !automatic.is_set(), "each set released one waiter and was consumed");
}

TEST(EventModel, ManualSetReleasesEveryWaiter) {
    model_test::expect_holds_under_every_strategy(manual_set_releases_waiters, 2);
}

TEST(EventModel, AutoSetReleasesOneWaiterPerSet) {
    model_test::expect_holds_under_every_strategy(auto_set_releases_one_waiter_per_set, 2);
}

TEST(EventModel, AManualSetThatWakesNobodyIsFound) {
    expect_found("manual_reset_event_set_wakes_nobody", manual_set_releases_waiters, 2000, model_test::every_strategy);
}

TEST(EventModel, AnAutoSetThatWakesWithoutTheSignalIsFound) {
    expect_found("auto_reset_event_set_wakes_without_the_signal", auto_set_releases_one_waiter_per_set, 2000,
                 model_test::every_strategy);
}

}  // namespace
