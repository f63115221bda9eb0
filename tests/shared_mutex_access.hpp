// Test access to contend::shared_mutex's judgement of exclusive reads (shared_mutex.hpp,
// "Exclusive reads"): the unit tests, the torture and the models pin a lock's reads exclusive,
// so that they reach those paths whatever the timing, and look at who holds the writer's byte.
#pragma once

#include "contend/internal/reader_slots.hpp"
#include "contend/shared_mutex.hpp"

namespace contend::internal {

struct shared_mutex_access {
    // From now on the lock's reads are taken exclusively, whatever its sampled reads vote.
    static void pin_exclusive_reads(shared_mutex& m) {
        m.read_score_.store(shared_mutex::exclusive_read_pinned, std::memory_order_relaxed);
    }
    // Back to the judgement, starting from shared reads.
    static void unpin(shared_mutex& m) { m.read_score_.store(0, std::memory_order_relaxed); }
    // The calling thread's next read of `m` tries the exclusive path at once (as it would
    // after its next sampled read of a lock whose reads are exclusive).
    static void hint_exclusive(const shared_mutex& m) {
        reader_row_for_read()->slot_for(&m).store(reader_row::exclusive_hint(), std::memory_order_relaxed);
    }
    // A reader holds the lock in the writer's byte.
    static bool held_by_an_exclusive_reader(const shared_mutex& m) {
        return (m.state_.load(std::memory_order_relaxed) & shared_mutex::exclusive_read_bit) != 0;
    }
};

}  // namespace contend::internal
