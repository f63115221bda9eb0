// The hold suite: the counter suite's locks with 0, 1, 20 and 200 us of work inside the
// lock, where a spin lock must lose to a parking one.
#include "suites/locks.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {

suite make_hold_suite() {
    suite s{"hold",
            "the lock contenders with 0, 1, 20 and 200 us of work inside the lock: throughput and CPU per "
            "acquisition, where a spin lock must lose to a parking one",
            {},
            {4}};
    append_lock_contenders(s.contenders, lock_use::hold);
    return s;
}

}  // namespace contend::lab
