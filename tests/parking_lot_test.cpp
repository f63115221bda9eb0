#include "contend/parking_lot.hpp"

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "parking_keys.hpp"
#include "platform/spin_wait.hpp"
#include "test_support.hpp"

using namespace contend_test;
namespace pl = contend::parking_lot;

TEST(ParkingLot, FailedValidationReturnsAtOnceWithoutSleeping) {
    int address = 0;
    bool before_sleep_ran = false;
    const auto start = steady::now();
    const auto r = pl::park(
        &address, [] { return false; }, [&] { before_sleep_ran = true; }, steady::now() + 30s);
    EXPECT_EQ(r.status, pl::park_status::invalid);
    EXPECT_FALSE(before_sleep_ran);
    EXPECT_LT(steady::now() - start, 5s);
}

TEST(ParkingLot, TimesOutNoEarlierThanTheDeadline) {
    int address = 0;
    const auto deadline = steady::now() + 30ms;
    const auto r = pl::park(
        &address, [] { return true; }, deadline);
    EXPECT_EQ(r.status, pl::park_status::timed_out);
    EXPECT_GE(steady::now(), deadline);
    EXPECT_LT(steady::now(), deadline + 5s);
    // The timed-out thread left the queue: nobody is there to unpark.
    EXPECT_FALSE(pl::unpark_one(&address).did_unpark_thread);
}

TEST(ParkingLot, UnparkOneDeliversTheCallbacksToken) {
    watchdog dog(60s);
    int address = 0;
    std::atomic<bool> parked{false};
    pl::park_result got;
    std::thread t([&] {
        got = pl::park(
            &address, [] { return true; }, [&] { parked.store(true); }, steady::now() + 30s);
    });
    ASSERT_TRUE(eventually([&] { return parked.load(); }));
    pl::unpark_result seen;
    ASSERT_TRUE(eventually([&] {
        seen = pl::unpark_one(&address,
                              [&](pl::unpark_result r) -> std::intptr_t { return r.did_unpark_thread ? 42 : 0; });
        return seen.did_unpark_thread;
    }));
    t.join();
    EXPECT_FALSE(seen.may_have_more_threads);
    EXPECT_EQ(got.status, pl::park_status::unparked);
    EXPECT_EQ(got.token, 42);
}

TEST(ParkingLot, CallbackRunsAndLearnsNothingWasParked) {
    int address = 0;
    bool ran = false;
    const auto r = pl::unpark_one(&address, [&](pl::unpark_result inner) -> std::intptr_t {
        ran = true;
        EXPECT_FALSE(inner.did_unpark_thread);
        EXPECT_FALSE(inner.may_have_more_threads);
        return 0;
    });
    EXPECT_TRUE(ran);
    EXPECT_FALSE(r.did_unpark_thread);
}

TEST(ParkingLot, UnparksInFifoOrderPerAddress) {
    watchdog dog(120s);
    constexpr int n = 16;
    int address = 0;
    int other_address = 0;
    std::vector<std::intptr_t> tokens(n, -1);
    std::atomic<int> enqueued{0};
    std::vector<std::thread> threads;
    // Each thread parks only after the previous one is queued, so queue order is known.
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            const auto r = pl::park(
                &address, [] { return true; }, [&] { enqueued.fetch_add(1); }, steady::now() + 60s);
            tokens[static_cast<std::size_t>(i)] = r.was_unparked() ? r.token : -2;
        });
        ASSERT_TRUE(eventually([&] { return enqueued.load() == i + 1; }));
    }
    // A thread parked on another address in the same table must not be disturbed.
    std::atomic<bool> other_parked{false};
    std::thread other([&] {
        pl::park(
            &other_address, [] { return true; }, [&] { other_parked.store(true); }, steady::now() + 60s);
    });
    ASSERT_TRUE(eventually([&] { return other_parked.load(); }));
    for (int i = 0; i < n; ++i) {
        const auto r = pl::unpark_one(&address, [i](pl::unpark_result) -> std::intptr_t { return 1000 + i; });
        EXPECT_TRUE(r.did_unpark_thread);
        EXPECT_EQ(r.may_have_more_threads, i + 1 < n);
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < n; ++i) EXPECT_EQ(tokens[static_cast<std::size_t>(i)], 1000 + i) << "thread " << i;
    EXPECT_EQ(pl::unpark_all(&other_address), 1u);
    other.join();
}

