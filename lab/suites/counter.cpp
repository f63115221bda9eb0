// The counter suite, the main table of the sleeping-spinlock study: direct atomics, CAS loops, the spin-lock
// family, the platform mutexes and contend's own, each incrementing one shared 64-bit
// counter.
#include "suites/locks.hpp"
#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {

suite make_counter_suite() {
    suite s{"counter",
            "the main table of the sleeping-spinlock study: every contender increments one shared 64-bit counter",
            {
                atomic_contender<fetch_add_relaxed>("fetch_add_relaxed", "atomic fetch_add, relaxed"),
                atomic_contender<fetch_add_seq_cst>("fetch_add_seq_cst", "atomic fetch_add, seq_cst"),
                atomic_contender<cas_weak_loop>("cas_weak", "weak compare-exchange loop"),
                atomic_contender<cas_strong_loop>("cas_strong", "strong compare-exchange loop"),
                atomic_contender<cas_backoff_sleep>("cas_backoff", "strong CAS, 1 ns nanosleep after a failure"),
            },
            {1, 2, 4, 16, 64}};
    append_lock_contenders(s.contenders, lock_use::counter);
    return s;
}

}  // namespace contend::lab
