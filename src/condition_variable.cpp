#include "contend/condition_variable.hpp"

namespace contend {

void condition_variable::notify_one_slow() noexcept {
    parking_lot::unpark_one(this, [this](parking_lot::unpark_result r) -> std::intptr_t {
        // Under the bucket lock: no waiter can enqueue between this and the unpark.
        has_waiters_.store(r.may_have_more_threads, std::memory_order_relaxed);
        return 0;
    });
}

void condition_variable::notify_all_slow() noexcept {
    has_waiters_.store(false, std::memory_order_relaxed);
    parking_lot::unpark_all(this);
}

}  // namespace contend
