// The pool's registered-wait thread (src/pool/wait_thread.hpp) on its own; the event watch
// hook it stands on is event_watch_test.cpp's. Firings run on a small test-owned executor
// with two threads, so that overlapping firings could show.
//
// Declaration order matters in every test: what the callbacks touch, then the executor,
// then the wait_thread, so that the wait_thread goes first and the executor runs whatever
// it was handed while the callbacks' data is still there.
#include "pool/wait_thread.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "contend/event.hpp"
#include "contend/thread_pool.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::auto_reset_event;
using contend::manual_reset_event;
using contend::internal::task_node;
using contend::internal::wait_record;
using contend::internal::wait_thread;

namespace {

constexpr auto no_timeout = wait_thread::clock::duration::max();

// Runs dispatched nodes on its own threads; runs what is left when destroyed.
class test_executor {
public:
    explicit test_executor(int threads = 2) : tids_(static_cast<std::size_t>(threads)) {
        for (int i = 0; i < threads; ++i)
            threads_.emplace_back([this, i] {
                tids_[static_cast<std::size_t>(i)].publish();
                work();
            });
    }
    ~test_executor() {
        {
            std::lock_guard lk(m_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
        for (task_node* n : queue_) n->run(n);
    }
    wait_thread::dispatch_fn dispatcher() {
        return [this](task_node* n) {
            {
                std::lock_guard lk(m_);
                queue_.push_back(n);
            }
            cv_.notify_one();
        };
    }
    // The kernel ids of its threads, for thread_blocked.
    std::vector<int> thread_ids() const {
        std::vector<int> ids;
        for (const auto& t : tids_) ids.push_back(t.get());
        return ids;
    }

private:
    void work() {
        std::unique_lock lk(m_);
        for (;;) {
            cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
            if (stop_) return;
            task_node* n = queue_.front();
            queue_.pop_front();
            lk.unlock();
            n->run(n);
            lk.lock();
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<task_node*> queue_;
    bool stop_ = false;
    std::vector<tid_box> tids_;
    std::vector<std::thread> threads_;
};

// What a registration's callback saw.
struct firings {
    std::atomic<int> signalled{0};  // callback(false)
    std::atomic<int> timed_out{0};  // callback(true)
    std::atomic<int> running{0};
    std::atomic<int> max_running{0};

    std::function<void(bool)> callback(std::chrono::microseconds work = 0us) {
        return [this, work](bool t) {
            const int now = running.fetch_add(1) + 1;
            int seen = max_running.load();
            while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
            }
            if (work > 0us) std::this_thread::sleep_for(work);
            running.fetch_sub(1);
            (t ? timed_out : signalled).fetch_add(1);
        };
    }
    int total() const { return signalled.load() + timed_out.load(); }
};

// Waits (bounded) until nothing is in flight: the wait thread named "w-wait" (unless
// `with_wait_thread` is false: it is gone) and every executor thread blocked, in two rounds
// of looks one after the other, and `count` the same before and after them. Whatever a
// thread hands on (a firing to the executor, a re-arming to the wait thread) wakes its
// receiver before the giver blocks, so a hand-over under way shows as a thread not blocked
// in the second round, or as a changed count. Returns whether it settled.
template <class Count>
bool settles(const test_executor& ex, Count count, bool with_wait_thread = true) {
    const std::vector<int> executor = ex.thread_ids();
    return eventually([&] {
        std::vector<int> ids = executor;
        if (with_wait_thread) ids.push_back(thread_id_named("w-wait"));
        const auto before = count();
        for (int round = 0; round < 2; ++round)
            for (int tid : ids)
                if (!thread_blocked(tid)) return false;
        return count() == before;
    });
}

}  // namespace

// --- Registered waits ---------------------------------------------------------------

TEST(WaitThread, FiresOnceOnSetOfAManualEvent) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, false, f.callback(), no_timeout, true);
    EXPECT_EQ(wt.size(), 1u);
    EXPECT_TRUE(contend::internal::wait_is_active(*rec));
    ev.set();
    ASSERT_TRUE(eventually([&] { return f.total() == 1; }));
    EXPECT_EQ(f.signalled.load(), 1);
    EXPECT_FALSE(contend::internal::wait_is_active(*rec));
    EXPECT_EQ(wt.size(), 0u);
    EXPECT_TRUE(ev.is_set()) << "a manual event is not consumed";
}

TEST(WaitThread, FiresOnSetOfAnAutoEventAndConsumesTheSet) {
    watchdog dog(60s);
    auto_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, true, f.callback(), no_timeout, true);
    ev.set();
    ASSERT_TRUE(eventually([&] { return f.total() == 1; }));
    EXPECT_EQ(f.signalled.load(), 1);
    EXPECT_FALSE(ev.is_set());
    EXPECT_FALSE(ev.wait_for(0ms));
}

