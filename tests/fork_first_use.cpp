// fork_first_use: a fork() taken while another thread is building one of the library's
// values built on first use (a calibration, a pool) leaves the child able to use them.
// With a function-local static, the child inherited a guard marked "being initialized" by a
// thread it does not have, and its first contended lock() waited on it for good (the
// interposer's fork test hung that way on a loaded VM: every thread of the child in
// __cxa_guard_acquire under yield_interval()).
//
// A program of its own, not a GoogleTest case: the values must be unbuilt when it starts,
// and a gtest program may have built them in an earlier test. The calibration is held in
// the middle by this program's own sched_yield(), which the library's calls reach (the
// executable's definition comes first), so the fork lands inside it every time.
//
// Every wait is bounded: the child by alarm() and by the parent's deadline for it. Prints
// one "ok" line per case; on a failure "FAIL <why>" and exits 1.
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "platform/first_use.hpp"
#include "platform/spin_wait.hpp"

namespace {

std::atomic<bool> hold_yields{false};  // the next sched_yield of this process waits
std::atomic<bool> held{false};  // a thread is waiting in one now

[[noreturn]] void fail(const char* why, long value = 0) {
    std::printf("FAIL %s (%ld)\n", why, value);
    std::fflush(stdout);
    std::_Exit(1);
}

// Holds the calling thread while hold_yields is set (at most 30 s).
void wait_while_held() {
    held.store(true);
    for (int ms = 0; hold_yields.load() && ms < 30'000; ++ms) usleep(1000);
}

// Forks while `builder` is inside a first use (held by wait_while_held), and runs `in_child`
// in the child, which must return within 10 s.
template <class Start, class InChild>
void fork_during_first_use(const char* what, Start builder, InChild in_child) {
    hold_yields.store(true);
    held.store(false);
    std::thread t(builder);
    for (int ms = 0; !held.load(); ++ms) {
        if (ms > 10'000) fail("the builder never reached its first use");
        usleep(1000);
    }
    const pid_t pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
        hold_yields.store(false);  // this child's own yields go through
        alarm(10);
        in_child();
        _exit(0);
    }
    int status = 0;
    pid_t done = 0;
    for (int ms = 0; (done = waitpid(pid, &status, WNOHANG)) == 0 && ms < 20'000; ms += 5) usleep(5000);
    hold_yields.store(false);
    t.join();
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail("the child did not finish in 20 s");
    }
    if (WIFSIGNALED(status)) {
        std::printf("FAIL %s: the child waited for a first use its parent's thread had begun (signal %d, %s)\n", what,
                    WTERMSIG(status), WTERMSIG(status) == SIGALRM ? "SIGALRM: it hung" : "");
        std::fflush(stdout);
        std::_Exit(1);
    }
    if (WEXITSTATUS(status) != 0) fail("the child exited with", WEXITSTATUS(status));
    std::printf("ok %s\n", what);
    std::fflush(stdout);
}

// A value and an object built on first use, whose builders a test can hold.
contend::internal::first_use_value<long> value;
struct object {
    object() {
        if (hold_yields.load()) wait_while_held();
    }
    long answer = 42;
};
contend::internal::first_use_object<object> one_object;

}  // namespace

// The library's sched_yield calls land here (see the top).
extern "C" int sched_yield() noexcept {
    if (hold_yields.load()) wait_while_held();
    return static_cast<int>(syscall(SYS_sched_yield));
}

int main() {
    alarm(120);
    // The calibration a contended lock() reaches first (mutex::poll_sparse, the pipe's and
    // the pool's polls): it times sched_yield().
    fork_during_first_use(
        "fork: the child calibrates yield_interval() while its parent's thread was doing it",
        [] { (void)contend::internal::yield_interval(); },
        [] {
            const auto interval = contend::internal::yield_interval();
            if (interval < std::chrono::microseconds(1) || interval > std::chrono::microseconds(50)) _exit(4);
        });
    fork_during_first_use(
        "fork: the child builds a first_use_value its parent's thread was building",
        [] {
            (void)value.get([] {
                wait_while_held();
                return 7L;
            });
        },
        [] {
            if (value.get([] { return 9L; }) != 9) _exit(4);  // the parent's never got published here
        });
    fork_during_first_use(
        "fork: the child builds a first_use_object its parent's thread was building", [] { (void)one_object.get(); },
        [] {
            if (one_object.get().answer != 42) _exit(4);
        });
    // In the parent both builders finished: one value, one object, for every caller.
    if (value.get([] { return 8L; }) != 7) fail("the parent's value is not the one its builder published");
    if (&one_object.get() != &one_object.get()) fail("two objects");
    return 0;
}
