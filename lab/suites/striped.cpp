// The striped suite: many locks. Every lock contender as a table of 1 to 65,536 (lock,
// counter) stripes, each operation on a stripe picked at random. Real programs hold
// thousands of mutexes (a striped hash table, one per connection or per object): with a
// few stripes and more workers than CPUs, holders are preempted while others want their
// stripe; with many, acquisitions are nearly uncontended and the lock's size and cache
// footprint count.
#include "suites/locks.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {

suite make_striped_suite() {
    suite s{"striped",
            "many locks: each worker increments the counter of a stripe picked at random (1 to 65,536 stripes) "
            "under that stripe's lock",
            {},
            {2, 8, 64}};
    append_lock_contenders(s.contenders, lock_use::striped);
    return s;
}

}  // namespace contend::lab
