// The parking lot's bucket lock, and the queue lock of the async mutex and semaphore.
// Internal. It cannot use the parking lot (it guards it), so it waits on its own word
// through the OS wait backend: the three-state lock of Drepper's "Futexes Are Tricky" (0
// free, 1 held, 2 held and maybe waited on), after a short spin, because either lock is only
// ever held for a few dozen instructions.
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/tsan.hpp"

namespace contend::internal {

class word_lock {
public:
    void lock() noexcept {
        std::uint32_t expected = 0;
        if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
            [[unlikely]]
            lock_slow();
        tsan_acquired(&state_);
    }

    void unlock() noexcept {
        tsan_releasing(&state_);
        if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]]
            unlock_slow();
    }

    // In a fork() child, where whoever held or waited for the lock does not exist: free.
    void reset_after_fork() noexcept { state_.store(0, std::memory_order_relaxed); }

private:
    void lock_slow() noexcept;
    void unlock_slow() noexcept;

    internal::atomic<std::uint32_t> state_{0};
};

}  // namespace contend::internal
