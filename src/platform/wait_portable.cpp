// Portable backend: a striped table of mutex + condition variable, keyed by address.
// Used where there is no futex, and forced in tests (CONTEND_WAIT_BACKEND=portable) so the
// lock algorithms are proven not to depend on futex quirks.
//
// Why no lost wake-up: a waker changes the word before calling wake_*, and wake_* takes
// the stripe's mutex; a waiter checks the word while holding that same mutex and only
// then sleeps on the condition variable, which releases the mutex atomically.
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "contend/cache_padded.hpp"
#include "contend/internal/atomic.hpp"
#include "platform/wait.hpp"

namespace contend::internal {
namespace {

struct stripe {
    std::mutex lock;
    std::condition_variable changed;
};

// 64 stripes: enough that unrelated waiters rarely share one (sharing only costs a
// spurious wake-up, since each stripe wakes all its waiters).
constexpr std::size_t stripe_count = 64;

// Never destroyed: a thread may still wait here while the process exits (a sweeper, a pool
// worker of a pool that is never destroyed), and destroying a condition variable with a
// waiter blocks the exiting thread for good (glibc's pthread_cond_destroy waits for it).
union never_destroyed_stripes {
    cache_padded<stripe> at[stripe_count];
    never_destroyed_stripes() : at() {}
    ~never_destroyed_stripes() {}
};
never_destroyed_stripes stripes;

stripe& stripe_for(const void* address) noexcept {
    auto bits = reinterpret_cast<std::uintptr_t>(address);
    bits ^= bits >> 17;
    bits *= 0x9E3779B97F4A7C15ull;
    return stripes.at[(bits >> 58) % stripe_count].value;
}

}  // namespace

wait_status wait_on_address(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                            deadline until) noexcept {
    stripe& s = stripe_for(&word);
    std::unique_lock guard(s.lock);
    if (word.load(std::memory_order_acquire) != expected) return wait_status::woken_or_changed;
    if (until == no_deadline) {
        s.changed.wait(guard);
        return wait_status::woken_or_changed;
    }
    return s.changed.wait_until(guard, until) == std::cv_status::timeout ? wait_status::timed_out
                                                                         : wait_status::woken_or_changed;
}

// No cancellable sleep here: a waiter is cancelled at its next cancellation point instead.
wait_status wait_on_address_cancellable(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                                        deadline until) {
    return wait_on_address(word, expected, until);
}

void wake_one(const internal::atomic<std::uint32_t>& word) noexcept {
    // A stripe is shared by many addresses, so waking "one" could wake the wrong thread:
    // wake them all and let the others re-check their own words.
    wake_all(word);
}

void wake_all(const internal::atomic<std::uint32_t>& word) noexcept {
    stripe& s = stripe_for(&word);
    { std::lock_guard guard(s.lock); }
    s.changed.notify_all();
}

}  // namespace contend::internal

const char* contend::wait_backend_name() noexcept { return "portable"; }
