// Models of the thread pool's lock-free structures (src/pool/): the Chase-Lev deque's owner
// against thieves, the worker outbox's owner against takers, the global queue's batch take
// and the idle stack's push and remove against a waker. Each item is an int, recorded in a
// plain array when taken: model threads run one at a time, so the array needs no atomics,
// and every item must be taken exactly once.
#include <array>
#include <cstddef>

#include "contend/internal/atomic.hpp"
#include "model_support.hpp"
#include "pool/global_queue.hpp"
#include "pool/idle_stack.hpp"
#include "pool/outbox.hpp"
#include "pool/work_stealing_deque.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

constexpr int max_items = 4;
std::array<int, max_items + 1> taken{};  // taken[i]: how many times item i came out

void take(int item) {
    model::check(item >= 1 && item <= max_items, "a taken item is one that was put in");
    ++taken[static_cast<std::size_t>(item)];
}

void expect_each_taken_once(int items, const char* what) {
    for (int i = 1; i <= items; ++i) model::check(taken[static_cast<std::size_t>(i)] == 1, what);
}

// ---- The Chase-Lev deque (work_stealing_deque.hpp) ----

using deque_type = internal::work_stealing_deque<int>;
deque_type one_slot_deque(1);  // static: the same addresses in every execution
deque_type small_deque(2);  // grows at the third push unless a thief took one first

void steal_once(deque_type& d) {
    int item = 0;
    if (d.steal(item) == deque_type::steal_result::success) take(item);
}

void drain(deque_type& d) {
    int item = 0;
    while (d.pop(item)) take(item);
    model::check(d.empty(), "the deque is empty once its owner pops nothing");
}

// The race the deque's design is about: one item, the owner popping it while two thieves
// steal it. The owner's pop and a thief's steal both end in a CAS on top; one wins.
void one_item_pop_against_two_steals() {
    model::thread a([] { steal_once(one_slot_deque); });
    model::thread b([] { steal_once(one_slot_deque); });
    one_slot_deque.push(1);
    int item = 0;
    if (one_slot_deque.pop(item)) take(item);
    a.join();
    b.join();
    drain(one_slot_deque);
    expect_each_taken_once(1, "the one item is taken exactly once, by the owner or by one thief");
}

// Two pushes, two thieves started, a third push (a grow into four slots unless a thief took
// one first: the live items are copied while a thief may be reading the old buffer) and two
// pops (the second the last item when both thieves won) against the thieves' one steal each.
void pushes_with_a_grow_and_pops_against_two_thieves() {
    small_deque.push(1);
    small_deque.push(2);
    model::thread a([] { steal_once(small_deque); });
    model::thread b([] { steal_once(small_deque); });
    small_deque.push(3);
    for (int i = 0; i < 2; ++i) {
        int item = 0;
        if (small_deque.pop(item)) take(item);
    }
    a.join();
    b.join();
    drain(small_deque);
    expect_each_taken_once(3, "every item pushed is taken exactly once");
}

TEST(PoolDequeModel, OneItemIsTakenOnceByTheOwnerOrOneOfTwoThieves) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = 500}, one_item_pop_against_two_steals);
    expect_holds({.strategy = model::strategy_kind::random, .executions = 500}, one_item_pop_against_two_steals);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 2},
                 one_item_pop_against_two_steals);
}

TEST(PoolDequeModel, PushesThroughAGrowAndPopsAgainstTwoThievesTakeEachItemOnce) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = 500},
                 pushes_with_a_grow_and_pops_against_two_thieves);
    expect_holds({.strategy = model::strategy_kind::random, .executions = 500},
                 pushes_with_a_grow_and_pops_against_two_thieves);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = 2},
                 pushes_with_a_grow_and_pops_against_two_thieves);
}

// The owner takes the last item by reading top and writing top + 1: a thief's CAS between
// the two takes it too. It takes three switches at the right steps (the thief reads bottom
// before the owner's pop lowers it, the owner reads top, the thief's CAS, the owner's store),
// so the bounded search with one preemption cannot meet it and PCT with depth 3 missed it in
// 2,000 executions; random schedules find it within about a hundred.
TEST(PoolDequeModel, APopOfTheLastItemWithoutItsCasIsFoundAsAnItemTakenTwice) {
    expect_found("deque_pop_takes_last_by_load_and_store", one_item_pop_against_two_steals, 2000,
                 {model::strategy_kind::random});
}

// A steal's CAS split into a load and a store: two thieves both take the item at top (one
// preemption: a thief between its load and its store).
TEST(PoolDequeModel, AStealByLoadAndStoreIsFoundAsAnItemTakenTwice) {
    expect_found("deque_steal_by_load_and_store", pushes_with_a_grow_and_pops_against_two_thieves, 2000,
                 model_test::every_strategy);
}

}  // namespace
