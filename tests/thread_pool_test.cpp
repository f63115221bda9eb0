// contend::thread_pool: every item runs exactly once, stealing, starvation injection,
// blocking_scope, timers and waits through the pool, exceptions, coroutines, hill climbing,
// options and an idle pool's CPU. Every wait is bounded (watchdog or `eventually`).
#include "contend/thread_pool.hpp"
#include "contend/event.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "pool/hill_climbing.hpp"
#include "pool/os_thread.hpp"
#include "pool/outbox.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::thread_pool;
using contend::thread_pool_options;

namespace {

thread_pool_options fixed(std::size_t n) {
    thread_pool_options o;
    o.min_threads = n;
    o.max_threads = n;
    o.hill_climbing = false;
    return o;
}

struct run_counts {
    explicit run_counts(std::size_t n) : counts(n) {}
    std::vector<std::atomic<std::uint8_t>> counts;
    void hit(std::size_t i) { counts[i].fetch_add(1, std::memory_order_relaxed); }
    // Index of the first item not run exactly once, or size() if all were.
    std::size_t first_wrong() const {
        for (std::size_t i = 0; i < counts.size(); ++i)
            if (counts[i].load() != 1) return i;
        return counts.size();
    }
};

// This process's threads whose name starts with `prefix` (a pool's name and a dash): for
// each, its kernel id, its scheduler state (R, S, D...) and the CPU it has used (user and
// system), from Linux's /proc/self/task/<tid>/stat. Empty where that cannot be read.
struct thread_reading {
    char state = '?';
    double cpu_seconds = 0;
};
std::map<int, thread_reading> threads_named(const std::string& prefix) {
    std::map<int, thread_reading> found;
#if defined(__linux__)
    static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        if (!std::getline(comm, name) || name.rfind(prefix, 0) != 0) continue;
        std::ifstream stat(task.path() / "stat");
        const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const auto paren = text.rfind(')');  // the name, in parentheses, may hold spaces
        if (paren == std::string::npos) continue;
        // After the name: state (field 3) ... utime (14), stime (15).
        std::istringstream fields(text.substr(paren + 2));
        thread_reading r;
        std::string skip;
        fields >> r.state;
        for (int f = 4; f < 14; ++f) fields >> skip;
        unsigned long long utime = 0, stime = 0;
        if (!(fields >> utime >> stime)) continue;
        r.cpu_seconds = static_cast<double>(utime + stime) / tick;
        found[std::stoi(task.path().filename().string())] = r;
    }
#else
    (void)prefix;
#endif
    return found;
}

// Whether `count` threads named prefix... exist and all are asleep (blocked: state S). True
// where that cannot be read: a test that waits for it then checks less.
bool all_asleep(const std::string& prefix, std::size_t count) {
#if !defined(__linux__)
    (void)prefix;
    (void)count;
    return true;
#else
    const auto threads = threads_named(prefix);
    if (threads.size() != count) return false;
    for (const auto& [tid, r] : threads)
        if (r.state != 'S') return false;
    return true;
#endif
}

// Counts its own destructions: a callback that captures one (through a shared_ptr) shows
// when the pool freed it.
struct destruction_counter {
    std::atomic<int>* count;
    explicit destruction_counter(std::atomic<int>* c) : count(c) {}
    destruction_counter(const destruction_counter&) = delete;
    ~destruction_counter() { count->fetch_add(1); }
};

}  // namespace