TEST(WaitThread, AnEventSetBeforeRegistrationFiresAtOnce) {
    watchdog dog(60s);
    manual_reset_event m(true);
    auto_reset_event a(true);
    firings fm, fa;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rm = wt.add(&m, false, fm.callback(), no_timeout, true);
    auto ra = wt.add(&a, true, fa.callback(), no_timeout, true);
    ASSERT_TRUE(eventually([&] { return fm.signalled.load() == 1 && fa.signalled.load() == 1; }));
    EXPECT_FALSE(a.is_set());
}

TEST(WaitThread, TimesOutWithTimedOutTrueNeverEarly) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    std::atomic<long long> fired_after_ns{-1};
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    const auto start = steady::now();
    auto rec = wt.add(
        &ev, false,
        [&](bool timed_out) {
            fired_after_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - start).count());
            (timed_out ? f.timed_out : f.signalled).fetch_add(1);
        },
        50ms, true);
    ASSERT_TRUE(eventually([&] { return f.total() == 1; }));
    EXPECT_EQ(f.timed_out.load(), 1);
    EXPECT_GE(std::chrono::nanoseconds(fired_after_ns.load()), 50ms);
    EXPECT_FALSE(contend::internal::wait_is_active(*rec));
}

TEST(WaitThread, RepeatingTimeoutRestartsAfterEachFiringNeverEarly) {
    watchdog dog(60s);
    manual_reset_event ev;
    std::mutex m;
    std::vector<steady::time_point> starts, ends;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    const auto registered = steady::now();
    auto rec = wt.add(
        &ev, false,
        [&](bool timed_out) {
            EXPECT_TRUE(timed_out);
            std::lock_guard lk(m);
            starts.push_back(steady::now());
            std::this_thread::sleep_for(5ms);  // the next timeout counts from the callback's return
            ends.push_back(steady::now());
        },
        20ms, false);
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(m);
        return ends.size() >= 5;
    }));
    contend::internal::unregister_wait(*rec);
    std::lock_guard lk(m);
    EXPECT_GE(starts[0] - registered, 20ms);
    for (std::size_t i = 1; i < starts.size(); ++i) EXPECT_GE(starts[i] - ends[i - 1], 20ms) << "firing " << i;
}

TEST(WaitThread, NoTimeoutNeverTimesOut) {
    watchdog dog(60s);
    auto_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, true, f.callback(), no_timeout, true);
    // The wait thread took the registration in and went to sleep with no deadline: a
    // timeout computed from clock::duration::max() that overflowed into the past would have
    // ended this once-only wait before it slept.
    ASSERT_TRUE(settles(ex, [&] { return f.total(); }));
    EXPECT_EQ(f.total(), 0);
    EXPECT_TRUE(contend::internal::wait_is_active(*rec));
    ev.set();
    ASSERT_TRUE(eventually([&] { return f.signalled.load() == 1; }));
    EXPECT_EQ(f.timed_out.load(), 0);
}

TEST(WaitThread, OnceFiresAtMostOnceHoweverOftenTheEventIsSet) {
    watchdog dog(60s);
    auto_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, true, f.callback(), 5ms, true);
    for (int i = 0; i < 20; ++i) {
        ev.set();
        std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(eventually([&] { return f.total() == 1; }));
    ASSERT_TRUE(settles(ex, [&] { return f.total(); }));
    EXPECT_EQ(f.total(), 1);
    EXPECT_FALSE(contend::internal::wait_is_active(*rec));
    EXPECT_EQ(wt.size(), 0u);
}