TEST(ParkingLot, UnparkAllWakesEveryThreadOnTheAddress) {
    watchdog dog(120s);
    constexpr int n = 24;
    int address = 0;
    std::atomic<int> enqueued{0};
    std::atomic<int> unparked{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&] {
            const auto r = pl::park(
                &address, [] { return true; }, [&] { enqueued.fetch_add(1); }, steady::now() + 60s);
            if (r.was_unparked()) unparked.fetch_add(1);
        });
    }
    ASSERT_TRUE(eventually([&] { return enqueued.load() == n; }, 60s));
    EXPECT_EQ(pl::unpark_all(&address), static_cast<std::size_t>(n));
    for (auto& t : threads) t.join();
    EXPECT_EQ(unparked.load(), n);
}

TEST(ParkingLot, UnparkAllWithACallbackCountsTheThreadsAndGivesEachItsToken) {
    watchdog dog(120s);
    constexpr int n = 8;
    int address = 0;
    int other = 0;
    std::atomic<int> enqueued{0};
    std::vector<std::intptr_t> tokens(n, -1);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            const auto r = pl::park(
                &address, [] { return true; }, [&] { enqueued.fetch_add(1); }, steady::now() + 60s);
            tokens[i] = r.was_unparked() ? r.token : -2;
        });
    }
    ASSERT_TRUE(eventually([&] { return enqueued.load() == n; }, 60s));
    std::size_t seen = 99;
    EXPECT_EQ(pl::unpark_all(&other, [&](pl::unpark_all_result r) -> std::intptr_t { return seen = r.threads, 5; }),
              0u);
    EXPECT_EQ(seen, 0u) << "the callback runs with nobody parked too";
    EXPECT_EQ(pl::unpark_all(&address, [&](pl::unpark_all_result r) -> std::intptr_t { return seen = r.threads, 7; }),
              static_cast<std::size_t>(n));
    EXPECT_EQ(seen, static_cast<std::size_t>(n));
    for (auto& t : threads) t.join();
    for (int i = 0; i < n; ++i) EXPECT_EQ(tokens[i], 7) << "thread " << i;
}

