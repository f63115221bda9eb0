// The event watch hook the pool's registered waits stand on (contend/event.hpp,
// internal::watch_event): every set of a watched event notifies, and a watched event still
// releases the threads parked on it.
#include <atomic>
#include <thread>

#include "contend/event.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::auto_reset_event;
using contend::manual_reset_event;

namespace {

// A watcher that counts notifications.
struct counting_watcher : contend::internal::event_watcher {
    std::atomic<int> count{0};
    counting_watcher() {
        signalled = [](event_watcher* w) noexcept { static_cast<counting_watcher*>(w)->count.fetch_add(1); };
    }
};

}  // namespace

// --- The event hook -------------------------------------------------------------------

TEST(EventWatch, EverySetOfAWatchedManualEventNotifies) {
    manual_reset_event ev;
    counting_watcher w;
    EXPECT_FALSE(contend::internal::watch_event(&ev, false, &w));
    ev.set();
    EXPECT_EQ(w.count.load(), 1);
    ev.set();  // already set: a watcher between firings still wants to know
    EXPECT_EQ(w.count.load(), 2);
    ev.reset();
    EXPECT_FALSE(ev.is_set());
    ev.set();  // reset kept the watch
    EXPECT_EQ(w.count.load(), 3);
    contend::internal::unwatch_event(&ev, false, &w);
    ev.set();
    EXPECT_EQ(w.count.load(), 3);
    EXPECT_TRUE(ev.wait_for(0ms));
}

TEST(EventWatch, AutoEventNotifiesWhenASetIsLeftInIt) {
    auto_reset_event ev;
    counting_watcher w;
    EXPECT_FALSE(contend::internal::watch_event(&ev, true, &w));
    ev.set();
    EXPECT_EQ(w.count.load(), 1);
    ev.set();  // still set: the set that is there was already announced
    EXPECT_EQ(w.count.load(), 1);
    EXPECT_TRUE(contend::internal::take_event(&ev, true));
    EXPECT_FALSE(contend::internal::take_event(&ev, true)) << "a take consumes the set";
    EXPECT_FALSE(ev.is_set());
    ev.set();
    ev.reset();  // reset keeps the watch
    ev.set();
    EXPECT_EQ(w.count.load(), 3);
    contend::internal::unwatch_event(&ev, true, &w);
    ev.reset();
    ev.set();
    EXPECT_EQ(w.count.load(), 3);
    EXPECT_TRUE(ev.wait_for(0ms));
}

TEST(EventWatch, WatchReportsASetThatCameBefore) {
    manual_reset_event m(true);
    auto_reset_event a(true);
    counting_watcher wm, wa;
    EXPECT_TRUE(contend::internal::watch_event(&m, false, &wm));
    EXPECT_TRUE(contend::internal::watch_event(&a, true, &wa));
    EXPECT_EQ(wm.count.load() + wa.count.load(), 0);
    contend::internal::unwatch_event(&m, false, &wm);
    contend::internal::unwatch_event(&a, true, &wa);
}

TEST(EventWatch, TwoWatchersOfOneEventAreBothNotifiedUntilEachLeaves) {
    manual_reset_event ev;
    counting_watcher w1, w2;
    contend::internal::watch_event(&ev, false, &w1);
    contend::internal::watch_event(&ev, false, &w2);
    ev.set();
    EXPECT_EQ(w1.count.load(), 1);
    EXPECT_EQ(w2.count.load(), 1);
    contend::internal::unwatch_event(&ev, false, &w1);
    ev.set();
    EXPECT_EQ(w1.count.load(), 1);
    EXPECT_EQ(w2.count.load(), 2);
    contend::internal::unwatch_event(&ev, false, &w2);
    contend::internal::unwatch_event(&ev, false, &w2);  // twice: nothing happens
    ev.set();
    EXPECT_EQ(w2.count.load(), 2);
}

TEST(EventWatch, WatchedEventsStillReleaseParkedThreads) {
    watchdog dog(60s);
    manual_reset_event m;
    auto_reset_event a;
    counting_watcher wm, wa;
    contend::internal::watch_event(&m, false, &wm);
    contend::internal::watch_event(&a, true, &wa);
    std::atomic<int> released{0};
    tid_box tm_id, ta_id;
    std::thread tm([&] {
        tm_id.publish();
        released.fetch_add(m.wait_for(30s) ? 1 : 0);
    });
    std::thread ta([&] {
        ta_id.publish();
        released.fetch_add(a.wait_for(30s) ? 1 : 0);
    });
    EXPECT_TRUE(eventually_blocked({tm_id.get(), ta_id.get()})) << "the waiters never blocked";
    m.set();
    a.set();
    tm.join();
    ta.join();
    EXPECT_EQ(released.load(), 2);
    EXPECT_EQ(wm.count.load(), 1);
    contend::internal::unwatch_event(&m, false, &wm);
    contend::internal::unwatch_event(&a, true, &wa);
}