TEST(WaitThread, RepeatingWaitFiresForEverySetOfAnAutoEvent) {
    watchdog dog(60s);
    auto_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, true, f.callback(), no_timeout, false);
    for (int i = 1; i <= 50; ++i) {
        ev.set();
        ASSERT_TRUE(eventually([&] { return f.signalled.load() == i; })) << "set " << i;
    }
    EXPECT_TRUE(contend::internal::wait_is_active(*rec));
    EXPECT_EQ(wt.size(), 1u);
}

TEST(WaitThread, SetsDuringACallbackAreNotLost) {
    watchdog dog(60s);
    manual_reset_event m;
    auto_reset_event a;
    std::atomic<int> fired_m{0}, fired_a{0};
    std::atomic<bool> hold{false};  // while set, a callback that starts stays in until it is cleared
    const auto stay_while_held = [&] {
        const auto give_up = steady::now() + 30s;
        while (hold.load() && steady::now() < give_up) std::this_thread::yield();
    };
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    // Gone first: a failed assertion lets held callbacks out before the executor joins them.
    struct release_on_exit {
        std::atomic<bool>& hold;
        ~release_on_exit() { hold.store(false); }
    } release{hold};
    const auto counts = [&] { return fired_m.load() * 1000 + fired_a.load(); };
    // The manual event's callback resets it; neither consumes anything else.
    auto rm = wt.add(
        &m, false,
        [&](bool) {
            m.reset();
            fired_m.fetch_add(1);
            stay_while_held();
        },
        no_timeout, false);
    auto ra = wt.add(
        &a, true,
        [&](bool) {
            fired_a.fetch_add(1);
            stay_while_held();
        },
        no_timeout, false);
    // Phase 1: a set() that races with a wait's first look may fire it once more
    // (src/pool/wait_thread.cpp says so): count from where it settles.
    m.set();
    a.set();
    ASSERT_TRUE(eventually([&] { return fired_m.load() >= 1 && fired_a.load() >= 1; }));
    ASSERT_TRUE(settles(ex, counts));
    const int base_m = fired_m.load();
    const int base_a = fired_a.load();
    // Phase 2: both callbacks run and stay in while the events are set again.
    hold.store(true);
    m.set();
    a.set();
    ASSERT_TRUE(eventually([&] { return fired_m.load() == base_m + 1 && fired_a.load() == base_a + 1; }));
    m.set();
    m.reset();  // gone from the event before the wait re-arms: the latch keeps it
    a.set();  // stays in the event until the re-armed wait takes it
    hold.store(false);
    // Each set during a callback fires exactly one more firing.
    ASSERT_TRUE(eventually([&] { return fired_m.load() >= base_m + 2 && fired_a.load() >= base_a + 2; }));
    ASSERT_TRUE(settles(ex, counts));
    EXPECT_EQ(fired_m.load(), base_m + 2);
    EXPECT_EQ(fired_a.load(), base_a + 2);
    EXPECT_FALSE(a.is_set());
}

TEST(WaitThread, ASetAndImmediateResetOfAManualEventStillFires) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, false, f.callback(), no_timeout, false);
    // The wait is armed and its thread asleep: the set and reset come while it sleeps.
    ASSERT_TRUE(settles(ex, [&] { return f.total(); }));
    ev.set();
    ev.reset();
    // At least once: until the reset, the event is set and a repeating wait may fire again
    // at each re-arming.
    ASSERT_TRUE(eventually([&] { return f.signalled.load() >= 1; }));
}

TEST(WaitThread, AManualEventThatStaysSetFiresOneCallbackAtATime) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    test_executor ex(4);
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, false, f.callback(200us), no_timeout, false);
    ev.set();
    ASSERT_TRUE(eventually([&] { return f.signalled.load() >= 50; }));
    contend::internal::unregister_wait(*rec);
    EXPECT_EQ(f.max_running.load(), 1) << "firings of one registration overlapped";
    EXPECT_EQ(f.timed_out.load(), 0);
}