TEST(ParkingLot, TwoHundredFiftySixThreadsOnTwoHundredFiftySixAddressesWhileTheTableGrows) {
    watchdog dog(240s);
    constexpr int n = 256;
    const auto before = pl::stats();
    std::vector<int> addresses(n);
    std::atomic<int> enqueued{0};
    std::atomic<int> unparked{0};
    std::vector<std::intptr_t> tokens(n, -1);
    std::vector<std::thread> threads;
    // Threads are created (and so grow the table) while earlier ones are already parked.
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            const auto r = pl::park(
                &addresses[static_cast<std::size_t>(i)], [] { return true; }, [&] { enqueued.fetch_add(1); },
                steady::now() + 120s);
            if (r.was_unparked()) unparked.fetch_add(1);
            tokens[static_cast<std::size_t>(i)] = r.token;
        });
    }
    ASSERT_TRUE(eventually([&] { return enqueued.load() == n; }, 120s));
    const auto during = pl::stats();
    EXPECT_GE(during.buckets, static_cast<std::size_t>(n) * 3) << "table did not grow with the threads";
    EXPECT_GT(during.growths, before.growths);
    for (int i = 0; i < n; ++i) {
        const auto r = pl::unpark_one(&addresses[static_cast<std::size_t>(i)],
                                      [i](pl::unpark_result) -> std::intptr_t { return i + 1; });
        EXPECT_TRUE(r.did_unpark_thread) << "thread parked on address " << i << " was lost";
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(unparked.load(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(tokens[static_cast<std::size_t>(i)], i + 1);
}

TEST(ParkingLot, BucketSaysItIsTimeToBeFairAtLeastAboutOncePerMillisecond) {
    watchdog dog(60s);
    int address = 0;
    std::atomic<bool> stop{false};
    std::atomic<int> parks{0};
    std::thread parker([&] {
        while (!stop.load()) {
            pl::park(
                &address, [] { return true; }, steady::now() + 50ms);
            parks.fetch_add(1);
        }
    });
    int fair = 0;
    int unparks = 0;
    const auto until = steady::now() + 200ms;
    while (steady::now() < until) {
        const auto r = pl::unpark_one(&address);
        if (r.did_unpark_thread) {
            ++unparks;
            if (r.time_to_be_fair) ++fair;
        }
        std::this_thread::sleep_for(2ms);  // longer than the 1 ms window
    }
    stop.store(true);
    pl::unpark_all(&address);
    parker.join();
    ASSERT_GT(unparks, 0);
    EXPECT_EQ(fair, unparks) << "every unpark more than 1 ms after the last fair one must be fair";
}

TEST(ParkingLot, ExceptionFromBeforeSleepLeavesTheQueueClean) {
    int address = 0;
    EXPECT_THROW(pl::park(
                     &address, [] { return true; }, [] { throw std::runtime_error("boom"); }, steady::now() + 30s),
                 std::runtime_error);
    EXPECT_FALSE(pl::unpark_one(&address).did_unpark_thread);
}

// src/parking_keys.hpp owns the key space. The keys are the ones the primitives have always
// used (a change would be a change of behaviour), and one address's keys never meet.
namespace {
// A thread parked on `from` with a context, for unpark_requeue_one; `done` once it returns.
struct requeueable_parker {
    int context = 0;
    std::atomic<bool> parked{false}, done{false};
    pl::park_result got;
    std::thread t;
    requeueable_parker(const void* from, pl::clock::time_point deadline,
                       std::chrono::nanoseconds poll = std::chrono::nanoseconds::zero())
        : t([this, from, deadline, poll] {
              got = pl::park_requeueable(
                  from, &context, [] { return true; }, [this] { parked.store(true); }, deadline, poll);
              done.store(true);
          }) {
        EXPECT_TRUE(eventually([&] { return parked.load(); }));
    }
    ~requeueable_parker() {
        if (t.joinable()) t.join();
    }
};
}  // namespace

TEST(ParkingLot, UnparkRequeueOneMovesTheFirstThreadAsleepAndTheOtherAddressWakesIt) {
    watchdog dog(60s);
    int from = 0, to = 0;
    requeueable_parker p(&from, steady::now() + 30s);
    const void* seen_context = nullptr;
    bool callback_told_requeue = false;
    pl::unpark_result r;
    ASSERT_TRUE(eventually([&] {  // `parked` is set just before it sleeps: it is queued by then
        r = pl::unpark_requeue_one(
            &from,
            [&](const void* c) {
                seen_context = c;
                return static_cast<const void*>(&to);
            },
            [](const void*) { return true; },
            [&](pl::unpark_result u) -> std::intptr_t {
                callback_told_requeue = u.did_requeue_thread;
                return 5;
            });
        return r.did_requeue_thread;
    }));
    EXPECT_FALSE(r.did_unpark_thread);
    EXPECT_FALSE(r.may_have_more_threads);
    EXPECT_TRUE(callback_told_requeue);
    EXPECT_EQ(seen_context, &p.context);
    EXPECT_FALSE(pl::unpark_one(&from).did_unpark_thread) << "it left the first address's queue";
    EXPECT_FALSE(p.done.load()) << "a moved thread is not woken";
    const auto woke = pl::unpark_one(&to, [](pl::unpark_result) -> std::intptr_t { return 9; });
    EXPECT_TRUE(woke.did_unpark_thread);
    p.t.join();
    EXPECT_EQ(p.got.status, pl::park_status::unparked);
    EXPECT_TRUE(p.got.requeued);
    EXPECT_EQ(p.got.token, 9) << "the token is the last unparker's";
}

TEST(ParkingLot, UnparkRequeueOneUnparksWhenValidateRefusesOrTheThreadHasNoContext) {
    watchdog dog(60s);
    int from = 0, to = 0;
    {
        requeueable_parker p(&from, steady::now() + 30s);
        pl::unpark_result r;
        ASSERT_TRUE(eventually([&] {
            r = pl::unpark_requeue_one(
                &from, [&](const void*) { return static_cast<const void*>(&to); }, [](const void*) { return false; },
                [](pl::unpark_result) -> std::intptr_t { return 3; });
            return r.did_unpark_thread;
        }));
        EXPECT_FALSE(r.did_requeue_thread);
        p.t.join();
        EXPECT_FALSE(p.got.requeued);
        EXPECT_EQ(p.got.token, 3);
    }
    std::atomic<bool> parked{false};
    pl::park_result got;
    std::thread plain([&] {
        got = pl::park(
            &from, [] { return true; }, [&] { parked.store(true); }, steady::now() + 30s);
    });
    ASSERT_TRUE(eventually([&] { return parked.load(); }));
    bool target_called = false;
    ASSERT_TRUE(eventually([&] {
        return pl::unpark_requeue_one(
                   &from,
                   [&](const void*) {
                       target_called = true;
                       return static_cast<const void*>(&to);
                   },
                   [](const void*) { return true; }, [](pl::unpark_result) -> std::intptr_t { return 4; })
            .did_unpark_thread;
    }));
    plain.join();
    EXPECT_FALSE(target_called) << "a thread parked without a context is only ever woken";
    EXPECT_FALSE(got.requeued);
    EXPECT_EQ(got.token, 4);
}

// A moved thread keeps its deadline, and its timeout takes it off the queue it is in now.
TEST(ParkingLot, AThreadMovedToAnotherAddressTimesOutThereAndLeavesThatQueue) {
    watchdog dog(60s);
    int from = 0, to = 0;
    const auto deadline = steady::now() + 1s;  // long enough to be moved first on a loaded machine
    requeueable_parker p(&from, deadline);
    ASSERT_TRUE(eventually([&] {
        return pl::unpark_requeue_one(
                   &from, [&](const void*) { return static_cast<const void*>(&to); }, [](const void*) { return true; },
                   [](pl::unpark_result) -> std::intptr_t { return 0; })
            .did_requeue_thread;
    }));
    p.t.join();
    EXPECT_EQ(p.got.status, pl::park_status::timed_out);
    EXPECT_TRUE(p.got.requeued);
    EXPECT_GE(steady::now(), deadline);
    EXPECT_FALSE(pl::unpark_one(&to).did_unpark_thread) << "the timed-out thread is still queued";
    EXPECT_FALSE(pl::unpark_one(&from).did_unpark_thread);
}

// A poll far longer than any test: a poll that missed its unpark or its deadline would keep
// the thread past `eventually`'s bound (and the watchdog's).
constexpr auto endless_poll = std::chrono::hours(1);

TEST(ParkingLot, AThreadThatPollsBeforeSleepingTakesTheTokenOfAnUnparkDuringItsPoll) {
    watchdog dog(60s);
    int from = 0;
    requeueable_parker p(&from, steady::now() + 30s, endless_poll);
    ASSERT_TRUE(eventually([&] {
        return pl::unpark_one(&from, [](pl::unpark_result) -> std::intptr_t { return 42; }).did_unpark_thread;
    }));
    ASSERT_TRUE(eventually([&] { return p.done.load(); })) << "the poll did not see its unpark";
    EXPECT_EQ(p.got.status, pl::park_status::unparked);
    EXPECT_EQ(p.got.token, 42);
    EXPECT_FALSE(p.got.requeued);
}

TEST(ParkingLot, AThreadThatPollsBeforeSleepingTimesOutAtItsDeadlineAndLeavesTheQueue) {
    watchdog dog(60s);
    int from = 0;
    const auto deadline = steady::now() + 100ms;
    requeueable_parker p(&from, deadline, endless_poll);
    ASSERT_TRUE(eventually([&] { return p.done.load(); })) << "the poll ran past its deadline";
    EXPECT_EQ(p.got.status, pl::park_status::timed_out);
    EXPECT_GE(steady::now(), deadline);
    EXPECT_FALSE(pl::unpark_one(&from).did_unpark_thread) << "the timed-out thread is still queued";
}

TEST(ParkingLot, AThreadMovedToAnotherAddressWhileItPollsIsWokenFromThere) {
    watchdog dog(60s);
    int from = 0, to = 0;
    requeueable_parker p(&from, steady::now() + 30s, endless_poll);
    ASSERT_TRUE(eventually([&] {
        return pl::unpark_requeue_one(
                   &from, [&](const void*) { return static_cast<const void*>(&to); }, [](const void*) { return true; },
                   [](pl::unpark_result) -> std::intptr_t { return 0; })
            .did_requeue_thread;
    }));
    EXPECT_FALSE(p.done.load());
    ASSERT_TRUE(pl::unpark_one(&to, [](pl::unpark_result) -> std::intptr_t { return 7; }).did_unpark_thread);
    ASSERT_TRUE(eventually([&] { return p.done.load(); })) << "the poll did not see the unpark on the other address";
    EXPECT_EQ(p.got.status, pl::park_status::unparked);
    EXPECT_TRUE(p.got.requeued);
    EXPECT_EQ(p.got.token, 7);
}

// A thread whose polls keep running out stops polling, tries again once in 16 parks, and
// polls every time again once a poll wins. Outcomes only, no timing: a park nobody unparks
// misses its poll (it times out at its deadline), and one whose before_sleep unparks the
// thread itself wins it. In a thread of its own: the record is the thread's. Its yields
// never count as giving the CPU away (a shared CPU's polls are not judged), so the counts
// hold on a loaded machine too.
TEST(ParkingLot, AThreadWhosePollsKeepMissingSleepsAtOnceAndPollsAgainAfterOneWins) {
    watchdog dog(60s);
    std::thread([] {
        const contend::internal::ignore_cpu_sharing unshared;
        int address = 0;
        const auto missed = [&] {
            const auto r = pl::park_requeueable(
                &address, &address, [] { return true; }, [] {}, steady::now() + 200us, 20us);
            EXPECT_EQ(r.status, pl::park_status::timed_out);
        };
        const auto won = [&] {
            const auto r = pl::park_requeueable(
                &address, &address, [] { return true; },
                [&] { EXPECT_TRUE(pl::unpark_one(&address).did_unpark_thread); }, steady::now() + 30s, 20us);
            EXPECT_EQ(r.status, pl::park_status::unparked);
        };
        const auto counts = [] { return pl::detail::this_thread_poll_counts(); };
        for (int i = 0; i < 3; ++i) missed();
        EXPECT_EQ(counts().polled, 3u);
        EXPECT_EQ(counts().skipped, 0u);
        for (int i = 0; i < 15; ++i) missed();
        EXPECT_EQ(counts().polled, 3u) << "a thread whose last three polls missed still polls";
        EXPECT_EQ(counts().skipped, 15u);
        won();  // the 16th park: a trial poll, which wins
        EXPECT_EQ(counts().polled, 4u) << "no trial poll in 16 parks";
        EXPECT_EQ(counts().won, 1u);
        missed();
        EXPECT_EQ(counts().polled, 5u) << "a poll that won did not make the thread poll again";
        EXPECT_EQ(counts().skipped, 15u);
    }).join();
}

// A poll that ran out but whose unpark came within twice the poll is a near miss: it does
// not count toward stopping the thread's polls, so a thread whose waits only just outlast
// its poll keeps polling (three real misses would stop it). The poll is 100 ms and the
// unpark comes about 110 ms after the park: it may come up to 90 ms late on a loaded machine,
// and one that comes early, within the poll, wins it, which the test accepts too.
TEST(ParkingLot, APollThatRanOutJustBeforeItsUnparkStillCountsAsPaying) {
    watchdog dog(60s);
    std::thread([] {
        const contend::internal::ignore_cpu_sharing unshared;
        int address = 0;
        for (int i = 0; i < 3; ++i) {
            std::atomic<bool> parked{false};
            std::thread unparker([&] {
                while (!parked.load()) std::this_thread::yield();
                std::this_thread::sleep_for(110ms);
                while (!pl::unpark_one(&address).did_unpark_thread) std::this_thread::sleep_for(1ms);
            });
            const auto r = pl::park_requeueable(
                &address, &address, [] { return true; }, [&] { parked = true; }, steady::now() + 30s, 100ms);
            unparker.join();
            EXPECT_EQ(r.status, pl::park_status::unparked);
        }
        const auto c = pl::detail::this_thread_poll_counts();
        EXPECT_EQ(c.polled, 3u);
        EXPECT_EQ(c.won + c.near_misses, 3u) << "a wait that only just outlasted its poll counted as a miss";
        EXPECT_EQ(c.skipped, 0u);
    }).join();
}

TEST(ParkingKeys, EachUserHasItsOwnSpaceAndTheValuesAreStable) {
    namespace ci = contend::internal;
    alignas(8) static char object[8];
    const auto a = reinterpret_cast<std::uintptr_t>(&object[0]);
    const auto at = [](const void* key) { return reinterpret_cast<std::uintptr_t>(key); };
    EXPECT_EQ(at(ci::mutex_untimed_key(object)), a);
    EXPECT_EQ(at(ci::mutex_timed_key(object)), a ^ (std::uintptr_t{1} << 63));
    EXPECT_EQ(at(ci::mutex_designee_key(object)), a ^ (std::uintptr_t{1} << 62));
    EXPECT_EQ(at(ci::thin_lock_key(object)), a);
    EXPECT_EQ(at(ci::monitor_enter_key(object)), a ^ (std::uintptr_t{3} << 62));
    EXPECT_EQ(at(ci::monitor_pulse_key(object)), a ^ (std::uintptr_t{1} << 61));
    EXPECT_EQ(at(ci::shared_readers_key(object)), a);
    EXPECT_EQ(at(ci::shared_writers_key(object)), a ^ (std::uintptr_t{1} << 60));
    EXPECT_EQ(at(ci::shared_upgraders_key(object)), a ^ (std::uintptr_t{3} << 60));
    EXPECT_EQ(at(ci::shared_upgrading_key(object)), a ^ (std::uintptr_t{5} << 60));
    EXPECT_EQ(at(ci::shared_gated_nap_key(object)), a ^ (std::uintptr_t{6} << 60));
    const std::set<const void*> distinct{
        ci::mutex_untimed_key(object),    ci::mutex_timed_key(object),      ci::mutex_designee_key(object),
        ci::monitor_enter_key(object),    ci::monitor_pulse_key(object),    ci::shared_writers_key(object),
        ci::shared_upgraders_key(object), ci::shared_upgrading_key(object), ci::shared_gated_nap_key(object)};
    EXPECT_EQ(distinct.size(), 9u);
    EXPECT_EQ(a >> ci::parking_space_shift, 0u) << "a user-space address with its top bits set";
}
