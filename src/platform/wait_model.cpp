// The model-checking build's wait backend (docs/design/model-checking.md): a wait blocks the
// calling model thread in the scheduler, a wake makes waiters runnable again. Outside a model
// execution (static initialization) a wait polls with sched_yield, which nothing there needs.
#include <sched.h>

#include "model/scheduler.hpp"
#include "platform/wait.hpp"

namespace contend::internal {
namespace {

bool still_blocks(const void* word, std::uint32_t expected) {
    return static_cast<const internal::atomic<std::uint32_t>*>(word)->unscheduled_load() == expected;
}

}  // namespace

wait_status wait_on_address(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                            deadline until) noexcept {
    if (!model::hooks::in_execution()) {
        while (word.unscheduled_load() == expected) {
            if (clock::now() >= until) return wait_status::timed_out;
            sched_yield();
        }
        return wait_status::woken_or_changed;
    }
    return model::hooks::wait(&word, still_blocks, expected, until) ? wait_status::timed_out
                                                                    : wait_status::woken_or_changed;
}

// The models know no thread cancellation.
wait_status wait_on_address_cancellable(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                                        deadline until) {
    return wait_on_address(word, expected, until);
}

void wake_one(const internal::atomic<std::uint32_t>& word) noexcept {
    if (model::hooks::in_execution()) model::hooks::wake(&word, false);
}

void wake_all(const internal::atomic<std::uint32_t>& word) noexcept {
    if (model::hooks::in_execution()) model::hooks::wake(&word, true);
}

}  // namespace contend::internal

const char* contend::wait_backend_name() noexcept { return "model"; }