TEST(WaitThread, UnregisterStopsFirings) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings on_set, on_timeout;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto by_set = wt.add(&ev, false, on_set.callback(), no_timeout, false);
    auto by_timeout = wt.add(&ev, false, on_timeout.callback(), 1ms, false);
    ev.set();
    ASSERT_TRUE(eventually([&] { return on_set.total() >= 10; }));
    ev.reset();
    ASSERT_TRUE(eventually([&] { return on_timeout.timed_out.load() >= 3; }));
    contend::internal::unregister_wait(*by_set);
    contend::internal::unregister_wait(*by_timeout);
    EXPECT_FALSE(contend::internal::wait_is_active(*by_set));
    EXPECT_FALSE(contend::internal::wait_is_active(*by_timeout));
    EXPECT_EQ(wt.size(), 0u);
    // A callback that had started before unregister returned may still finish counting.
    const int set_count = on_set.total();
    const int timeout_count = on_timeout.total();
    ev.set();
    ASSERT_TRUE(settles(ex, [&] { return on_set.total() * 1000 + on_timeout.total(); }));
    EXPECT_LE(on_set.total(), set_count + 1);
    EXPECT_LE(on_timeout.total(), timeout_count + 1);
}

TEST(WaitThread, ACallbackMayUnregisterItsOwnWait) {
    watchdog dog(60s);
    auto_reset_event ev;
    std::atomic<int> calls{0};
    std::shared_ptr<wait_record> self;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    self = wt.add(
        &ev, true,
        [&](bool) {
            calls.fetch_add(1);
            contend::internal::unregister_wait(*self);
        },
        no_timeout, false);
    ev.set();  // after `self` was written: the callback reads it
    ASSERT_TRUE(eventually([&] { return !contend::internal::wait_is_active(*self); }));
    ev.set();
    ASSERT_TRUE(settles(ex, [&] { return calls.load(); }));
    EXPECT_EQ(calls.load(), 1);
    EXPECT_TRUE(ev.is_set()) << "nobody consumed the second set";
}

TEST(WaitThread, RecordOutlivesTheWaitThread) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    std::shared_ptr<wait_record> repeating, once, fired;
    test_executor ex;
    {
        auto_reset_event done;
        wait_thread wt("w", ex.dispatcher());
        repeating = wt.add(&ev, false, f.callback(), 10ms, false);
        once = wt.add(&ev, false, f.callback(), no_timeout, true);
        fired = wt.add(&done, true, f.callback(), 0ms, true);
        ASSERT_TRUE(eventually([&] { return !contend::internal::wait_is_active(*fired); }));
    }
    EXPECT_FALSE(contend::internal::wait_is_active(*repeating));
    EXPECT_FALSE(contend::internal::wait_is_active(*once));
    contend::internal::unregister_wait(*repeating);
    contend::internal::unregister_wait(*once);
    contend::internal::unregister_wait(*fired);
    const int before = f.total();
    ev.set();
    const bool with_wait_thread = false;  // it is gone
    ASSERT_TRUE(settles(
        ex, [&] { return f.total(); }, with_wait_thread));
    EXPECT_LE(f.total(), before + 1);  // at most a timeout firing already handed over
    repeating.reset();  // the last references: the records and their share of the state go
    once.reset();
    fired.reset();
}

TEST(WaitThread, EmptyRegistrationHandleIsInactiveAndSafeToUnregister) {
    contend::wait_registration r;
    EXPECT_FALSE(r.active());
    r.unregister();
    contend::wait_registration other;
    r = std::move(other);
    EXPECT_FALSE(r.active());
}

TEST(WaitThread, DestructorEndsEveryWaitAndLeavesTheEventsWorking) {
    watchdog dog(60s);
    std::vector<std::unique_ptr<auto_reset_event>> events;
    firings f;
    for (int i = 0; i < 20; ++i) events.push_back(std::make_unique<auto_reset_event>());
    test_executor ex;
    {
        wait_thread wt("w", ex.dispatcher());
        for (auto& e : events) wt.add(e.get(), true, f.callback(), no_timeout, false);
        EXPECT_EQ(wt.size(), 20u);
    }
    for (auto& e : events) e->set();
    const bool with_wait_thread = false;  // it is gone
    ASSERT_TRUE(settles(
        ex, [&] { return f.total(); }, with_wait_thread));
    EXPECT_EQ(f.total(), 0);
    for (auto& e : events) EXPECT_TRUE(e->wait_for(0ms)) << "the set stayed for a thread to take";
}