TEST(ThreadPool, AMillionItemsPostedFromEightOutsideThreadsEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t per_thread = 125'000;
    run_counts runs(8 * per_thread);
    {
        thread_pool pool(fixed(2));
        run_threads(8, [&](int t) {
            for (std::size_t i = 0; i < per_thread; ++i) {
                const std::size_t k = static_cast<std::size_t>(t) * per_thread + i;
                pool.post([&runs, k] { runs.hit(k); });
            }
        });
        pool.wait_idle();
        EXPECT_EQ(pool.stats().completed, 8 * per_thread);
    }
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

TEST(ThreadPool, AMillionItemsPostedLocallyByWorkersEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t roots = 100, per_root = 10'000;
    run_counts runs(roots * per_root);
    thread_pool pool(fixed(2));
    for (std::size_t r = 0; r < roots; ++r) {
        pool.post([&, r] {
            for (std::size_t i = 0; i < per_root; ++i) pool.post_local([&runs, k = r * per_root + i] { runs.hit(k); });
        });
    }
    pool.wait_idle();
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
    EXPECT_EQ(pool.stats().completed, roots + roots * per_root);
}

TEST(ThreadPool, AMillionItemsMixingGlobalLocalAndChainedPostsEachRunExactlyOnce) {
    watchdog dog(240s);
    constexpr std::size_t outside = 4, chains_per_thread = 2'500, chain_length = 100;
    run_counts runs(outside * chains_per_thread * chain_length);
    thread_pool pool(fixed(3));
    // Each chain: an item posted from outside, which posts the next link alternately to the
    // local and the global queue, chain_length links in all.
    struct link {
        static void run(thread_pool& p, run_counts& r, std::size_t base, std::size_t i) {
            r.hit(base + i);
            if (i + 1 == chain_length) return;
            auto next = [&p, &r, base, i] { run(p, r, base, i + 1); };
            if (i % 2 == 0) p.post_local(next);
            else p.post(next);
        }
    };
    run_threads(static_cast<int>(outside), [&](int t) {
        for (std::size_t c = 0; c < chains_per_thread; ++c) {
            const std::size_t base = (static_cast<std::size_t>(t) * chains_per_thread + c) * chain_length;
            pool.post([&pool, &runs, base] { link::run(pool, runs, base, 0); });
        }
    });
    pool.wait_idle();
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

// The poster keeps its worker until every item it posted locally has run: only the other
// workers, stealing from its deque, can have run them.
TEST(ThreadPool, IdleWorkersStealFromAWorkerThatPostsLocally) {
    watchdog dog(60s);
    thread_pool pool(fixed(4));
    std::atomic<int> ran{0};
    std::atomic<int> ran_while_poster_busy{-1};
    pool.post([&] {
        for (int i = 0; i < 2'000; ++i) pool.post_local([&] { ran.fetch_add(1); });
        eventually([&] { return ran.load() == 2'000; }, 20s);
        ran_while_poster_busy = ran.load();
    });
    pool.wait_idle();
    EXPECT_EQ(ran_while_poster_busy.load(), 2'000);
    EXPECT_EQ(ran.load(), 2'000);
    EXPECT_GT(pool.stats().steals, 0u);
}

// A worker's post() waits in its outbox (src/pool/outbox.hpp) until one of the rules at the
// top of pool_core.cpp moves it to the global queue; the tests below are those rules.

// The poster stays busy until its items have run: with its outbox out of the other worker's
// sight, or no wake-up for it, they would run only after the poster's item, 10 s later.
TEST(ThreadPool, ItemsAWorkerPostsRunWhileItStaysBusyAndTheOtherWorkerSlept) {
    watchdog dog(60s);
    thread_pool_options o = fixed(2);
    o.name = "slept";
    thread_pool pool(o);
    pool.post([] {});
    pool.wait_idle();
    // Past the idle poll: both workers sleep.
    ASSERT_TRUE(eventually([] { return all_asleep("slept-worker-", 2); }, 30s));
    constexpr int children = 5;
    std::atomic<int> ran{0};
    std::atomic<bool> ran_meanwhile{false};
    pool.post([&] {
        for (int i = 0; i < children; ++i) pool.post([&] { ran.fetch_add(1); });
        ran_meanwhile = eventually([&] { return ran.load() == children; }, 10s);
    });
    pool.wait_idle();
    EXPECT_TRUE(ran_meanwhile.load());
    EXPECT_EQ(ran.load(), children);
}

// Many workers, each posting while busy: the idle ones take from the busy ones' outboxes.
TEST(ThreadPool, IdleWorkersTakeFromTheOutboxesOfBusyWorkers) {
    watchdog dog(60s);
    thread_pool pool(fixed(4));
    constexpr int parents = 2, children = 100;
    std::atomic<int> ran{0};
    std::atomic<int> waited_out{0};
    for (int p = 0; p < parents; ++p) {
        pool.post([&] {
            for (int i = 0; i < children; ++i) pool.post([&] { ran.fetch_add(1); });
            // Each parent holds its worker until every child has run, elsewhere.
            if (eventually([&] { return ran.load() == parents * children; }, 10s)) waited_out.fetch_add(1);
        });
    }
    pool.wait_idle();
    EXPECT_EQ(waited_out.load(), parents);
    EXPECT_EQ(ran.load(), parents * children);
}

// A single worker posts, then blocks: the outbox goes to the global queue on the way into
// the blocking_scope, and the scope starts a worker for it at once.
TEST(ThreadPool, PostsOfAWorkerThatThenBlocksRunWhileItBlocks) {
    watchdog dog(60s);
    thread_pool_options o;
    o.min_threads = 1;
    o.max_threads = 4;
    o.hill_climbing = false;
    thread_pool pool(o);
    std::atomic<int> ran{0};
    std::atomic<bool> ran_meanwhile{false};
    pool.post([&] {
        for (int i = 0; i < 5; ++i) pool.post([&] { ran.fetch_add(1); });
        contend::blocking_scope blocking;
        ran_meanwhile = eventually([&] { return ran.load() == 5; }, 10s);
    });
    pool.wait_idle();
    EXPECT_TRUE(ran_meanwhile.load());
    EXPECT_EQ(ran.load(), 5);
}

// Workers retire (the maximum drops to 1) while every item posts its successor, so they
// leave with items in their outboxes; the chains go on until the retirements are done.
TEST(ThreadPool, PostsOfWorkersThatRetireEachRunExactlyOnce) {
    watchdog dog(120s);
    thread_pool_options o;
    o.min_threads = 1;
    o.max_threads = 4;
    o.hill_climbing = false;
    thread_pool pool(o);
    ASSERT_TRUE(pool.set_min_threads(4));
    struct chains {
        explicit chains(thread_pool& p) : pool(p) {}
        thread_pool& pool;
        run_counts runs{static_cast<std::size_t>(scaled(8'000'000))};
        std::atomic<std::size_t> next_id{0};
        std::atomic<bool> stop{false};
        // Each item gets its id when posted: one lost leaves a 0, one run twice a 2.
        void post_next() {
            const std::size_t id = next_id.fetch_add(1);
            if (id >= runs.counts.size()) return;  // out of ids: the chain ends
            pool.post([this, id] {
                runs.hit(id);
                if (!stop.load()) post_next();
            });
        }
    };
    chains c(pool);
    for (int i = 0; i < 64; ++i) c.post_next();
    ASSERT_TRUE(eventually([&] { return pool.stats().threads == 4 && c.next_id.load() > 1'000; }));
    ASSERT_TRUE(pool.set_min_threads(1));
    ASSERT_TRUE(pool.set_max_threads(1));
    const bool retired = eventually([&] { return pool.stats().threads == 1; }, 30s);
    const bool still_running = c.next_id.load() < c.runs.counts.size();
    c.stop = true;
    pool.wait_idle();
    EXPECT_TRUE(retired) << pool.stats().threads;
    EXPECT_TRUE(still_running) << "the chains ended before the workers retired";
    // Every item posted ran once.
    const std::size_t ids = std::min(c.next_id.load(), c.runs.counts.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < c.runs.counts.size(); ++i) wrong += c.runs.counts[i].load() != (i < ids ? 1 : 0);
    EXPECT_EQ(wrong, 0u);
}

// The destructor drains while workers are still posting: trees of items, each posting its
// children with post(), the pool destroyed as soon as the roots are posted.
TEST(ThreadPool, AHundredThousandItemsPostedByWorkersAcrossDestructionEachRunExactlyOnce) {
    watchdog dog(120s);
    constexpr std::size_t roots = 100, per_root = 1'000;
    run_counts runs(roots * per_root);
    struct tree {
        // Runs item `i` of a root's items (numbered as a binary heap) and posts its children.
        static void run(thread_pool& p, run_counts& r, std::size_t base, std::size_t i) {
            r.hit(base + i);
            for (std::size_t c = 2 * i + 1; c <= 2 * i + 2 && c < per_root; ++c)
                p.post([&p, &r, base, c] { run(p, r, base, c); });
        }
    };
    {
        thread_pool pool(fixed(2));
        for (std::size_t root = 0; root < roots; ++root)
            pool.post([&pool, &runs, base = root * per_root] { tree::run(pool, runs, base, 0); });
    }
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

// One worker, held busy after it posted ten items: they wait in its outbox, where nobody
// else can take them. Queue length, work_waiting and wait_idle must all count them.
TEST(ThreadPool, StatsWorkWaitingAndWaitIdleCountTheItemsInAnOutbox) {
    watchdog dog(60s);
    thread_pool pool(fixed(1));
    std::atomic<bool> posted{false}, release{false};
    std::atomic<int> ran{0};
    pool.post([&] {
        for (int i = 0; i < 10; ++i) pool.post([&] { ran.fetch_add(1); });
        posted = true;
        eventually([&] { return release.load(); }, 20s);
    });
    ASSERT_TRUE(eventually([&] { return posted.load(); }));
    EXPECT_EQ(pool.stats().global_queue_length, 10u);
    EXPECT_TRUE(pool.work_waiting());
    std::atomic<int> ran_when_idle{-1};
    std::thread waiter([&] {
        pool.wait_idle();
        ran_when_idle = ran.load();
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(ran_when_idle.load(), -1);  // the poster still runs
    release = true;
    waiter.join();
    EXPECT_EQ(ran_when_idle.load(), 10);
    EXPECT_EQ(pool.stats().global_queue_length, 0u);
    EXPECT_FALSE(pool.work_waiting());
}

// An outbox fills (32 items) many times over while another worker takes from it.
TEST(ThreadPool, AWorkerPostingFarMoreThanItsOutboxHoldsLosesNothing) {
    watchdog dog(60s);
    constexpr std::size_t items = 100'000;
    run_counts runs(items);
    thread_pool pool(fixed(2));
    pool.post([&] {
        for (std::size_t k = 0; k < items; ++k) pool.post([&runs, k] { runs.hit(k); });
    });
    pool.wait_idle();
    EXPECT_EQ(runs.first_wrong(), runs.counts.size());
}

TEST(ThreadPool, TheGateThreadUnblocksItemsThatWaitForEachOther) {
    watchdog dog(120s);
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 32;
    o.hill_climbing = false;
    thread_pool pool(o);
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    // 8 items, not more: each injection past the 2 threads takes the gate's 500 ms, and this
    // test runs in six builds of the test command.
    for (int i = 0; i < 8; ++i) {
        pool.post([&] {
            started.fetch_add(1);
            // Blocks until all 8 have started: impossible with 2 threads unless the gate
            // thread adds 6 (one per 500 ms when no progress is made).
            eventually([&] { return started.load() == 8; }, 100s);
            finished.fetch_add(1);
        });
    }
    EXPECT_TRUE(eventually([&] { return finished.load() == 8; }, 90s));
    EXPECT_GE(pool.stats().starvation_injections, 6u);
    pool.wait_idle();
}

// One worker, whose item posts another and opens a scope: the second thread is there (alive,
// counted) when the scope's constructor returns, not after the gate's next tick. The gate
// injects a thread only after 500 ms without a completion, and counts the injection before it
// starts the thread; so in a round whose count is still 0 after the look, the thread came
// from the scope. A round the gate did step into (this thread stalled for 500 ms) proves
// nothing either way and is run again.
TEST(ThreadPool, BlockingScopeAddsAThreadAtOnceWithoutTheGateThread) {
    watchdog dog(120s);
    int conclusive = 0;
    for (int round = 0; round < 3 && conclusive == 0; ++round) {
        thread_pool_options o;
        o.min_threads = 1;
        o.max_threads = 2;
        o.hill_climbing = false;
        thread_pool pool(o);
        std::atomic<std::size_t> threads_in_scope{0};
        std::atomic<std::uint64_t> injections_after{1};
        contend::manual_reset_event second_ran;
        pool.post([&] {
            pool.post([&] { second_ran.set(); });
            contend::blocking_scope blocking;
            threads_in_scope = pool.stats().threads;
            injections_after = pool.stats().starvation_injections;
            second_ran.wait_for(20s);
        });
        pool.wait_idle();
        EXPECT_TRUE(second_ran.is_set());
        if (injections_after.load() != 0) continue;
        ++conclusive;
        EXPECT_EQ(threads_in_scope.load(), 2u);
    }
    EXPECT_EQ(conclusive, 1) << "the gate thread stepped in, three rounds running";
}

// Sixteen items that wait for each other, each inside a scope: the scopes start the threads
// they need (the gate's injections, one per 500 ms, would need 7 s for the 14 extra), and
// the extra threads retire once the scopes end.
TEST(ThreadPool, SixteenItemsThatWaitForEachOtherInBlockingScopesFinishAndTheExtraThreadsRetire) {
    watchdog dog(120s);
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 32;
    o.hill_climbing = false;
    thread_pool pool(o);
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    for (int i = 0; i < 16; ++i) {
        pool.post([&] {
            started.fetch_add(1);
            contend::blocking_scope blocking;
            eventually([&] { return started.load() == 16; }, 100s);
            finished.fetch_add(1);
        });
    }
    EXPECT_TRUE(eventually([&] { return finished.load() == 16; }, 90s));
    // A loose bound: the gate alone would have injected all 14.
    EXPECT_LT(pool.stats().starvation_injections, 14u);
    pool.wait_idle();
    // The extra threads retire once the scopes end and there is no work for them.
    EXPECT_TRUE(eventually([&] { return pool.stats().threads <= 2; }, 30s)) << pool.stats().threads;
}

TEST(ThreadPool, TimersNeverFireEarlyAndFireInDeadlineOrder) {
    watchdog dog(60s);
    thread_pool pool(fixed(1));  // one worker: callbacks run in the order they were dispatched
    std::mutex m;
    std::vector<int> order;
    std::atomic<int> early{0};
    const auto base = steady::now();
    const int delays_ms[] = {50, 10, 40, 20, 30, 0, 60};
    for (int d : delays_ms) {
        const auto due = base + std::chrono::milliseconds(d);
        pool.post_at(due, [&, d, due] {
            if (steady::now() < due) early.fetch_add(1);
            std::lock_guard g(m);
            order.push_back(d);
        });
    }
    const auto all_posted = steady::now();
    ASSERT_TRUE(eventually([&] {
        std::lock_guard g(m);
        return order.size() == 7;
    }));
    EXPECT_EQ(early.load(), 0);
    // The timer thread can order only what it holds: a timer that fell due before the last
    // post_at returned may have fired before an earlier one was added (this thread stalled).
    // Those all run before the rest; the rest run in deadline order. Normally only the 0 ms
    // one is due that soon, and this is the whole order.
    const auto rank = [&](int d) { return base + std::chrono::milliseconds(d) <= all_posted ? -1 : d; };
    std::lock_guard g(m);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [&](int a, int b) { return rank(a) < rank(b); }))
        << ::testing::PrintToString(order);
    EXPECT_EQ(order.size(), 7u);
}

TEST(ThreadPool, ACancelledTimerNeverRunsAndCancelSaysWhetherItWasPending) {
    watchdog dog(60s);
    thread_pool pool(fixed(1));
    std::atomic<int> ran{0};
    // The callback holds the only reference to `token`: once the token is gone, so is the
    // callback, and it can never run.
    auto token = std::make_shared<int>(0);
    const std::weak_ptr<int> callback_alive = token;
    const auto id = pool.post_after(1h, [&ran, token] { ran.fetch_add(1); });
    token.reset();
    EXPECT_EQ(pool.stats().active_timers, 1u);
    EXPECT_TRUE(pool.cancel_timer(id));
    EXPECT_TRUE(callback_alive.expired()) << "cancel_timer kept the callback";
    EXPECT_FALSE(pool.cancel_timer(id));
    const auto fired = pool.post_after(1ms, [&] { ran.fetch_add(10); });
    ASSERT_TRUE(eventually([&] { return ran.load() == 10; }));
    EXPECT_FALSE(pool.cancel_timer(fired));
    EXPECT_EQ(ran.load(), 10);
    EXPECT_EQ(pool.stats().active_timers, 0u);
}

TEST(ThreadPool, ATimerFiresWhileTenThousandSlowItemsAreQueued) {
    watchdog dog(120s);
    thread_pool pool(fixed(2));
    std::atomic<int> done{0};
    std::atomic<bool> fired{false};
    for (int i = 0; i < 10'000; ++i)
        pool.post([&] {
            // Slow until the timer has run; the rest then drain at once (the test checks
            // the timer, not 5 s of sleeping items).
            if (!fired.load()) std::this_thread::sleep_for(1ms);
            done.fetch_add(1);
        });
    std::atomic<int> done_at_fire{-1};
    pool.post_after(10ms, [&] {
        done_at_fire.store(done.load());
        fired.store(true);
    });
    ASSERT_TRUE(eventually([&] { return done_at_fire.load() >= 0; }, 60s));
    // The timer jumped the queue: most of the 10,000 items (each >= 1 ms, two at a time)
    // were still waiting when it ran.
    EXPECT_LT(done_at_fire.load(), 5'000);
    pool.wait_idle();
    EXPECT_EQ(done.load(), 10'000);
}

TEST(ThreadPool, RegisteredWaitsFireOnSetAndOnTimeout) {
    watchdog dog(60s);
    thread_pool pool(fixed(2));
    contend::manual_reset_event ev;
    std::atomic<int> signalled{0}, timed_out{0};
    auto reg = pool.register_wait(
        ev, [&](bool to) { (to ? timed_out : signalled).fetch_add(1); }, thread_pool::no_timeout, true);
    EXPECT_TRUE(reg.active());
    ev.set();
    ASSERT_TRUE(eventually([&] { return signalled.load() == 1; }));
    contend::auto_reset_event never;
    auto reg2 = pool.register_wait(
        never, [&](bool to) { (to ? timed_out : signalled).fetch_add(1); }, 20ms, false);
    ASSERT_TRUE(eventually([&] { return timed_out.load() >= 3; }));  // repeating: the timeout re-arms
    reg2.unregister();
    EXPECT_FALSE(reg2.active());
    EXPECT_EQ(signalled.load(), 1);
}

TEST(ThreadPool, DestructionRunsEveryQueuedItem) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    {
        thread_pool pool(fixed(1));
        for (int i = 0; i < 2'000; ++i)
            pool.post([&] {
                std::this_thread::sleep_for(10us);
                ran.fetch_add(1);
            });
    }
    EXPECT_EQ(ran.load(), 2'000);
}

// The destructor races items that post_local their children: many rounds, the items and the
// destroying thread shifted against each other by random yields.
TEST(ThreadPool, DestructionRunsItemsPostedByItemsWhileDraining) {
    watchdog dog(60s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    std::mt19937 rng(seed);
    const int rounds = static_cast<int>(scaled(50));
    constexpr std::size_t parents = 100;
    int wrong_rounds = 0;
    for (int round = 0; round < rounds; ++round) {
        run_counts runs(2 * parents);
        {
            thread_pool pool(fixed(2));
            for (std::size_t i = 0; i < parents; ++i) {
                const bool yield_first = rng() % 4 == 0;
                pool.post([&pool, &runs, i, yield_first] {
                    runs.hit(i);
                    if (yield_first) std::this_thread::yield();
                    pool.post_local([&runs, i] { runs.hit(parents + i); });
                });
            }
            for (auto k = rng() % 3; k > 0; --k) std::this_thread::yield();
        }
        wrong_rounds += runs.first_wrong() != runs.counts.size();
    }
    EXPECT_EQ(wrong_rounds, 0) << "rounds in which an item did not run exactly once";
}

// Timers falling due while the pool is destroyed: each callback either runs, once, or is
// discarded, and is freed exactly once either way (the ASan build sees a leak or a double
// free). Random delays and yields shift the timer thread against the destructor.
TEST(ThreadPool, TimersFallingDueAsThePoolIsDestroyedRunAtMostOnceAndAreFreedOnce) {
    watchdog dog(60s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    std::mt19937 rng(seed);
    const int rounds = static_cast<int>(scaled(50));
    constexpr int n = 16;
    int wrong = 0, ran_in_all = 0;
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::atomic<int>> ran(n), freed(n);
        {
            thread_pool pool(fixed(2));
            const auto now = steady::now();
            for (int i = 0; i < n; ++i) {
                pool.post_at(now + std::chrono::microseconds(rng() % 300),
                             [&ran, i, c = std::make_shared<destruction_counter>(&freed[i])] { ran[i].fetch_add(1); });
                if (rng() % 4 == 0) std::this_thread::yield();
            }
            for (auto k = rng() % 4; k > 0; --k) std::this_thread::yield();
        }
        for (int i = 0; i < n; ++i) {
            wrong += ran[i].load() > 1 || freed[i].load() != 1;
            ran_in_all += ran[i].load();
        }
    }
    EXPECT_EQ(wrong, 0) << "callbacks run twice, or not freed exactly once";
    RecordProperty("ran", std::to_string(ran_in_all));
}

// Registered waits whose event is set, or whose timeout falls due, while the pool is
// destroyed; the registrations outlive the pool in half the rounds. A `once` wait's callback
// runs at most once, a repeating one's never after the pool is gone, and each callback is
// freed exactly once, when the pool and its registration are both gone.
TEST(ThreadPool, WaitsFiringAsThePoolIsDestroyedRunAtMostOnceAndAreFreedOnce) {
    watchdog dog(60s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    std::mt19937 rng(seed);
    const int rounds = static_cast<int>(scaled(50));
    constexpr int n = 8;
    int wrong = 0, ran_in_all = 0;
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::atomic<int>> ran(n), freed(n);
        std::vector<contend::auto_reset_event> events(n);
        std::atomic<int> ran_after_pool{0};
        std::atomic<bool> pool_gone{false};
        std::vector<contend::wait_registration> regs;
        const bool regs_outlive_pool = rng() % 2 == 0;
        {
            thread_pool pool(fixed(2));
            for (int i = 0; i < n; ++i) {
                const auto timeout = rng() % 2 == 0 ? thread_pool::no_timeout
                                                    : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::microseconds(rng() % 300));
                regs.push_back(pool.register_wait(
                    events[i],
                    [&ran, &ran_after_pool, &pool_gone, i, c = std::make_shared<destruction_counter>(&freed[i])](bool) {
                        ran[i].fetch_add(1);
                        if (pool_gone.load()) ran_after_pool.fetch_add(1);
                    },
                    timeout, i % 2 == 0));
            }
            std::thread setter([&, seed_for_setter = rng()] {
                std::mt19937 r(seed_for_setter);
                for (int i = 0; i < n; ++i) {
                    if (r() % 2 == 0) std::this_thread::yield();
                    events[i].set();
                }
            });
            for (auto k = rng() % 4; k > 0; --k) std::this_thread::yield();
            if (!regs_outlive_pool) regs.clear();
            setter.join();
        }
        pool_gone = true;
        regs.clear();
        for (int i = 0; i < n; ++i) {
            const bool bad = freed[i].load() != 1 || (i % 2 == 0 && ran[i].load() > 1);
            wrong += bad;
            if (bad)
                ADD_FAILURE() << "round " << round << " wait " << i << (i % 2 == 0 ? " (once)" : " (repeating)")
                              << ": ran " << ran[i].load() << ", freed " << freed[i].load()
                              << (regs_outlive_pool ? ", registrations outlived the pool" : "");
            ran_in_all += ran[i].load();
        }
        wrong += ran_after_pool.load();
    }
    EXPECT_EQ(wrong, 0) << "callbacks run twice (once waits) or after the pool, or not freed exactly once";
    RecordProperty("ran", std::to_string(ran_in_all));
}

// An item still running while the destructor drains may touch timers and waits: the
// self-re-arming timer (a common shape) crashed the destructor in the first of 20 rounds.
// New timers and waits are refused once the drain has begun (thread_pool.hpp); nothing
// crashes, nothing leaks (the ASan build), and every item posted runs once.
TEST(ThreadPool, ItemsThatTouchTimersAndWaitsWhileThePoolIsDestroyedAreRefusedNotCrashed) {
    watchdog dog(120s);
    int refused_in_all_rounds = 0;
    for (int round = 0; round < 20; ++round) {
        std::atomic<int> ran{0};
        std::atomic<int> refused{0};
        std::atomic<int> items_done{0};
        contend::manual_reset_event never;
        auto pool = std::make_unique<thread_pool>(fixed(2));
        struct rearm {
            thread_pool* pool;
            std::atomic<int>* ran;
            std::atomic<int>* refused;
            void operator()() const {
                ran->fetch_add(1);
                if (pool->post_after(50us, rearm{*this}) == 0) refused->fetch_add(1);
            }
        };
        pool->post_after(50us, rearm{pool.get(), &ran, &refused});
        for (int i = 0; i < 50; ++i)
            pool->post([&, p = pool.get()] {
                std::this_thread::sleep_for(100us);  // still running when the destructor starts
                const auto id = p->post_after(1h, [&] { ran.fetch_add(1000); });
                if (id == 0) refused.fetch_add(1);
                if (id != 0) p->cancel_timer(id);  // true before the drain, false once it began
                auto reg = p->register_wait(
                    never, [&](bool) { ran.fetch_add(1000); }, 1h, false);
                if (!reg.active()) refused.fetch_add(1);
                items_done.fetch_add(1);
            });
        std::this_thread::sleep_for(round % 2 == 0 ? 0us : 300us);
        pool.reset();
        EXPECT_LT(ran.load(), 1000) << "a 1 h timer or a wait on an event never set ran";
        EXPECT_EQ(items_done.load(), 50) << "an item posted before the destructor did not run";
        refused_in_all_rounds += refused.load();
    }
    EXPECT_GT(refused_in_all_rounds, 0) << "no item ever ran during a drain: the test did not test it";
}

// Timer ids are unique across pools: another pool's id cancels nothing there.
TEST(ThreadPool, CancellingAnotherPoolsTimerIdCancelsNothing) {
    watchdog dog(60s);
    thread_pool a(fixed(1));
    thread_pool b(fixed(1));
    std::atomic<int> ran_a{0}, ran_b{0};
    const auto id_a = a.post_after(20ms, [&] { ran_a.fetch_add(1); });
    const auto id_b = b.post_after(20ms, [&] { ran_b.fetch_add(1); });
    EXPECT_NE(id_a, id_b);
    EXPECT_FALSE(b.cancel_timer(id_a)) << "pool b cancelled pool a's id";
    EXPECT_FALSE(a.cancel_timer(id_b)) << "pool a cancelled pool b's id";
    ASSERT_TRUE(eventually([&] { return ran_a.load() == 1 && ran_b.load() == 1; }, 10s));
}

// A delay too long to add to now means never, not at once (it overflowed into the past).
TEST(ThreadPool, PostAfterNoTimeoutOrTheLongestDurationNeverFires) {
    watchdog dog(60s);
    std::atomic<int> ran{0};
    {
        thread_pool pool(fixed(1));
        const auto a = pool.post_after(thread_pool::no_timeout, [&] { ran.fetch_add(1); });
        const auto b = pool.post_after(std::chrono::steady_clock::duration::max(), [&] { ran.fetch_add(1); });
        const auto c = pool.post_after(std::chrono::steady_clock::duration::max() - std::chrono::seconds(1),
                                       [&] { ran.fetch_add(1); });
        std::atomic<bool> soon{false};
        pool.post_after(std::chrono::steady_clock::duration::min(), [&] { soon = true; });
        ASSERT_TRUE(eventually([&] { return soon.load(); }, 10s)) << "a negative delay must fire at once";
        std::this_thread::sleep_for(50ms);
        EXPECT_EQ(ran.load(), 0) << "a timer for (nearly) never fired";
        EXPECT_TRUE(pool.cancel_timer(a));
        EXPECT_TRUE(pool.cancel_timer(b));
        EXPECT_TRUE(pool.cancel_timer(c));
    }
    EXPECT_EQ(ran.load(), 0);
}

// Timers and registered waits take any duration and any steady time point: one too far off
// for nanoseconds (hours::max(), a coarse time point's max()) means never, as no_timeout
// does. hours::max() converted to nanoseconds on the way in overflowed, and the timer fired
// at once.
TEST(ThreadPool, TimersAndWaitsTooFarForNanosecondsNeverFire) {
    watchdog dog(60s);
    using namespace std::chrono;
    std::atomic<int> ran{0};
    std::atomic<int> timed_out{0};
    std::atomic<int> set_seen{0};
    contend::manual_reset_event ev;
    {
        thread_pool pool(fixed(1));
        std::vector<thread_pool::timer_id> timers;
        timers.push_back(pool.post_after(hours::max(), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_after(duration<double>(1e30), [&] { ran.fetch_add(1); }));
        timers.push_back(
            pool.post_after(duration<double>(std::numeric_limits<double>::infinity()), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_at(time_point<steady_clock, hours>::max(), [&] { ran.fetch_add(1); }));
        timers.push_back(pool.post_at(time_point<steady_clock, duration<double>>(duration<double>(1e30)),
                                      [&] { ran.fetch_add(1); }));
        auto reg = pool.register_wait(
            ev, [&](bool timeout) { (timeout ? timed_out : set_seen).fetch_add(1); }, hours::max(), true);
        std::atomic<int> soon_count{0};
        pool.post_after(hours::min(), [&] { soon_count.fetch_add(1); });
        pool.post_after(duration<double>(std::numeric_limits<double>::quiet_NaN()), [&] { soon_count.fetch_add(1); });
        pool.post_at(time_point<steady_clock, hours>::min(), [&] { soon_count.fetch_add(1); });
        ASSERT_TRUE(eventually([&] { return soon_count.load() == 3; }, 10s))
            << "a negative or NaN delay, or a time long past, must fire at once";
        std::this_thread::sleep_for(50ms);
        EXPECT_EQ(ran.load(), 0) << "a timer for never fired";
        EXPECT_EQ(timed_out.load(), 0) << "a wait with no timeout timed out";
        for (const auto id : timers) EXPECT_TRUE(pool.cancel_timer(id));
        ev.set();
        EXPECT_TRUE(eventually([&] { return set_seen.load() == 1; }, 10s)) << "the set did not fire the wait";
    }
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(timed_out.load(), 0);
}

TEST(ThreadPool, AThrowingItemGoesToTheHandlerAndThePoolKeepsWorking) {
    watchdog dog(60s);
    std::atomic<int> handled{0};
    thread_pool_options o = fixed(2);
    o.on_exception = [&](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error&) {
            handled.fetch_add(1);
        }
    };
    thread_pool pool(o);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) {
        pool.post([] { throw std::runtime_error("boom"); });
        pool.post([&] { ran.fetch_add(1); });
    }
    pool.wait_idle();
    EXPECT_EQ(handled.load(), 100);
    EXPECT_EQ(ran.load(), 100);
    EXPECT_EQ(pool.stats().unhandled_exceptions, 100u);
    EXPECT_EQ(pool.stats().threads, 2u);
}

TEST(ThreadPool, SubmitCarriesTheResultAndTheException) {
    watchdog dog(60s);
    thread_pool pool(fixed(2));
    auto value = pool.submit([] { return 42; });
    auto failure = pool.submit([]() -> int { throw std::out_of_range("nope"); });
    auto move_only = pool.submit([p = std::make_unique<int>(7)] { return *p; });
    ASSERT_EQ(value.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(value.get(), 42);
    ASSERT_EQ(failure.wait_for(30s), std::future_status::ready);
    EXPECT_THROW(failure.get(), std::out_of_range);
    ASSERT_EQ(move_only.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(move_only.get(), 7);
    EXPECT_EQ(pool.stats().unhandled_exceptions, 0u);
}

namespace {

fire_and_forget hop(thread_pool& pool, int hops, bool local, std::atomic<int>& on_pool, std::atomic<bool>& done) {
    for (int i = 0; i < hops; ++i) {
        if (local) co_await pool.schedule_local();
        else co_await pool.schedule();
        if (thread_pool::current() == &pool) on_pool.fetch_add(1, std::memory_order_relaxed);
    }
    done.store(true);
}
}  // namespace

TEST(ThreadPool, AHundredThousandCoroutineHopsEachResumeOnAWorker) {
    watchdog dog(120s);
    thread_pool pool(fixed(2));
    std::atomic<int> on_pool{0};
    std::atomic<bool> done_global{false}, done_local{false};
    hop(pool, 50'000, false, on_pool, done_global);
    hop(pool, 50'000, true, on_pool, done_local);
    ASSERT_TRUE(eventually([&] { return done_global.load() && done_local.load(); }, 100s));
    EXPECT_EQ(on_pool.load(), 100'000);
    pool.wait_idle();
}

TEST(ThreadPool, HillClimbingAddsThreadsForBlockingItems) {
    watchdog dog(120s);
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 64;
    thread_pool pool(o);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> done{0};
    // A steady stream: each item sleeps 1 ms and posts its successor; 64 streams keep the
    // queue non-empty whatever the thread count.
    struct stream {
        static void step(thread_pool& p, std::atomic<bool>& s, std::atomic<std::uint64_t>& d) {
            std::this_thread::sleep_for(1ms);
            d.fetch_add(1);
            if (!s.load()) p.post([&p, &s, &d] { step(p, s, d); });
        }
    };
    for (int i = 0; i < 64; ++i) pool.post([&] { stream::step(pool, stop, done); });
    // End to end, loosely: the decisions themselves are the HillClimber tests below, fed
    // made-up samples; here the gate thread must feed the climber and apply its goal.
    const bool grew = eventually([&] { return pool.stats().thread_goal >= 5; }, 30s);
    stop.store(true);
    pool.wait_idle();
    EXPECT_TRUE(grew) << "goal " << pool.stats().thread_goal;
    EXPECT_GT(pool.stats().hill_climbing_adjustments, 0u);
    EXPECT_GT(done.load(), 0u);
}

namespace {

// Threads of the whole machine that are running or waiting for a CPU now (Linux's
// /proc/stat, procs_running), this one included; -1 where that cannot be read.
int machine_runnable_threads() {
#if defined(__linux__)
    std::ifstream stat("/proc/stat");
    std::string line;
    while (std::getline(stat, line))
        if (line.rfind("procs_running ", 0) == 0) return std::atoi(line.c_str() + 14);
#endif
    return -1;
}

}  // namespace

// CPU-bound items at the CPU count: the climber sees that no worker blocks, so it does not
// probe a thread up (it used to, and a noisy sample could keep it; docs/design/pool.md).
// That rule, on made-up samples, is HillClimber's tests, noisy ones included. End to end the
// gate thread's CPU view comes from the scheduler's statistics, and they hold only while a
// worker that wants a CPU gets one soon: Linux adds a thread's wait for a CPU to its
// statistics when it next runs, so where many other threads want the CPUs too (a load
// average in the hundreds in a TSan stage; here 60 busy loops beside the test on 2 CPUs
// failed it 2 runs in 2) a worker that waited most of a sample reads as blocked, the climber
// probes up, and a noisy sample keeps the probe (2->3->4 seen). So the bound is asserted
// only over a run during which the rest of the machine had fewer than 4 threads per CPU
// running or waiting for one, on average (/proc/stat's procs_running, less the test's own):
// a worker then waits a few time slices for a CPU, some 10 ms, and the unaccounted part of
// the wait at a sample's end stays well below the half worker that reads as blocked. Measured
// on 2 CPUs: beside about 3 per CPU (other compilers) the goal stayed at 2, 2 runs in 2; as
// 60 busy loops ended, runs at 15, 11 and 8 per CPU reached 4, 4 and 5, at 5.9 and 4.2 per
// CPU 2 and 3. A busy machine gets up to 5 runs to find a quiet one. Under load the pool guarantees only
// its limits, which every run checks; with no quiet run the test says so and skips.
TEST(ThreadPool, HillClimbingKeepsCpuWorkWithinACoreOfTheCoresOnAnOtherwiseIdleMachine) {
    watchdog dog(120s);
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    std::string busy_runs;
    for (int run = 1; run <= 5; ++run) {
        thread_pool_options o;
        o.min_threads = cores;
        o.max_threads = 64;
        std::mutex m;
        std::string moves;  // for the failure message
        o.on_adjustment = [&](const contend::hill_climbing_adjustment& a) {
            std::lock_guard g(m);
            moves += " " + std::to_string(a.from_threads) + "->" + std::to_string(a.to_threads) + " (" + a.reason + ")";
        };
        thread_pool pool(o);
        std::atomic<bool> stop{false};
        struct stream {
            static void step(thread_pool& p, std::atomic<bool>& s) {
                const auto until = steady::now() + 200us;
                while (steady::now() < until) {
                }
                if (!s.load()) p.post([&p, &s] { step(p, s); });
            }
        };
        for (int i = 0; i < 64; ++i) pool.post([&] { stream::step(pool, stop); });
        // 2 s is some 20 samples, time for several probes.
        std::size_t most = 0, least = 64;
        double others = 0;  // other threads running or runnable, summed over the readings
        int readings = 0;
        const auto until = steady::now() + 2s;
        while (steady::now() < until) {
            const auto stats = pool.stats();
            most = std::max(most, stats.thread_goal);
            least = std::min(least, stats.thread_goal);
            if (const int runnable = machine_runnable_threads(); runnable >= 0) {
                // This thread and the workers running an item are the test's own.
                others += std::max(0.0, static_cast<double>(runnable) - 1 - static_cast<double>(stats.active));
                ++readings;
            }
            std::this_thread::sleep_for(20ms);
        }
        stop.store(true);
        pool.wait_idle();
        std::lock_guard g(m);
        EXPECT_GE(least, cores) << "run " << run << ", moves:" << moves;
        EXPECT_LE(most, 64u) << "run " << run << ", moves:" << moves;
        const double others_per_cpu = readings > 0 ? others / readings / static_cast<double>(cores) : 0;
        if (others_per_cpu < 4) {
            EXPECT_LE(most, cores + 1) << "run " << run << " (" << others_per_cpu
                                       << " other threads per CPU wanted one), moves:" << moves;
            return;
        }
        busy_runs += "\n  run " + std::to_string(run) + ": " + std::to_string(others_per_cpu) +
                     " other threads per CPU wanted one; the goal reached " + std::to_string(most) + ", moves:" + moves;
    }
    GTEST_SKIP() << "the machine was busy with other work in every run, so the CPU view the bound rests on did not "
                    "hold; only the pool's limits were checked:"
                 << busy_runs;
}

TEST(ThreadPool, InvalidThreadLimitsChangeNothing) {
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 8;
    thread_pool pool(o);
    EXPECT_FALSE(pool.set_min_threads(0));
    EXPECT_FALSE(pool.set_min_threads(9));
    EXPECT_FALSE(pool.set_max_threads(0));
    EXPECT_FALSE(pool.set_max_threads(1));
    EXPECT_EQ(pool.stats().min_threads, 2u);
    EXPECT_EQ(pool.stats().max_threads, 8u);
    EXPECT_TRUE(pool.set_max_threads(4));
    EXPECT_TRUE(pool.set_min_threads(3));
    EXPECT_EQ(pool.stats().min_threads, 3u);
    EXPECT_EQ(pool.stats().max_threads, 4u);
}

TEST(ThreadPool, InvalidOptionsThrowInvalidArgument) {
    thread_pool_options o;
    o.min_threads = 4;
    o.max_threads = 2;
    EXPECT_THROW(thread_pool{o}, std::invalid_argument);
    thread_pool_options huge;
    huge.min_threads = 40'000;
    EXPECT_THROW(thread_pool{huge}, std::invalid_argument);
}

// A thread the constructor cannot start (the first worker, the second, the gate thread:
// its first three starts) fails it with pthread_create's error, and the threads it had
// started are stopped and joined. A worker thread destroyed still joinable while the
// exception unwound ended the process (std::terminate) instead.
TEST(ThreadPool, AThreadTheConstructorCannotStartFailsItWithTheErrorAndStopsTheOthers) {
    struct restore_starts {
        ~restore_starts() { contend::internal::fail_thread_starts_after(-1); }
    } restore;
    thread_pool_options o;
    o.name = "nostart";
    o.min_threads = 2;
    o.max_threads = 2;
    for (int starts = 0; starts <= 2; ++starts) {
        contend::internal::fail_thread_starts_after(starts);
        try {
            thread_pool pool(o);
            ADD_FAILURE() << "the pool started with start " << starts + 1 << " refused";
        } catch (const std::system_error& e) {
            EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again) << e.what();
            EXPECT_NE(std::string(e.what()).find("nostart"), std::string::npos) << e.what();
        }
        contend::internal::fail_thread_starts_after(-1);
        EXPECT_TRUE(threads_named("nostart-").empty()) << "start " << starts + 1 << " refused";
    }
    contend::internal::fail_thread_starts_after(3);  // the workers and the gate, no more
    thread_pool pool(o);
    EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);
}

TEST(ThreadPool, EnvironmentOverridesApplyToDefaultOptionsAndRejectGarbage) {
    ::setenv("CONTEND_POOL_MIN_THREADS", "3", 1);
    ::setenv("CONTEND_POOL_MAX_THREADS", "5", 1);
    ::setenv("CONTEND_POOL_HILL_CLIMBING", "0", 1);
    {
        thread_pool pool;
        EXPECT_EQ(pool.stats().min_threads, 3u);
        EXPECT_EQ(pool.stats().max_threads, 5u);
        thread_pool_options explicit_options;
        explicit_options.min_threads = 1;
        explicit_options.max_threads = 2;
        thread_pool pool2(explicit_options);  // fields set by the caller win
        EXPECT_EQ(pool2.stats().min_threads, 1u);
        EXPECT_EQ(pool2.stats().max_threads, 2u);
    }
    ::setenv("CONTEND_POOL_MIN_THREADS", "three", 1);
    EXPECT_THROW(thread_pool{}, std::invalid_argument);
    ::unsetenv("CONTEND_POOL_MIN_THREADS");
    ::setenv("CONTEND_POOL_HILL_CLIMBING", "maybe", 1);
    EXPECT_THROW(thread_pool{}, std::invalid_argument);
    ::unsetenv("CONTEND_POOL_HILL_CLIMBING");
    ::unsetenv("CONTEND_POOL_MAX_THREADS");
}

// A maximum below the CPU count, by the override or the option, lowers the default minimum
// with it: the default minimum (the CPU count) was kept, and every default pool threw
// "max_threads (1) is below min_threads (2)". A minimum the caller set still must not
// exceed the maximum.
TEST(ThreadPool, AMaximumBelowTheCpuCountLowersTheDefaultMinimumWithIt) {
    struct unset_on_exit {
        ~unset_on_exit() { ::unsetenv("CONTEND_POOL_MAX_THREADS"); }
    } unset;
    ::setenv("CONTEND_POOL_MAX_THREADS", "1", 1);
    {
        thread_pool pool;
        EXPECT_EQ(pool.stats().min_threads, 1u);
        EXPECT_EQ(pool.stats().max_threads, 1u);
        EXPECT_EQ(pool.submit([] { return 5; }).get(), 5);
    }
    ::unsetenv("CONTEND_POOL_MAX_THREADS");
    thread_pool_options o;
    o.max_threads = 1;
    {
        thread_pool pool(o);
        EXPECT_EQ(pool.stats().min_threads, 1u);
        EXPECT_EQ(pool.stats().max_threads, 1u);
    }
    o.min_threads = 2;
    EXPECT_THROW(thread_pool{o}, std::invalid_argument);
}

// The thread-count overrides take decimal digits only, a count of 1 or more: anything else,
// with a space or a sign anywhere, is refused with a message that names the variable and the
// value. ' 4' and '+3' were taken (strtoull skips spaces and a sign) and '4 ' refused.
TEST(ThreadPool, ThreadCountOverridesTakeDecimalDigitsOnly) {
    for (const char* name : {"CONTEND_POOL_MIN_THREADS", "CONTEND_POOL_MAX_THREADS"}) {
        for (const char* bad :
             {" 4", "+3", "4 ", "-1", "", "0", "00", "0x4", "4.0", "1e3", "four", "99999999999999999999999"}) {
            ::setenv(name, bad, 1);
            try {
                thread_pool pool;
                ADD_FAILURE() << name << "='" << bad << "' was taken: min " << pool.stats().min_threads << ", max "
                              << pool.stats().max_threads;
            } catch (const std::invalid_argument& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find(name), std::string::npos) << what;
                EXPECT_NE(what.find("'" + std::string(bad) + "'"), std::string::npos) << what;
            }
        }
        ::setenv(name, "2", 1);
        EXPECT_NO_THROW(thread_pool{}) << name << "=2";
        ::setenv(name, "002", 1);
        EXPECT_NO_THROW(thread_pool{}) << name << "=002";
        ::unsetenv(name);
    }
}

TEST(ThreadPool, WaitIdleFromAWorkerOfTheSamePoolThrows) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    auto f = pool.submit([&] { pool.wait_idle(); });
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    EXPECT_THROW(f.get(), std::logic_error);
}

TEST(ThreadPool, DestroyingThePoolFromItsOwnItemThrowsLogicErrorAndThePoolStillDrainsAndStops) {
    watchdog dog(60s);
    // Shared with the pool's hooks, which may outlive this test's frame by a moment.
    struct state {
        std::atomic<int> starts{0}, stops{0}, ran{0}, threw{0};
        std::atomic<bool> current_was_null{false};
        contend::manual_reset_event release;
    };
    auto st = std::make_shared<state>();
    thread_pool_options o = fixed(2);
    o.on_thread_start = [st](std::size_t) { st->starts.fetch_add(1); };
    o.on_thread_stop = [st](std::size_t) { st->stops.fetch_add(1); };
    auto* pool = new thread_pool(o);
    ASSERT_TRUE(eventually([&] { return st->starts.load() == 2; }));
    // One worker busy until the test lets it go; the other destroys the pool after posting
    // 100 items, which must still run, exactly once each. The test touches the pool no more
    // once the destroying item is posted.
    pool->post([st] { st->release.wait_for(20s); });
    pool->post([st, pool] {
        for (int i = 0; i < 100; ++i) pool->post([st] { st->ran.fetch_add(1); });
        try {
            delete pool;
        } catch (const std::logic_error& e) {
            if (std::string(e.what()).find("same pool") != std::string::npos) st->threw.fetch_add(1);
        }
        st->current_was_null.store(thread_pool::current() == nullptr);
        st->ran.fetch_add(1);
    });
    st->release.set();
    EXPECT_TRUE(eventually([&] { return st->stops.load() == 2; }, 30s)) << st->stops.load();
    EXPECT_EQ(st->threw.load(), 1);
    EXPECT_TRUE(st->current_was_null.load());
    EXPECT_EQ(st->ran.load(), 101);
}

TEST(ThreadPool, ABlockingScopeThatOutlivesItsItemStopsCountingWhenTheItemReturns) {
    watchdog dog(60s);
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 8;
    o.hill_climbing = false;
    thread_pool pool(o);
    // As a coroutine that suspends inside a scope and resumes elsewhere: the scope leaves
    // its item alive and is destroyed later, once on a plain thread, once on another worker.
    std::unique_ptr<contend::blocking_scope> on_plain_thread, on_a_worker;
    pool.post([&] { on_plain_thread = std::make_unique<contend::blocking_scope>(); });
    pool.post([&] { on_a_worker = std::make_unique<contend::blocking_scope>(); });
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
    std::thread([&] { on_plain_thread.reset(); }).join();
    pool.post([&] { on_a_worker.reset(); });
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
    EXPECT_EQ(pool.stats().thread_goal, 2u);
    // A scope used as documented still counts while it is open.
    contend::manual_reset_event inside, leave;
    pool.post([&] {
        contend::blocking_scope s;
        inside.set();
        leave.wait_for(20s);
    });
    ASSERT_TRUE(inside.wait_for(20s));
    EXPECT_EQ(pool.stats().blocked, 1u);
    leave.set();
    pool.wait_idle();
    EXPECT_EQ(pool.stats().blocked, 0u);
}

TEST(ThreadPool, WorkersAreNamedAndHooksSeeThemStartAndStop) {
    watchdog dog(30s);
    std::atomic<int> starts{0}, stops{0};
    {
        thread_pool_options o = fixed(2);
        o.name = "tp";
        o.on_thread_start = [&](std::size_t) { starts.fetch_add(1); };
        o.on_thread_stop = [&](std::size_t) { stops.fetch_add(1); };
        thread_pool pool(o);
        ASSERT_TRUE(eventually([&] { return starts.load() == 2; }));
        // Each thread names itself as it starts: poll until all three have.
        const auto has = [](const std::vector<std::string>& names, const char* name) {
            return std::find(names.begin(), names.end(), name) != names.end();
        };
        std::vector<std::string> names;
        EXPECT_TRUE(eventually([&] {
            names = thread_names();
            return has(names, "tp-worker-0") && has(names, "tp-worker-1") && has(names, "tp-gate");
        }));
    }
    EXPECT_EQ(stops.load(), 2);
}

TEST(ThreadPool, PostLocalFromOutsideAPoolGoesToTheGlobalQueue) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    std::atomic<int> ran{0};
    for (int i = 0; i < 1000; ++i) pool.post_local([&] { ran.fetch_add(1); });
    pool.wait_idle();
    EXPECT_EQ(ran.load(), 1000);
    EXPECT_EQ(thread_pool::current(), nullptr);
}

// What an event loop run as a pool item asks before it blocks in its poll.
TEST(ThreadPool, WorkWaitingSeesTheCallersDequeAndTheGlobalQueues) {
    watchdog dog(30s);
    thread_pool pool(fixed(1));
    EXPECT_FALSE(pool.work_waiting());
    std::atomic<int> step{0};
    std::atomic<bool> alone{true}, after_local{false}, after_global{false};
    pool.post([&] {
        alone = pool.work_waiting();  // nothing queued anywhere
        pool.post_local([&] { step.fetch_add(1); });
        after_local = pool.work_waiting();  // its own deque
        pool.post([&] { step.fetch_add(1); });
        after_global = pool.work_waiting();
    });
    pool.wait_idle();
    EXPECT_EQ(step.load(), 2);
    EXPECT_FALSE(alone.load());
    EXPECT_TRUE(after_local.load());
    EXPECT_TRUE(after_global.load());

    // Off the pool: the global queue, here behind the one worker held busy.
    std::atomic<bool> release{false};
    pool.post([&] {
        while (!release.load()) std::this_thread::sleep_for(1ms);
    });
    pool.post([] {});
    EXPECT_TRUE(pool.work_waiting());
    release = true;
    pool.wait_idle();
    EXPECT_FALSE(pool.work_waiting());
}

// The CPU of the pool's own threads (its workers and gate thread, by name), not the
// process's: this test's other threads, and whatever else the process runs, do not count.
TEST(ThreadPool, AnIdlePoolBurnsNextToNoCpu) {
    watchdog dog(30s);
    thread_pool_options o = fixed(4);
    o.name = "idle";
    thread_pool pool(o);
    for (int i = 0; i < 100; ++i) pool.post([] {});
    pool.wait_idle();
    // Past the workers' short poll: all four asleep, and the gate thread (named once it runs)
    // between its ticks.
    ASSERT_TRUE(eventually([] { return all_asleep("idle-", 5); }, 20s));
    const auto before = threads_named("idle-");
    ASSERT_EQ(before.size(), 5u) << "four workers and the gate thread";
    std::this_thread::sleep_for(500ms);  // the span measured, not a synchronization
    const auto after = threads_named("idle-");
    double used = 0;
    for (const auto& [tid, r] : after)
        if (const auto it = before.find(tid); it != before.end()) used += r.cpu_seconds - it->second.cpu_seconds;
    // A spinning worker would use ~0.5 s here; the gate thread's 5 ticks use microseconds.
    EXPECT_LT(used, 0.05) << used << " s of the pool's CPU in an idle half second";
}

// The outbox alone: its owner pushes, and takes all when full, while two thieves take half
// at a time. Every item is taken once, and each taker gets items in the order pushed. The
// thieves size their take from a size() snapshot into a Capacity-long array, as the pool's
// steal does: a stale snapshot once asked for more than Capacity, take copied past the
// array's end, and the thread returned to an item's value (a ThreadSanitizer run, SEGV).
TEST(WorkerOutbox, EveryItemIsTakenExactlyOnceAndInPushOrderByOwnerAndThieves) {
    watchdog dog(120s);
    constexpr std::size_t capacity = 32;
    contend::internal::worker_outbox<std::uintptr_t, capacity> box;
    const std::uintptr_t items = static_cast<std::uintptr_t>(scaled(2'000'000));
    std::vector<std::atomic<std::uint8_t>> taken(items + 1);
    std::atomic<bool> done{false};
    std::atomic<int> out_of_order{0};
    run_threads(3, [&](int t) {
        std::uintptr_t batch[capacity];
        std::uintptr_t last = 0;  // items are 1..items: each taker's must only grow
        const auto record = [&](std::size_t n) {
            for (std::size_t i = 0; i < n; ++i) {
                if (batch[i] <= last) out_of_order.fetch_add(1);
                last = batch[i];
                taken[batch[i]].fetch_add(1, std::memory_order_relaxed);
            }
        };
        if (t == 0) {
            for (std::uintptr_t i = 1; i <= items; ++i) {
                while (!box.push(i)) record(box.take(batch, capacity));
                if (i % 1000 == 0) record(box.take(batch, capacity));  // a flush before it is full
            }
            done = true;
        } else {
            while (!done.load() || !box.empty()) record(box.take(batch, (box.size() + 1) / 2));
        }
    });
    EXPECT_EQ(out_of_order.load(), 0);
    std::size_t wrong = 0;
    for (std::uintptr_t i = 1; i <= items; ++i) wrong += taken[i].load() != 1;
    EXPECT_EQ(wrong, 0u);
}

// The climber's decisions, fed samples by hand: 0.1 s each, a steady rate unless a test says
// otherwise, each decision's goal applied as the gate thread would.
namespace {
using contend::internal::hill_climber;

struct climbing {
    hill_climber climber;
    std::size_t goal;
    std::size_t min_threads;
    std::size_t max_threads = 64;
    int ups = 0, downs = 0;
    hill_climber::decision sample(double per_second, bool work_waiting, hill_climber::cpu_view cpu) {
        const auto d = climber.update(goal, 0.1, static_cast<std::uint64_t>(per_second / 10), work_waiting, min_threads,
                                      max_threads, cpu);
        ups += d.what == hill_climber::move::probe_up;
        downs += d.what == hill_climber::move::probe_down;
        goal = d.goal;
        return d;
    }
};

hill_climber::cpu_view cpus_blocked(std::size_t cpus, double blocked) {
    hill_climber::cpu_view v;
    v.cpus = cpus;
    v.blocked_workers = blocked;
    return v;
}
}  // namespace

TEST(HillClimber, CpuBoundWorkersAtTheCpuCountGetNoThreadMoreWhateverWaits) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 200; ++i) c.sample(100'000, true, cpus_blocked(2, 0.2));
    EXPECT_EQ(c.goal, 2u);
    EXPECT_EQ(c.ups, 0);
}

TEST(HillClimber, BlockedWorkersAtTheCpuCountStillGetAProbeUp) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, cpus_blocked(2, 1.5));
    EXPECT_EQ(c.ups, 1);
    EXPECT_EQ(c.goal, 3u);
}

TEST(HillClimber, BelowTheCpuCountCpuBoundWorkStillProbesUp) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, cpus_blocked(4, 0.0));
    EXPECT_EQ(c.goal, 3u);
}

TEST(HillClimber, WithoutACpuViewWaitingWorkProbesUpAsBefore) {
    climbing c{{}, 2, 2};
    for (int i = 0; i < 10 && c.ups == 0; ++i) c.sample(100'000, true, {});
    EXPECT_EQ(c.goal, 3u);
}

// A goal above the CPU count (a noisy sample kept a probe, or the work was blocking then)
// comes back down once the workers are CPU-bound, though work keeps waiting, and stays.
TEST(HillClimber, AboveTheCpuCountCpuBoundWorkersAreProbedDownWhileWorkWaits) {
    climbing c{{}, 3, 2};
    for (int i = 0; i < 200; ++i) c.sample(100'000, true, cpus_blocked(2, 0.1));
    EXPECT_EQ(c.goal, 2u);
    EXPECT_EQ(c.downs, 1);
    EXPECT_EQ(c.ups, 0);
}

// ...unless the thread less costs more than min_gain: then the climber goes back up and rests.
TEST(HillClimber, AProbeDownThatCostsThroughputIsRevertedThenRetriedLessOften) {
    climbing c{{}, 3, 2};
    int reverts = 0;
    for (int i = 0; i < 200; ++i) {
        const double rate = c.goal == 3 ? 100'000 : 70'000;  // the third thread is worth 30 %
        reverts += c.sample(rate, true, cpus_blocked(2, 0.1)).what == hill_climber::move::revert;
    }
    EXPECT_EQ(c.goal, 3u);
    EXPECT_GE(reverts, 2);
    EXPECT_EQ(reverts, c.downs);
    EXPECT_LE(c.downs, 8);  // rests of 4, 8, 16, 32, 32... samples between the probes
}

// What the climber guarantees for CPU-bound work, whatever the throughput samples say: fed
// CPU-bound readings (fewer than half a worker blocked) with noisy throughput (each sample
// anywhere from half to one and a half times the rate) and work always waiting, it never
// takes the goal past the CPU count, and from above it never raises it. This is what the
// end-to-end test above can check only on a quiet machine, where the gate thread's CPU view
// is true.
TEST(HillClimber, NoisyCpuBoundSamplesNeverRaiseTheGoalPastTheCpuCount) {
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> rate(50'000, 150'000), blocked(0.0, 0.49);
    for (std::size_t cpus : {1u, 2u, 4u, 16u}) {
        for (std::size_t start : {cpus, cpus + 3}) {
            climbing c{{}, start, 1};
            std::size_t most = start;
            for (int i = 0; i < 2'000; ++i) {
                c.sample(rate(rng), true, cpus_blocked(cpus, blocked(rng)));
                most = std::max(most, c.goal);
            }
            EXPECT_EQ(most, start) << cpus << " CPUs, from " << start;
            if (start == cpus) {
                EXPECT_EQ(c.ups, 0) << cpus << " CPUs";
            }
        }
    }
}

// A probe up is kept only if throughput rose by more than min_gain.
TEST(HillClimber, AProbeUpIsKeptOnlyForMoreThanTheMinimumGain) {
    climbing flat{{}, 2, 2};
    for (int i = 0; i < 8; ++i) flat.sample(100'000, true, {});
    EXPECT_EQ(flat.goal, 2u);  // probed, saw no gain, reverted
    EXPECT_GE(flat.ups, 1);
    climbing rising{{}, 2, 2};
    for (int i = 0; i < 8 && rising.goal < 3; ++i) rising.sample(100'000, true, {});
    for (int i = 0; i < 4; ++i) rising.sample(rising.goal >= 3 ? 150'000 : 100'000, true, {});
    EXPECT_GE(rising.goal, 3u);
}

// Blocking work, as the end-to-end test above makes it: each thread the climber adds raises
// throughput by a worker's worth (items that sleep), up to 8 threads, and no further. The
// climber climbs there, one kept probe at a time, and stays (its probes past 8 are reverted).
TEST(HillClimber, EachThreadAddingThroughputClimbsToWhereTheGainStopsAndStaysThere) {
    climbing c{{}, 2, 2};
    int keeps = 0, reverts = 0;
    std::size_t most = 0;
    for (int i = 0; i < 300; ++i) {
        const auto d = c.sample(1'000.0 * static_cast<double>(std::min<std::size_t>(c.goal, 8)), true, {});
        keeps += d.what == hill_climber::move::keep;
        reverts += d.what == hill_climber::move::revert;
        most = std::max(most, c.goal);
    }
    EXPECT_EQ(keeps, 6) << "2 -> 8, one kept probe per thread";
    EXPECT_GE(reverts, 1);
    EXPECT_EQ(most, 9u) << "a probe past 8 was kept";
    EXPECT_GE(c.goal, 8u);
    EXPECT_LE(c.goal, 9u);
}

// Whatever the samples say, the goal moves at most max_change_per_second (4) times in any
// second: here every probe up is a gain and kept, the fastest a climber could go.
TEST(HillClimber, TheGoalMovesAtMostFourTimesInAnySecond) {
    climbing c{{}, 2, 2};
    std::vector<int> moved_at;  // sample numbers, 0.1 s apart
    for (int i = 0; i < 200; ++i) {
        const std::size_t before = c.goal;
        c.sample(1'000.0 * static_cast<double>(c.goal), true, {});
        if (c.goal != before) moved_at.push_back(i);
    }
    ASSERT_GE(moved_at.size(), 5u);
    for (std::size_t k = 4; k < moved_at.size(); ++k)
        EXPECT_GE(moved_at[k] - moved_at[k - 4], 10)
            << "five moves within one second, the last at sample " << moved_at[k];
}

// Limits that move under the climber (set_min_threads, set_max_threads) clamp the goal at
// once, and the climber measures afresh: the next sample is discarded, no probe follows it.
TEST(HillClimber, AGoalOutsideNewLimitsIsClampedAndTheNextSampleOnlyMeasured) {
    climbing c{{}, 6, 2};
    for (int i = 0; i < 5; ++i) c.sample(1'000, false, {});  // no work waits: one probe down, kept
    ASSERT_EQ(c.goal, 5u);
    c.max_threads = 3;
    const auto clamped = c.sample(1'000, false, {});
    EXPECT_EQ(clamped.goal, 3u);
    EXPECT_EQ(clamped.what, hill_climber::move::none);
    // Without work waiting, a sample the climber used would probe down to 2.
    const auto next = c.sample(1'000, false, {});
    EXPECT_EQ(next.what, hill_climber::move::none) << "the sample after a change is discarded";
    EXPECT_EQ(next.goal, 3u);
}
