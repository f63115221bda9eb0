// The pool's data structures on their own (src/pool): the Chase-Lev deque, the idle stack,
// the global queue and the small task nodes' cache. Through the pool they are reached only in the orders its workers
// happen to produce, and the deque's correctness rests on standalone seq_cst fences that ThreadSanitizer does not
// model: here each is driven by threads that race on it directly, with random yields from a seeded generator (the seed
// is printed on a failure; CONTEND_TEST_SEED replays one), and every item is counted: taken exactly once. Each test
// runs well under a second in the optimized build.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "contend/cpu_relax.hpp"
#include "contend/internal/task.hpp"
#include "pool/global_queue.hpp"
#include "pool/idle_stack.hpp"
#include "pool/work_stealing_deque.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::internal::global_queue;
using contend::internal::idle_stack;
using contend::internal::idle_waiter;
using contend::internal::work_stealing_deque;

namespace {

// Random delays for one thread: mostly a few pauses (to shift the threads against each other
// by a handful of instructions), sometimes a yield (to let the other thread run through).
class jitter {
public:
    explicit jitter(std::uint32_t seed) : rng_(seed) {}
    void operator()(std::uint32_t max_pauses = 8) {
        const std::uint32_t r = rng_();
        if (r % 64 == 0) std::this_thread::yield();
        else
            for (std::uint32_t i = (r >> 6) % max_pauses; i > 0; --i) contend::cpu_relax();
    }
    std::uint32_t next(std::uint32_t bound) { return rng_() % bound; }

private:
    std::mt19937 rng_;
};

// Spins until `cond`, yielding (the other thread may share this CPU), or fails after 10 s.
template <class Cond>
bool spin_until(Cond cond) {
    const auto until = steady::now() + 10s;
    for (std::uint32_t i = 1; !cond(); ++i) {
        contend::cpu_relax();
        if (i % 256 == 0) {
            if (steady::now() >= until) return false;
            std::this_thread::yield();
        }
    }
    return true;
}

}  // namespace

