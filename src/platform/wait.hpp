// The OS wait backend: block on a 32-bit word until it changes, or until a deadline.
// One interface, one file per implementation (wait_futex.cpp, wait_portable.cpp); which file
// is compiled is decided in one place, CMakeLists.txt (option CONTEND_WAIT_BACKEND).
//
// Contract (futex-like): wait_on_address(word, expected, deadline) returns at once if
// word != expected; otherwise it sleeps until woken, until the deadline, or spuriously.
// Callers always re-check the word in a loop. wake_one/wake_all wake threads blocked on
// that exact address; they never dereference it, so waking an address whose owner has
// already moved on is harmless.
#pragma once

#include <atomic>
#include <cstdint>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/wait_backend.hpp"

namespace contend::internal {

enum class wait_status { woken_or_changed, timed_out };

wait_status wait_on_address(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                            deadline until) noexcept;
// As wait_on_address, and a POSIX cancellation point (for the interposer's pthread_cond_wait,
// docs/interpose.md, "Cancellation"): a pthread_cancel pending at the call, or arriving while
// the thread sleeps, unwinds the thread from inside this call (glibc's forced unwind,
// abi::__forced_unwind), so it is not noexcept and its caller must undo what it set up. The
// futex backend sleeps with the asynchronous cancel type for the syscall alone, as glibc's
// own cancellable syscalls did; the other backends sleep without cancellation.
wait_status wait_on_address_cancellable(const internal::atomic<std::uint32_t>& word, std::uint32_t expected,
                                        deadline until);
void wake_one(const internal::atomic<std::uint32_t>& word) noexcept;
void wake_all(const internal::atomic<std::uint32_t>& word) noexcept;

// Which file was compiled in: contend::wait_backend_name() (contend/wait_backend.hpp), defined
// in that file. The internal spelling stays for code not yet moved to the public header (the lab).
using contend::wait_backend_name;

}  // namespace contend::internal
