#include "contend/condition_variable.hpp"

#include "model/mutation.hpp"

namespace contend {

void condition_variable::notify_one_slow() noexcept {
    parking_lot::unpark_one(this, [this](parking_lot::unpark_result r) -> std::intptr_t {
        // Under the bucket lock: no waiter can enqueue between this and the unpark.
        const bool more = r.may_have_more_threads && !CONTEND_MUTATION(condition_variable_notify_one_forgets_the_rest);
        has_waiters_.store(more, std::memory_order_relaxed);
        return 0;
    });
}

void condition_variable::notify_all_slow() noexcept {
    has_waiters_.store(false, std::memory_order_relaxed);
    parking_lot::unpark_all(this);
}

}  // namespace contend
