#include "contend/internal/word_lock.hpp"

#include "contend/cpu_relax.hpp"
#include "platform/wait.hpp"

namespace contend::internal {

namespace {
// A bucket lock is held for tens of nanoseconds, so a waiter that spins for about as long
// as one cross-core cache transfer round trip (a few hundred ns) usually gets it without
// a syscall. 40 probes follows WTF's spinLimit for its own locks.
constexpr int spin_probes = 40;
}  // namespace

void word_lock::lock_slow() noexcept {
    for (int i = 0; i < spin_probes; ++i) {
        std::uint32_t s = state_.load(std::memory_order_relaxed);
        if (s == 0 && state_.compare_exchange_weak(s, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
        if (s == 2) break;  // others already sleep: do not jump the queue by spinning
        cpu_relax();
    }
    // Mark "held, maybe waited on" and sleep until we take it from free.
    while (state_.exchange(2, std::memory_order_acquire) != 0) wait_on_address(state_, 2, no_deadline);
}

void word_lock::unlock_slow() noexcept { wake_one(state_); }

}  // namespace contend::internal