TEST(WaitThread, AThreadWaitingAndARegisteredWaitAreBothReleasedByAManualSet) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    std::atomic<bool> thread_released{false};
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto rec = wt.add(&ev, false, f.callback(), no_timeout, true);
    tid_box tid;
    std::thread waiter([&] {
        tid.publish();
        thread_released.store(ev.wait_for(30s));
    });
    EXPECT_TRUE(settles(ex, [&] { return f.total(); }));
    EXPECT_TRUE(eventually([&] { return thread_blocked(tid.get()); }));
    ev.set();
    waiter.join();
    EXPECT_TRUE(thread_released.load());
    ASSERT_TRUE(eventually([&] { return f.signalled.load() == 1; }));
}

// One round: a thread blocked on the event, a registered wait on it, two sets; each set goes
// to one of them, never both. With `seed`, the first set races the waiter's start and the
// second the re-arming of the wait, at random points; without, the waiter and the wait
// thread are both asleep before each set.
// Returns whether the round's checks held.
bool two_auto_sets_each_taken_once(wait_thread& wt, test_executor& ex, std::uint32_t* seed) {
    auto_reset_event ev;
    firings f;
    std::atomic<int> thread_took{0};
    std::atomic<bool> waiter_done{false};
    std::mt19937 rng(seed ? *seed : 0);
    const auto maybe_yield = [&](std::mt19937& r) {
        for (auto k = r() % 4; k > 0; --k) std::this_thread::yield();
    };
    auto rec = wt.add(&ev, true, f.callback(), no_timeout, false);
    tid_box tid;
    std::mt19937 waiter_rng(rng());
    std::thread waiter([&] {
        tid.publish();
        if (seed) maybe_yield(waiter_rng);
        thread_took.store(ev.wait_for(30s) ? 1 : 0);
        waiter_done.store(true);
    });
    const auto taken = [&] { return thread_took.load() + f.signalled.load(); };
    // Quiet: the executor and the wait thread asleep, and the waiter asleep or done.
    const auto quiet = [&] {
        return settles(ex, taken) && eventually([&] { return waiter_done.load() || thread_blocked(tid.get()); });
    };
    bool ok = true;
    if (seed) {
        maybe_yield(rng);
    } else {
        ok = quiet() && ok;
    }
    ev.set();
    // The second set only once the first was taken: an auto event holds one set, so two in a
    // row with no taker between would rightly count as one.
    ok = eventually([&] { return taken() >= 1; }) && ok;
    if (seed) {
        maybe_yield(rng);  // races the re-arming of the wait, or the waiter's start
    } else {
        ok = quiet() && ok;
        EXPECT_EQ(taken(), 1);
        ok = ok && taken() == 1;
    }
    ev.set();
    ok = eventually([&] { return taken() >= 2; }) && quiet() && ok;
    EXPECT_EQ(taken(), 2);
    EXPECT_FALSE(ev.is_set());
    ok = ok && taken() == 2 && !ev.is_set();
    // The registered wait took both: end it, and release the waiter with a third set.
    if (!waiter_done.load()) {
        contend::internal::unregister_wait(*rec);
        ev.set();
    }
    waiter.join();
    contend::internal::unregister_wait(*rec);
    return ok;
}

TEST(WaitThread, EachAutoSetIsTakenByEitherAWaitingThreadOrTheRegisteredWaitNotBoth) {
    watchdog dog(60s);
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    EXPECT_TRUE(two_auto_sets_each_taken_once(wt, ex, nullptr));
}

// The same two sets raced against the waiter's start and each other, in random orders.
TEST(WaitThread, EachOfTwoRacingAutoSetsIsTakenOnceInEveryOrder) {
    watchdog dog(120s);
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    const std::uint32_t seed = test_seed();
    std::mt19937 rng(seed);
    const long rounds = scaled(200);
    for (long i = 0; i < rounds; ++i) {
        SCOPED_TRACE(testing::Message() << seed_trace(seed) << ", round " << i);
        std::uint32_t round_seed = rng();
        ASSERT_TRUE(two_auto_sets_each_taken_once(wt, ex, &round_seed));
    }
}