// Rounds of one or two items: the owner pushes them and pops them back while a thief steals
// them. With one item, the two race for it through the CAS on top. With two, the owner takes
// the second without a CAS while the thief may take the first and then look again: only the
// pop's store-load order (the seq_cst fence between bottom's store and top's load, which
// ThreadSanitizer does not model) keeps the thief's second look from the owner's item.
TEST(WorkStealingDeque, AnOwnerPoppingAndAThiefStealingTheLastOneOrTwoItemsTakeEachExactlyOnce) {
    watchdog dog(120s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    const std::int64_t rounds = scaled(10'000);
    work_stealing_deque<std::int64_t> deque(4);
    std::atomic<std::int64_t> pushed{0};  // the round whose items are in the deque
    std::atomic<std::int64_t> stolen{0};  // the round the thief has finished
    // Round r's items are 2r and 2r + 1 (the second only in two-item rounds).
    std::vector<std::uint8_t> in_round(static_cast<std::size_t>(2 * rounds + 2));
    std::vector<std::uint8_t> owner_got(in_round.size()), thief_got(in_round.size());
    std::atomic<int> foreign{0};
    std::atomic<bool> stuck{false};
    const auto valid = [&](std::int64_t item) {
        return item >= 2 && item < static_cast<std::int64_t>(in_round.size());
    };
    std::thread thief([&] {
        jitter delay(seed + 1);
        for (std::int64_t r = 1; r <= rounds; ++r) {
            if (!spin_until([&] { return pushed.load(std::memory_order_acquire) >= r || stuck.load(); })) stuck = true;
            if (stuck.load()) return;
            delay();
            for (int attempt = 0; attempt < 3; ++attempt) {  // at most two successes, a lost race retried
                std::int64_t item = 0;
                const auto result = deque.steal(item);
                if (result == work_stealing_deque<std::int64_t>::steal_result::empty) break;
                if (result != work_stealing_deque<std::int64_t>::steal_result::success) continue;
                if (valid(item)) ++thief_got[static_cast<std::size_t>(item)];
                else foreign.fetch_add(1);
            }
            stolen.store(r, std::memory_order_release);
        }
    });
    jitter delay(seed);
    std::int64_t wrong_size = 0, two_item_rounds = 0;
    for (std::int64_t r = 1; r <= rounds && !stuck.load(); ++r) {
        const int k = 1 + static_cast<int>(delay.next(2));
        two_item_rounds += k == 2;
        for (int j = 0; j < k; ++j) {
            in_round[static_cast<std::size_t>(2 * r + j)] = 1;
            deque.push(2 * r + j);
        }
        pushed.store(r, std::memory_order_release);
        // Up to about as long as the thief takes to see the round begin: the pops then land
        // before, during or after the steals.
        delay(64);
        std::int64_t item = 0;
        for (int j = 0; j < k && deque.pop(item); ++j) {
            if (valid(item)) ++owner_got[static_cast<std::size_t>(item)];
            else foreign.fetch_add(1);
        }
        if (!spin_until([&] { return stolen.load(std::memory_order_acquire) >= r; })) stuck = true;
        wrong_size += deque.size() != 0;
    }
    thief.join();
    ASSERT_FALSE(stuck.load()) << "a round did not finish in 10 s";
    std::int64_t wrong = 0, stolen_items = 0;
    for (std::size_t i = 0; i < in_round.size(); ++i) {
        wrong += owner_got[i] + thief_got[i] != in_round[i];
        stolen_items += thief_got[i];
    }
    EXPECT_EQ(wrong, 0) << "items taken twice, or never";
    EXPECT_EQ(foreign.load(), 0) << "items nobody pushed";
    EXPECT_EQ(wrong_size, 0) << "rounds after which the deque was not empty";
    RecordProperty("stolen_items", std::to_string(stolen_items));
    RecordProperty("two_item_rounds", std::to_string(two_item_rounds));
}

// Many items: the owner pushes bursts (growing the buffer from 4 slots) and pops some back
// while three thieves steal. Every item is taken once, and each thief takes them oldest first.
TEST(WorkStealingDeque, EveryItemIsTakenExactlyOnceByTheOwnerOrOneOfThreeThievesOldestFirstForEachThief) {
    watchdog dog(120s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    const std::int64_t items = scaled(300'000);
    work_stealing_deque<std::int64_t> deque(4);
    std::vector<std::atomic<std::uint8_t>> taken(static_cast<std::size_t>(items) + 1);
    std::atomic<bool> done{false};
    std::atomic<int> out_of_order{0};
    run_threads(4, [&](int t) {
        jitter delay(seed + static_cast<std::uint32_t>(t));
        if (t == 0) {
            std::int64_t next = 1;
            while (next <= items) {
                for (std::uint32_t n = 1 + delay.next(64); n > 0 && next <= items; --n) deque.push(next++);
                delay();
                std::int64_t item = 0;
                for (std::uint32_t n = delay.next(48); n > 0 && deque.pop(item); --n)
                    taken[static_cast<std::size_t>(item)].fetch_add(1, std::memory_order_relaxed);
            }
            done.store(true);
            std::int64_t item = 0;
            while (deque.pop(item)) taken[static_cast<std::size_t>(item)].fetch_add(1, std::memory_order_relaxed);
        } else {
            std::int64_t last = 0;
            for (;;) {
                const bool finished = done.load();
                std::int64_t item = 0;
                const auto result = deque.steal(item);
                if (result == work_stealing_deque<std::int64_t>::steal_result::success) {
                    if (item <= last) out_of_order.fetch_add(1);
                    last = item;
                    taken[static_cast<std::size_t>(item)].fetch_add(1, std::memory_order_relaxed);
                } else if (result == work_stealing_deque<std::int64_t>::steal_result::empty && finished) {
                    return;  // the owner had stopped pushing before this look found it empty
                }
                delay();
            }
        }
    });
    EXPECT_EQ(out_of_order.load(), 0);
    std::int64_t wrong = 0;
    for (std::int64_t i = 1; i <= items; ++i) wrong += taken[static_cast<std::size_t>(i)].load() != 1;
    EXPECT_EQ(wrong, 0) << "items taken twice or never";
    EXPECT_EQ(deque.size(), 0u);
}

// Each thread owns a few waiters and does what a worker does with its own: pushes it, and
// later takes it back with remove(), or, if a waker popped it meanwhile, consumes the
// wake-up. Meanwhile every thread pops whatever is on top and sets its event, as a post
// does. Every push is undone exactly once (by a pop or a remove), and every pop's wake-up
// reaches its waiter.
TEST(IdleStack, EveryPushedWaiterIsPoppedOrRemovedExactlyOnceUnderContention) {
    watchdog dog(120s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    constexpr int threads = 4, per_thread = 4;
    const int iterations = static_cast<int>(scaled(20'000));
    idle_stack stack;
    std::vector<idle_waiter> waiters(threads * per_thread);
    struct counts {
        std::atomic<int> pushes{0}, pops{0}, removes{0}, wakes{0};
    };
    std::vector<counts> per_waiter(waiters.size());
    const auto id_of = [&](idle_waiter* w) { return static_cast<std::size_t>(w - waiters.data()); };
    std::atomic<int> lost_wakes{0}, foreign{0};
    run_threads(threads, [&](int t) {
        jitter delay(seed + static_cast<std::uint32_t>(t));
        idle_waiter* mine = &waiters[static_cast<std::size_t>(t * per_thread)];
        for (int i = 0; i < iterations; ++i) {
            const std::uint32_t n = 1 + delay.next(per_thread);
            for (std::uint32_t k = 0; k < n; ++k) {
                stack.push(&mine[k]);
                per_waiter[id_of(&mine[k])].pushes.fetch_add(1, std::memory_order_relaxed);
                delay();
            }
            for (std::uint32_t k = delay.next(per_thread + 1); k > 0; --k) {
                idle_waiter* w = stack.pop();
                if (w == nullptr) break;
                if (w < waiters.data() || w >= waiters.data() + waiters.size()) {
                    foreign.fetch_add(1);
                    continue;
                }
                per_waiter[id_of(w)].pops.fetch_add(1, std::memory_order_relaxed);
                w->wake.set();
                delay();
            }
            for (std::uint32_t k = 0; k < n; ++k) {
                if (stack.remove(&mine[k])) {
                    per_waiter[id_of(&mine[k])].removes.fetch_add(1, std::memory_order_relaxed);
                } else if (mine[k].wake.wait_for(10s)) {
                    per_waiter[id_of(&mine[k])].wakes.fetch_add(1, std::memory_order_relaxed);
                } else {
                    lost_wakes.fetch_add(1);
                }
            }
        }
    });
    EXPECT_EQ(foreign.load(), 0) << "pop returned a pointer nobody pushed";
    EXPECT_EQ(lost_wakes.load(), 0) << "a waiter that remove() said was popped got no wake-up";
    int wrong = 0;
    for (const auto& c : per_waiter)
        wrong += c.pushes.load() != c.pops.load() + c.removes.load() || c.pops.load() != c.wakes.load();
    EXPECT_EQ(wrong, 0) << "waiters whose pushes and pops, removes and wake-ups do not balance";
    EXPECT_EQ(stack.size(), 0u);
    EXPECT_EQ(stack.pop(), nullptr);
}

// Two producers push items one at a time and in batches; two consumers take their share the
// way workers do (push_and_pop_share, appending their own items in the same lock hold, as a
// worker flushes its outbox; or claim_bypass and pop_share_then_keep_or_push, keeping them)
// and sometimes pop one. Every item is taken exactly once, no take exceeds its maximum, and
// each consumer sees each source's items in the order pushed (its own that it kept aside:
// a worker's own posts may go before its earlier ones still queued).
TEST(GlobalQueue, BatchTakesAndPushesTakeEveryItemExactlyOnceInEachSourcesOrder) {
    watchdog dog(120s);
    const std::uint32_t seed = test_seed();
    SCOPED_TRACE(seed_trace(seed));
    constexpr int producers = 2, consumers = 2, sources = producers + consumers;
    constexpr std::size_t max_take = 32;
    const std::uint64_t per_producer = static_cast<std::uint64_t>(scaled(200'000));
    global_queue<std::uint64_t> queue;
    // An item is its source (the thread that pushed it) in the top bits and its number there.
    constexpr int source_shift = 40;
    std::vector<std::vector<std::atomic<std::uint8_t>>> taken;
    for (int s = 0; s < sources; ++s) taken.emplace_back(per_producer + 1);
    std::vector<std::uint64_t> appended(sources, 0);  // how many each consumer added
    std::atomic<int> producers_left{producers};
    std::atomic<int> out_of_order{0}, over_max{0};
    run_threads(producers + consumers, [&](int t) {
        jitter delay(seed + static_cast<std::uint32_t>(t));
        const std::uint64_t source = static_cast<std::uint64_t>(t) << source_shift;
        if (t < producers) {
            std::uint64_t next = 1;
            std::uint64_t batch[40];
            while (next <= per_producer) {
                if (delay.next(2) == 0) {
                    queue.push(source | next++);
                } else {
                    std::size_t n = 0;
                    for (std::uint32_t k = 1 + delay.next(40); k > 0 && next <= per_producer; --k)
                        batch[n++] = source | next++;
                    queue.push_batch(batch, n);
                }
                delay();
            }
            producers_left.fetch_sub(1);
            return;
        }
        std::vector<std::uint64_t> last(sources, 0);
        const auto record = [&](std::uint64_t item, bool queued = true) {
            const auto s = static_cast<std::size_t>(item >> source_shift);
            const std::uint64_t number = item & ((std::uint64_t{1} << source_shift) - 1);
            if (s >= static_cast<std::size_t>(sources) || number == 0 || number > per_producer) {
                out_of_order.fetch_add(1);  // not an item anyone pushed
                return;
            }
            if (queued) {
                if (number <= last[s]) out_of_order.fetch_add(1);
                last[s] = number;
            }
            taken[s][number].fetch_add(1, std::memory_order_relaxed);
        };
        std::uint64_t mine[8];
        std::uint64_t out[max_take];
        std::uint64_t next = 1;
        for (;;) {
            const bool producers_done = producers_left.load() == 0;
            std::size_t n = 0;
            if (!producers_done)
                for (std::uint32_t k = delay.next(8); k > 0 && next <= per_producer; --k) mine[n++] = source | next++;
            const std::uint32_t way = delay.next(4);
            if (way == 0) {
                std::uint64_t item = 0;
                queue.push_batch(mine, n);
                if (queue.pop(item)) record(item);
            } else if (way == 1) {
                if (n > 0 && queue.claim_bypass()) {
                    for (std::size_t i = 0; i < n; ++i) record(mine[i], false);
                } else {
                    const std::size_t max = 1 + delay.next(max_take);
                    bool kept = false;
                    const std::size_t got = queue.pop_share_then_keep_or_push(mine, n, out, consumers, max, kept);
                    over_max += got > max;
                    for (std::size_t i = 0; i < got; ++i) record(out[i]);
                    if (kept)
                        for (std::size_t i = 0; i < n; ++i) record(mine[i], false);
                }
            } else {
                const std::size_t max = 1 + delay.next(max_take);
                const std::size_t got = queue.push_and_pop_share(mine, n, out, consumers, max);
                over_max += got > max;
                for (std::size_t i = 0; i < got; ++i) record(out[i]);
            }
            // Done once the producers were, before this turn added nothing, and the queue is empty.
            if (producers_done && queue.empty()) break;
            delay();
        }
        appended[static_cast<std::size_t>(t)] = next - 1;
    });
    EXPECT_EQ(out_of_order.load(), 0) << "a consumer took a source's items out of order, or an unknown item";
    EXPECT_EQ(over_max.load(), 0) << "a take returned more than its maximum";
    EXPECT_EQ(queue.size(), 0u);
    std::uint64_t wrong = 0;
    for (int s = 0; s < sources; ++s) {
        const std::uint64_t count = s < producers ? per_producer : appended[static_cast<std::size_t>(s)];
        for (std::uint64_t i = 1; i <= per_producer; ++i) wrong += taken[s][i].load() != (i <= count ? 1 : 0);
    }
    EXPECT_EQ(wrong, 0u) << "items taken twice or never";
}

// A worker that ran dry may run its own posts before the queue's items (claim_bypass): on an
// empty queue always, else once for each item at the head, so that item waits for one such
// batch at most.
TEST(GlobalQueue, ABypassIsGrantedOnAnEmptyQueueAndOnceForEachItemAtTheHead) {
    global_queue<int> queue;
    EXPECT_TRUE(queue.claim_bypass());
    EXPECT_TRUE(queue.claim_bypass());
    queue.push(1);
    queue.push(2);
    EXPECT_TRUE(queue.claim_bypass());
    EXPECT_FALSE(queue.claim_bypass()) << "a second bypass of the same head item";
    int item = 0;
    ASSERT_TRUE(queue.pop(item));
    EXPECT_EQ(item, 1);
    EXPECT_TRUE(queue.claim_bypass()) << "a new head item";
    EXPECT_FALSE(queue.claim_bypass());
    ASSERT_TRUE(queue.pop(item));
    EXPECT_TRUE(queue.claim_bypass());
}

// Heads are told apart by their index, which goes on counting when the ring grows: an item
// claimed at the head stays claimed, and each later head is a new one.
TEST(GlobalQueue, HeadsAreToldApartAcrossTheRingGrowing) {
    global_queue<int> queue;
    int item = 0;
    for (int i = 0; i < 5; ++i) queue.push(i);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.pop(item));
    queue.push(100);
    ASSERT_TRUE(queue.claim_bypass());
    for (int i = 0; i < 3000; ++i) queue.push(i);  // past the first ring's 1024 slots
    EXPECT_FALSE(queue.claim_bypass()) << "the head item after growing is the one claimed before";
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.pop(item));
    EXPECT_EQ(item, 3);
    EXPECT_TRUE(queue.claim_bypass()) << "a new head item taken for the one claimed before the grow";
}

// The take of a worker whose bypass was refused: a share from the head first, then its own
// items kept aside (not queued) against the new head, once, or on a queue the share emptied.
TEST(GlobalQueue, AShareFromTheHeadComesFirstThenTheTakersOwnItemsPassTheNewHeadOnce) {
    global_queue<int> queue;
    for (int i = 1; i <= 6; ++i) queue.push(i);
    ASSERT_TRUE(queue.claim_bypass());  // another worker passed over item 1
    ASSERT_FALSE(queue.claim_bypass());
    const int mine[] = {10, 11};
    int out[32] = {};
    bool kept = false;
    // 6 queued, 3 sharers: 6 / 3 + 1 = 3 from the head.
    ASSERT_EQ(queue.pop_share_then_keep_or_push(mine, 2, out, 3, 32, kept), 3u);
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[2], 3);
    EXPECT_TRUE(kept);
    EXPECT_EQ(queue.size(), 3u) << "the taker's items were queued though it kept them";
    EXPECT_FALSE(queue.claim_bypass()) << "item 4 was passed over by the keep, and may not be again";
    // At most `max`, and a queue the share empties keeps the taker's items too.
    ASSERT_EQ(queue.pop_share_then_keep_or_push(mine, 2, out, 1, 32, kept), 3u);
    EXPECT_EQ(out[0], 4);
    EXPECT_TRUE(kept);
    EXPECT_TRUE(queue.empty());
    // Nothing of its own and nothing queued: nothing.
    EXPECT_EQ(queue.pop_share_then_keep_or_push(mine, 0, out, 1, 32, kept), 0u);
    EXPECT_FALSE(kept);
}

// --- The small task nodes' per-thread cache (src/pool/task_cache.cpp) --------------------------

// A block one thread frees is the next one it allocates, whoever allocated it first: a stream
// of items between two workers allocates nothing after its start.
TEST(TaskCache, ABlockFreedOnAThreadIsTheNextOneThatThreadAllocates) {
    void* from_main = contend::internal::allocate_small_task();
    void* again = nullptr;
    std::thread other([&] {
        contend::internal::free_small_task(from_main);
        EXPECT_EQ(contend::internal::this_thread_cached_small_tasks(), 1u);
        again = contend::internal::allocate_small_task();
        EXPECT_EQ(contend::internal::this_thread_cached_small_tasks(), 0u);
        contend::internal::free_small_task(again);
    });
    other.join();
    EXPECT_EQ(again, from_main);
}

// A thread keeps at most 128 blocks; the rest go back to operator delete, and so do the 128
// when it ends (LeakSanitizer, in the ASan build, finds any block left behind).
TEST(TaskCache, AThreadKeepsAtMost128BlocksAndGivesThemBackWhenItEnds) {
    std::thread t([] {
        std::vector<void*> blocks;
        for (int i = 0; i < 200; ++i) blocks.push_back(contend::internal::allocate_small_task());
        for (void* b : blocks) contend::internal::free_small_task(b);
        EXPECT_EQ(contend::internal::this_thread_cached_small_tasks(), 128u);
    });
    t.join();
}

namespace {
// A callable whose move throws once armed: make_task must not keep the node it took.
struct throws_when_moved {
    static inline bool armed = false;
    throws_when_moved() = default;
    throws_when_moved(const throws_when_moved&) = default;
    throws_when_moved(throws_when_moved&&) {
        if (armed) throw std::runtime_error("moved");
    }
    void operator()() {}
};
}  // namespace

TEST(TaskCache, ACallableThatThrowsAsItIsStoredLeavesItsBlockInTheCache) {
    std::thread t([] {
        contend::internal::free_small_task(contend::internal::allocate_small_task());
        ASSERT_EQ(contend::internal::this_thread_cached_small_tasks(), 1u);
        throws_when_moved::armed = true;
        EXPECT_THROW(contend::internal::make_task(throws_when_moved{}), std::runtime_error);
        throws_when_moved::armed = false;
        // Cached: the block it took went back. Under ASan (no cache for nodes): untouched.
        EXPECT_EQ(contend::internal::this_thread_cached_small_tasks(), 1u);
        // And a node that is made, run and freed goes back too.
        contend::internal::task_node* n = contend::internal::make_task(throws_when_moved{});
        n->run(n);
        EXPECT_GE(contend::internal::this_thread_cached_small_tasks(), 1u);
    });
    t.join();
    // Nodes too big or over-aligned for a block never come from the cache.
    struct big {
        char bytes[64];
        void operator()() {}
    };
    struct alignas(64) aligned {
        void operator()() {}
    };
    static_assert(!contend::internal::cached_task_node<contend::internal::task_impl<big>>);
    static_assert(!contend::internal::cached_task_node<contend::internal::task_impl<aligned>>);
}
