// pthread_mutex_*: a mutex whose kind is 0 runs on the lock CONTEND_INTERPOSE_LOCK chose
// (contend::mutex by default), kept in its first bytes; every other mutex, and every mutex
// under CONTEND_INTERPOSE_LOCK=glibc, goes to glibc.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "interpose/exports.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/glibc_layout.hpp"
#include "interpose/helgrind_notes.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/no_throw.hpp"
#include "interpose/our_locks.hpp"
#include "interpose/profile.hpp"
#include "interpose/timespec.hpp"

using namespace contend::interpose;

namespace {

// A kind-0 mutex under our locks that glibc's own pthread_mutex_lock holds (it recorded an
// owner, which our locks never do): code bound to glibc, not to us, shares it with the
// program, typically a library loaded with dlopen(RTLD_DEEPBIND), whose own scope (libc
// among its dependencies) comes before the preloaded interposer. One mutex cannot run on
// two locks: glibc's waiters sleep on a futex that our unlock never wakes, and each side may
// think it holds the mutex. Stopping with the reason beats running on into a hang or a broken
// critical section. Checked where our side finds the mutex held (a lock that must wait, a
// trylock that fails): the fast paths read nothing more.
[[noreturn]] void refuse_glibc_held(const pthread_mutex_t* m, std::uint32_t owner) noexcept {
    char msg[512];
    const int n = std::snprintf(
        msg, sizeof msg,
        "libcontend_interpose: mutex %p is held by glibc's pthread_mutex_lock (owner thread %u), not by the "
        "interposer's lock: code bound to glibc's pthread functions shares it with the program (a library "
        "loaded with dlopen(..., RTLD_DEEPBIND)?). One mutex cannot run on two locks; stopping. Run such a "
        "program with CONTEND_INTERPOSE_LOCK=glibc (contend run --lock glibc)\n",
        static_cast<const void*>(m), owner);
    if (n > 0) (void)!::write(STDERR_FILENO, msg, std::min(static_cast<std::size_t>(n), sizeof msg - 1));
    std::abort();
}

// Our side found `m` held, on `lock`: refuse if glibc holds it (see refuse_glibc_held). A
// kind-0 mutex that glibc runs (the profiled calls under CONTEND_INTERPOSE_LOCK=glibc) has an
// owner by right.
template <class Lock>
void check_not_glibc_held(const Lock&, const pthread_mutex_t* m) noexcept {
    if constexpr (!std::is_same_v<Lock, glibc_normal_mutex>) {
        if (const std::uint32_t owner = glibc_owner(m)) [[unlikely]]
            refuse_glibc_held(m, owner);
    }
}

// What timed_lock returns for a mutex glibc runs (no errno value is negative).
constexpr int not_ours = -1;

template <class Lock>
int lock_until_deadline(Lock& lock, clockid_t clock, const timespec* abstime) noexcept {
    return no_throw(EAGAIN, [&] {
        return with_deadline(clock, abstime, [&](auto t) { return lock_until(lock, t) ? 0 : ETIMEDOUT; });
    });
}
int lock_until_deadline(glibc_normal_mutex& g, clockid_t clock, const timespec* abstime) noexcept {
    return glibc().mutex_clocklock(g.m, clock, abstime);
}

// The wait of an acquisition whose first try failed, timed for the profile when `site` (the
// program's call) is given: wait() returns 0 holding the mutex, or an error.
template <class Wait>
int wait_for(pthread_mutex_t* m, const void* site, Wait&& wait) noexcept {
    if (site == nullptr) return wait();
    profile::lock_record* r = profile::record_for(m, site);
    profile::take_stack(site);
    const std::uint64_t start = profile::ticks();
    const int rc = wait();
    const std::uint64_t waited = profile::ticks() - start;
    if (rc == 0) {
        profile::acquired(m);
        profile::contended(m, r, waited);
    } else if (rc == ETIMEDOUT) {
        profile::timed_out(r, waited);
    }
    return rc;
}

template <bool profiled>
int timed_lock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime, const void* site) noexcept {
    return visit_mutex<profiled>(
        m,
        [&](auto& lock) {
            // As glibc: the clock is checked first, the timeout only when the call has to wait.
            if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return EINVAL;
            if (lock.try_lock()) {
                if (profiled) profile::acquired(m);
                return 0;
            }
            check_not_glibc_held(lock, m);
            if (!valid_nanoseconds(abstime)) return EINVAL;
            return wait_for(m, site, [&] { return lock_until_deadline(lock, clock, abstime); });
        },
        [] { return not_ours; });
}