TEST(WaitThread, PingPongWithARegisteredWaitLosesNoSignal) {
    watchdog dog(120s);
    auto_reset_event ping;
    auto_reset_event pong;
    manual_reset_event mping;
    auto_reset_event mpong;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    auto ra = wt.add(
        &ping, true, [&](bool) { pong.set(); }, no_timeout, false);
    auto rm = wt.add(
        &mping, false,
        [&](bool) {
            mping.reset();
            mpong.set();
        },
        no_timeout, false);
    const long rounds = scaled(5000);
    for (long i = 0; i < rounds; ++i) {
        ping.set();
        ASSERT_TRUE(pong.wait_for(30s)) << "lost auto round " << i;
        mping.set();
        ASSERT_TRUE(mpong.wait_for(30s)) << "lost manual round " << i;
    }
}

TEST(WaitThread, AThousandEventsEachWithItsOwnWait) {
    watchdog dog(120s);
    const int n = 1000;
    std::vector<std::unique_ptr<manual_reset_event>> events;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> timeouts{0};
    for (int i = 0; i < n; ++i) events.push_back(std::make_unique<manual_reset_event>());
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    std::vector<std::shared_ptr<wait_record>> recs;
    for (int i = 0; i < n; ++i) {
        recs.push_back(wt.add(
            events[i].get(), false,
            [&hits, &timeouts, i](bool timed_out) { (timed_out ? timeouts : hits[i]).fetch_add(1); },
            i % 2 ? 1h : no_timeout, true));
    }
    EXPECT_EQ(wt.size(), static_cast<std::size_t>(n));
    for (int i = n - 1; i >= 0; --i) events[i]->set();
    ASSERT_TRUE(eventually([&] { return wt.size() == 0; }, 60s));
    // The callbacks run on the executor after the waits end: wait (bounded) for all of them
    // rather than a fixed 20 ms, which a loaded machine under ASan overran.
    EXPECT_TRUE(eventually(
        [&] {
            for (int i = 0; i < n; ++i)
                if (hits[i].load() == 0) return false;
            return true;
        },
        60s));
    const auto firings_so_far = [&] {
        int sum = timeouts.load();
        for (int i = 0; i < n; ++i) sum += hits[i].load();
        return sum;
    };
    ASSERT_TRUE(settles(ex, firings_so_far));  // and none runs twice
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "event " << i;
    EXPECT_EQ(timeouts.load(), 0);
}

TEST(WaitThread, ManyWaitsOnOneEventAllFireOnOneSet) {
    watchdog dog(60s);
    manual_reset_event ev;
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    std::vector<std::shared_ptr<wait_record>> recs;
    for (int i = 0; i < 200; ++i) recs.push_back(wt.add(&ev, false, f.callback(), no_timeout, true));
    ev.set();
    ASSERT_TRUE(eventually([&] { return f.signalled.load() == 200; }));
    EXPECT_EQ(wt.size(), 0u);
}

TEST(WaitThread, ServiceThreadStartsWithTheFirstWaitAndIsNamed) {
    manual_reset_event ev;
    test_executor ex;
    wait_thread wt("wt7", ex.dispatcher());
    EXPECT_FALSE(thread_named("wt7-wait"));
    auto rec = wt.add(
        &ev, false, [](bool) {}, no_timeout, false);
    EXPECT_TRUE(eventually([] { return thread_named("wt7-wait"); }));  // the thread names itself
}

TEST(WaitThread, UnregisterRacingWithSetsLeavesTheEventFreeToDestroy) {
    watchdog dog(120s);
    firings f;
    test_executor ex;
    wait_thread wt("w", ex.dispatcher());
    const long rounds = scaled(2000);
    for (long i = 0; i < rounds; ++i) {
        // Destroyed right after unregister: a notification or unwatch still under way would
        // touch freed memory (AddressSanitizer) or race (ThreadSanitizer).
        auto ev = std::make_unique<auto_reset_event>();
        auto rec = wt.add(ev.get(), true, f.callback(), i % 3 ? no_timeout : 0ms, i % 2 == 0);
        std::atomic<bool> stop{false};
        std::thread setter([&] {
            while (!stop.load()) ev->set();
        });
        if (i % 4 == 0) std::this_thread::yield();
        contend::internal::unregister_wait(*rec);
        stop.store(true);
        setter.join();
        ev.reset();
    }
    EXPECT_EQ(wt.size(), 0u);
}
