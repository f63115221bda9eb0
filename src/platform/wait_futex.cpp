// Linux futex backend. FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout, which
// is what std::chrono::steady_clock reads on Linux, so a deadline never drifts across
// spurious wake-ups.
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

#include "contend/internal/atomic.hpp"
#include "platform/wait.hpp"

namespace contend::internal {
namespace {

long futex(const internal::atomic<std::uint32_t>& word, int op, std::uint32_t val, const timespec* ts,
           std::uint32_t bitset) noexcept {
    // The kernel reads the word; it never writes it.
    auto* address = const_cast<std::uint32_t*>(reinterpret_cast<const std::uint32_t*>(&word));
    return syscall(SYS_futex, address, op | FUTEX_PRIVATE_FLAG, val, ts, nullptr, bitset);
}

timespec to_timespec(deadline until) noexcept {
    const auto since_epoch = until.time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(secs.count());
    ts.tv_nsec = static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs).count());
    return ts;
}

// The futex wait with the asynchronous cancel type for the syscall alone. Setting the type
// acts on a cancellation already pending (glibc's pthread_setcanceltype tests for one), and
// SIGCANCEL arriving during the sleep unwinds from the signal handler through syscall(). So
// between the two calls nothing may run that cannot be abandoned at any instruction, and this
// function is neither noexcept nor has anything to clean up (no landing pad the asynchronous
// unwind could land beside): the unwinder walks it by its CFI alone. Not inlined, so that
// stays true whatever its caller holds. Not instrumented by AddressSanitizer (nor is
// wait_on_address_cancellable, the other frame that unwind skips): an instrumented frame
// poisons the redzones of its addressable locals (old_type here, the timespec there) and
// unpoisons them on return, which a cancellation's unwind never makes, so the poison stayed
// on the stack below the catching frame, and ASan's own __asan_handle_no_return, at the
// rethrow, failed a CHECK on it (its sigaltstack interceptor found its local poisoned:
// interpose/cancel_in_cond_wait under ASan, once the parking lot's code had moved).
[[gnu::noinline, gnu::no_sanitize_address]] long cancellable_futex_wait(std::uint32_t* address, std::uint32_t expected,
                                                                        const timespec* ts) {
    int old_type = PTHREAD_CANCEL_DEFERRED;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old_type);
    const long rc = syscall(SYS_futex, address, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, ts, nullptr,
                            FUTEX_BITSET_MATCH_ANY);
    const int error = errno;
    pthread_setcanceltype(old_type, nullptr);
    errno = error;
    return rc;
}

static_assert(sizeof(internal::atomic<std::uint32_t>) == sizeof(std::uint32_t));
static_assert(std::is_same_v<clock, std::chrono::steady_clock>);

}  // namespace

wait_status wait_on_address(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                            deadline until) noexcept {
    if (until == no_deadline) {
        futex(word, FUTEX_WAIT_BITSET, expected, nullptr, FUTEX_BITSET_MATCH_ANY);
        return wait_status::woken_or_changed;
    }
    const timespec ts = to_timespec(until);
    if (futex(word, FUTEX_WAIT_BITSET, expected, &ts, FUTEX_BITSET_MATCH_ANY) == -1 && errno == ETIMEDOUT)
        return wait_status::timed_out;
    return wait_status::woken_or_changed;
}

// Not instrumented by AddressSanitizer: see cancellable_futex_wait.
[[gnu::no_sanitize_address]] wait_status wait_on_address_cancellable(const internal::atomic<std::uint32_t>& word,
                                                                     std::uint32_t expected, deadline until) {
    auto* address = const_cast<std::uint32_t*>(reinterpret_cast<const std::uint32_t*>(&word));
    if (until == no_deadline) {
        cancellable_futex_wait(address, expected, nullptr);
        return wait_status::woken_or_changed;
    }
    const timespec ts = to_timespec(until);
    if (cancellable_futex_wait(address, expected, &ts) == -1 && errno == ETIMEDOUT) return wait_status::timed_out;
    return wait_status::woken_or_changed;
}

void wake_one(const internal::atomic<std::uint32_t>& word) noexcept { futex(word, FUTEX_WAKE, 1, nullptr, 0); }

void wake_all(const internal::atomic<std::uint32_t>& word) noexcept { futex(word, FUTEX_WAKE, INT_MAX, nullptr, 0); }

}  // namespace contend::internal

const char* contend::wait_backend_name() noexcept { return "futex"; }