// Whether this call tells helgrind of `m` (lock_choice.hpp: valgrind_flag): a mutex our lock
// runs (kind 0; the flag is never set under glibc). glibc's own functions, which helgrind
// wraps, tell it of the others. The mutex's bytes are left unchecked before anything here
// reads them (helgrind_notes.hpp).
bool tells_helgrind(int c, pthread_mutex_t* m) noexcept {
    if ((c & valgrind_flag) == 0) return false;
    helgrind::unchecked(m);
    return mutex_kind(m) == 0;
}

int timed_lock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime, const void* site) noexcept {
    const int c = current_choice_and_flags();
    if ((c & noted_flags) == 0) [[likely]]
        return timed_lock<false>(m, clock, abstime, nullptr);
    const bool tell = tells_helgrind(c, m);
    if (tell) helgrind::acquiring(m, false);
    const int rc =
        (c & profile_flag) ? timed_lock<true>(m, clock, abstime, site) : timed_lock<false>(m, clock, abstime, nullptr);
    if (tell && rc == 0) helgrind::acquired(m);
    return rc;
}

// lock, trylock and unlock are always inlined into the pthread functions, their fast paths:
// with visit_mutex_as's case per lock, the compiler otherwise made lock a call of its own.
template <bool profiled>
[[gnu::always_inline]] inline int lock(lock_choice c, pthread_mutex_t* m, const void* site) noexcept {
    return visit_mutex_as<profiled>(
        c, m,
        [&](auto& lock) {
            if constexpr (profiled) {
                // Counted after the attempt (profile::acquired): a store before it would wait
                // for the CAS, a locked instruction that drains the store buffer.
                if (first_try(lock)) {
                    profile::acquired(m);
                    return 0;
                }
                check_not_glibc_held(lock, m);
                return wait_for(m, site, [&] {
                    return no_throw(EAGAIN, [&] {
                        lock_after_first_try(lock);
                        return 0;
                    });
                });
            } else {
                // As lock(): the first attempt, then the wait, with the check between.
                if (first_try(lock)) return 0;
                check_not_glibc_held(lock, m);
                return no_throw(EAGAIN, [&] {
                    lock_after_first_try(lock);
                    return 0;
                });
            }
        },
        [m] { return glibc().mutex_lock(m); });
}

// The lock call's noted path (lock_choice.hpp: noted_flags): the profile's counts, helgrind's
// notes, or both. Out of line (as noted_trylock and noted_unlock), so that what it keeps
// across its calls costs the fast path nothing: inlined, it made pthread_mutex_unlock save
// three more registers on every call.
[[gnu::noinline]] int noted_lock(int c, pthread_mutex_t* m, const void* site) noexcept {
    const bool tell = tells_helgrind(c, m);
    if (tell) helgrind::acquiring(m, false);
    const int rc = (c & profile_flag) ? lock<true>(choice_of(c), m, site) : lock<false>(choice_of(c), m, nullptr);
    if (tell && rc == 0) helgrind::acquired(m);
    return rc;
}

template <bool profiled>
[[gnu::always_inline]] inline int trylock(lock_choice c, pthread_mutex_t* m) noexcept {
    return visit_mutex_as<profiled>(
        c, m,
        [m](auto& lock) {
            if (!lock.try_lock()) {
                check_not_glibc_held(lock, m);
                if (profiled) profile::trylock_busy();
                return EBUSY;
            }
            if (profiled) profile::acquired(m);
            return 0;
        },
        [m] { return glibc().mutex_trylock(m); });
}

[[gnu::noinline]] int noted_trylock(int c, pthread_mutex_t* m) noexcept {
    const bool tell = tells_helgrind(c, m);
    if (tell) helgrind::acquiring(m, true);
    const int rc = (c & profile_flag) ? trylock<true>(choice_of(c), m) : trylock<false>(choice_of(c), m);
    if (tell && rc == 0) helgrind::acquired(m);
    return rc;
}

// fork(): a ticket lock the forking thread held while others waited (the pthread_atfork
// pattern: the prepare handler locks, the child's handler unlocks) carries in the child the
// tickets of waiters that do not exist there; a plain unlock would serve the next of them,
// and the mutex would stay locked for good. In a child that still has one thread, every
// ticket but the holder's is such a ghost, so the unlock serves them all. Whether the child
// still has one thread is read from /proc once an unlock finds tickets waiting; once it has
// more, the question is never asked again (a ticket then may be a live thread's).
std::atomic<bool> fork_child_may_be_alone{false};
[[maybe_unused]] const bool fork_handler_registered =
    pthread_atfork(nullptr, nullptr, [] { fork_child_may_be_alone.store(true, std::memory_order_relaxed); }) == 0;

// The "Threads:" line of /proc/self/status, read without allocating; 0 if unreadable.
long threads_in_process() noexcept {
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[4096];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) return 0;
    text[n] = '\0';
    const char* line = std::strstr(text, "\nThreads:");
    return line ? std::strtol(line + 9, nullptr, 10) : 0;
}

