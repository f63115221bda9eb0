// Out-of-line pieces of the spin-lock family: the calls into the OS.
#include "contend/spin_lock.hpp"

#include <sched.h>

#include <ctime>
#include <string>

namespace contend::internal {

void throw_not_locked(const char* type) {
    throw synchronization_error(std::string("contend::") + type + "::unlock: the lock is not held");
}

void sleep_one_nanosecond() noexcept {
    // A request, not a promise: the kernel sleeps for at least the thread's timer slack.
    const timespec request{0, 1};
    nanosleep(&request, nullptr);
}

void thread_yield() noexcept { sched_yield(); }

}  // namespace contend::internal