bool alone_in_fork_child() noexcept {
    if (!fork_child_may_be_alone.load(std::memory_order_relaxed)) return false;
    if (threads_in_process() == 1) return true;
    fork_child_may_be_alone.store(false, std::memory_order_relaxed);
    return false;
}

template <bool profiled>
[[gnu::always_inline]] inline int unlock(lock_choice c, pthread_mutex_t* m) noexcept {
    return visit_mutex_as<profiled>(
        c, m,
        [m](auto& lock) {
            if constexpr (std::is_same_v<std::remove_reference_t<decltype(lock)>, contend::ticket_lock>) {
                if (lock.queue_length() > 1 && alone_in_fork_child()) [[unlikely]] {
                    if (profiled) profile::releasing(m);
                    lock.unlock_abandoning_waiters();
                    if (profiled) profile::released();
                    return 0;
                }
            }
            if (profiled) profile::releasing(m);
            const int rc = no_throw(EPERM, [&] {
                lock.unlock();
                return 0;
            });
            if (profiled) profile::released();
            return rc;
        },
        [m] { return glibc().mutex_unlock(m); });
}

// The unlock call's noted path, as noted_lock's. Helgrind hears of the release before it
// happens, as its own wrapper of glibc's unlock tells it.
[[gnu::noinline]] int noted_unlock(int c, pthread_mutex_t* m) noexcept {
    const bool tell = tells_helgrind(c, m);
    if (tell) helgrind::releasing(m);
    const int rc = (c & profile_flag) ? unlock<true>(choice_of(c), m) : unlock<false>(choice_of(c), m);
    if (tell) helgrind::released(m);
    return rc;
}

int destroy(pthread_mutex_t* m) {
    return visit_mutex(
        m,
        [m](auto& lock) {
            if (is_held(lock)) return EBUSY;  // glibc says EBUSY for a held mutex too
            // As glibc's destroy (mark_destroyed): later use fails with EINVAL, from glibc.
            mark_destroyed(m);
            return 0;
        },
        [m] { return glibc().mutex_destroy(m); });
}

}  // namespace

extern "C" {

CONTEND_INTERPOSE_EXPORT int pthread_mutex_init(pthread_mutex_t* m, const pthread_mutexattr_t* attr) {
    // A mutex initialized again (or new memory where a mutex was) may still point to a record.
    if (profiling()) profile::retire(m);
    if (current_lock() == lock_choice::glibc) return glibc().mutex_init(m, attr);
    if (attr == nullptr) {
        // What glibc's init does for no attributes, without the call (helgrind hears of an
        // init with attributes from glibc's).
        const bool tell = telling_helgrind();
        if (tell) helgrind::unchecked(m);
        std::memset(static_cast<void*>(m), 0, sizeof *m);
        if (tell) helgrind::initialized(m);
        return 0;
    }
    // glibc validates the attributes and writes __kind; a kind-0 result is then ours, and
    // glibc has zeroed our bytes already. Cleared again, so that does not depend on it.
    const int rc = glibc().mutex_init(m, attr);
    if (rc == 0 && mutex_kind(m) == 0) clear_lock_words(m);
    return rc;
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_destroy(pthread_mutex_t* m) {
    // As helgrind's wrapper of glibc's destroy: told first, held or not.
    if (tells_helgrind(current_choice_and_flags(), m)) helgrind::destroying(m);
    if (profiling() && mutex_kind(m) == 0) {
        // Its record takes what the mutex still counts, under any lock choice (glibc's
        // destroy leaves __list as it is).
        const int rc = destroy(m);
        if (rc == 0) profile::retire(m);
        return rc;
    }
    return destroy(m);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
    const int c = current_choice_and_flags();
    if (c & noted_flags) [[unlikely]]
        return noted_lock(c, m, __builtin_return_address(0));
    return lock<false>(choice_of(c), m, nullptr);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_trylock(pthread_mutex_t* m) {
    const int c = current_choice_and_flags();
    if (c & noted_flags) [[unlikely]]
        return noted_trylock(c, m);
    return trylock<false>(choice_of(c), m);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* abstime) {
    const int rc = timed_lock(m, CLOCK_REALTIME, abstime, __builtin_return_address(0));
    return rc != not_ours ? rc : glibc().mutex_timedlock(m, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
    const int rc = timed_lock(m, clock, abstime, __builtin_return_address(0));
    return rc != not_ours ? rc : glibc().mutex_clocklock(m, clock, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) {
    const int c = current_choice_and_flags();
    if (c & noted_flags) [[unlikely]]
        return noted_unlock(c, m);
    return unlock<false>(choice_of(c), m);
}

}  // extern "C"
