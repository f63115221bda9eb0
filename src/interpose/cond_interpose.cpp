// pthread_cond_*: a cond waited on with one of our mutexes (whichever lock they run on)
// runs on the contend::condition_variable in its first byte; others stay glibc's.
//
// Which one runs a cond is marked in the cond itself (glibc_layout.hpp: cond_ours_marker in
// __g1_orig_size), set by the first wait with one of our mutexes, under that mutex, and
// kept until pthread_cond_destroy or pthread_cond_init. The rules:
//  - a wait with our mutex marks the cond (unless glibc has waiters on it: then it is bound
//    to another mutex, which POSIX forbids, and the wait fails with EINVAL);
//  - a wait with a mutex glibc runs goes to glibc while the cond is unmarked; on a marked
//    cond it waits on contend's condition variable and releases and retakes the mutex with
//    glibc's functions, so that every waiter of a marked cond is where its signals go;
//  - signal and broadcast go to contend on a marked cond, else to glibc (glibc's on a cond
//    nobody waited on is a no-op, as contend's would be). A notifier that changed the
//    predicate under the mutex sees the marker, which the waiter wrote under that mutex;
//  - process-shared conds: glibc's, with a mutex glibc runs; a wait with one of ours fails
//    with EINVAL (see dispatch_wait). CONTEND_INTERPOSE_LOCK=glibc: glibc always.
//
// Cancellation (docs/interpose.md): a wait is a cancellation point, glibc's and ours alike.
// glibc cancels by a forced unwind (abi::__forced_unwind), which must pass through every frame
// here: nothing on a wait's path is noexcept, and nothing catches it without rethrowing (it
// is no std::exception; catching abi::__forced_unwind& by name binds a reference to no
// object, which UBSan reports). Our own waits act
// on a pending cancellation on entry, with the mutex held, and sleep as a cancellation point
// (parking_lot_cancellation.hpp); on the unwind the mutex is retaken before the program's
// cleanup handlers run, and the cond is notified once in case this waiter consumed a signal.
#include <pthread.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <type_traits>

#include "contend/internal/tsan.hpp"
#include "contend/synchronization_error.hpp"
#include "interpose/exports.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/glibc_layout.hpp"
#include "interpose/helgrind_notes.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/our_locks.hpp"
#include "interpose/profile.hpp"
#include "interpose/timespec.hpp"
#include "parking_lot_cancellation.hpp"
#include "platform/asan_stack.hpp"

using namespace contend::interpose;

namespace {

bool pshared(const pthread_cond_t* c) noexcept { return load_u32(c, cond_wrefs_offset) & cond_wrefs_pshared; }
bool marked(const pthread_cond_t* c) noexcept { return load_u32(c, cond_marker_offset) == cond_ours_marker; }

// Marks the cond as contend's, for a wait with one of our mutexes (held by the caller).
int claim(pthread_cond_t* c) noexcept {
    std::uint32_t* marker = u32_at(c, cond_marker_offset);
    std::uint32_t seen = __atomic_load_n(marker, __ATOMIC_ACQUIRE);
    if (seen == cond_ours_marker) return 0;
    if ((load_u32(c, cond_wrefs_offset) >> cond_wrefs_waiter_shift) != 0) return EINVAL;
    // A cond glibc ran before has its own counters in byte 0: start contend's from "no waiters".
    __atomic_store_n(reinterpret_cast<std::uint8_t*>(c), 0, __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(marker, &seen, cond_ours_marker, false, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
        return 0;
    return seen == cond_ours_marker ? 0 : EINVAL;
}

struct unlock_failed {
    int error;
};

// A mutex glibc runs, waited with on a marked cond: released and retaken with glibc's
// functions. A failed release (an error-checking mutex not held) fails the wait with its
// error before the thread sleeps; the retake's error (EOWNERDEAD of a robust mutex) is the
// wait's result.
struct glibc_lockable {
    pthread_mutex_t* m;
    int relock_error = 0;
    void unlock() {
        if (const int rc = glibc().mutex_unlock(m)) throw unlock_failed{rc};
    }
    void lock() noexcept { relock_error = glibc().mutex_lock(m); }
};

// One of our locks, as the condition variable releases and retakes it, with the profile's
// notes: a hold being timed ends at the release, and the retake counts as an acquisition
// (never as contended: its wait for the mutex cannot be told from its wait for the signal).
template <class Lock>
struct profiled_lockable {
    Lock& lock_;
    pthread_mutex_t* m;
    void unlock() {
        profile::releasing(m);
        lock_.unlock();
        profile::released();
    }
    void lock() {
        lock_.lock();
        profile::acquired(m);
    }
    // The condition variable's retake polls with this first, as it does unprofiled.
    bool try_lock() {
        if (!lock_.try_lock()) return false;
        profile::acquired(m);
        return true;
    }
    // A contend::mutex's waiters move onto its queue at a notify (condition_variable.hpp).
    contend::mutex* requeue_target() noexcept requires std::is_same_v<Lock, contend::mutex> { return &lock_; }
    void retaken_by_requeue() requires std::is_same_v<Lock, contend::mutex> { profile::acquired(m); }
};

// The lock a cancellable wait of ours is given: it knows whether the wait has released the
// lock, so that a cancellation's unwind (wherever the condition variable was when it came)
// retakes it before the program's cleanup handlers run, and only then.
template <class Lock>
struct cancellable_lockable {
    Lock& inner;
    bool released = false;
    void unlock() {
        inner.unlock();
        released = true;
    }
    void unlock_before_blocking() requires requires(Lock& l) { l.unlock_before_blocking(); }
    {
        inner.unlock_before_blocking();
        released = true;
    }
    void lock() {
        inner.lock();
        released = false;
    }
    // The condition variable's retake polls with this first (condition_variable.hpp).
    bool try_lock() requires requires(Lock& l) { l.try_lock(); }
    {
        if (!inner.try_lock()) return false;
        released = false;
        return true;
    }
    // Moved onto a contend::mutex's queue at a notify and woken with it (condition_variable.hpp).
    contend::mutex* requeue_target() noexcept
        requires(std::is_same_v<Lock, contend::mutex> || requires(Lock & l) { l.requeue_target(); }) {
        if constexpr (std::is_same_v<Lock, contend::mutex>) return &inner;
        else return inner.requeue_target();
    }
    void retaken_by_requeue() requires(std::is_same_v<Lock, contend::mutex> ||
                                       requires(Lock & l) { l.retaken_by_requeue(); }) {
        if constexpr (!std::is_same_v<Lock, contend::mutex>) inner.retaken_by_requeue();
        released = false;
    }
};
// Without try_lock on every wrapper, a woken waiter would queue for the mutex its notifier
// still holds instead of polling it (a cond ping-pong ran 2 to 3x glibc's time that way).
// Without requeue_target, a contend::mutex's waiter would be woken while its notifier still
// holds the mutex (condition_variable.hpp says what that costs).
static_assert(requires(cancellable_lockable<contend::mutex> & a,
                       cancellable_lockable<profiled_lockable<contend::mutex>>& b) {
    { a.requeue_target() } -> std::same_as<contend::mutex*>;
    { b.requeue_target() } -> std::same_as<contend::mutex*>;
    a.retaken_by_requeue();
    b.retaken_by_requeue();
});
static_assert(contend::internal::try_lockable<cancellable_lockable<contend::mutex>> &&
              contend::internal::try_lockable<cancellable_lockable<profiled_lockable<contend::mutex>>> &&
              contend::internal::try_lockable<cancellable_lockable<contend::ttas_lock>>);

// Runs wait(lock) as a cancellation point: a cancellation pending on entry acts at once, with
// the mutex still held; one during the sleep unwinds out of the parking lot; on its way out
// the mutex is retaken and the cond notified once, since this waiter may have been woken by a
// signal it will not consume (POSIX: a cancelled waiter must not swallow a signal that another
// waiter could have taken; a spurious wake-up is allowed).
template <class Lock, class Wait>
std::cv_status wait_cancellably(pthread_cond_t* c, Lock& lock, Wait&& wait) {
    pthread_testcancel();
    cancellable_lockable<Lock> tracked{lock};
    const contend::parking_lot::detail::cancellable_parks cancellable(&as_contend_cond(c));
    try {
        return wait(tracked);
    } catch (...) {  // a cancellation's forced unwind, or an error: rethrown either way
        if (tracked.released) tracked.lock();  // an error is returned with the mutex held too
        as_contend_cond(c).notify_one();
        throw;
    }
}

// A wait glibc runs with a kind-0 mutex (CONTEND_INTERPOSE_LOCK=glibc), with the same notes.
// glibc checks its arguments (EINVAL) before it releases the mutex. Not noexcept: glibc's
// wait is a cancellation point, and its forced unwind passes through here.
template <class F>
int glibc_wait(pthread_mutex_t* m, F&& wait) {
    if (!profiling() || mutex_kind(m) != 0) return wait();
    profile::releasing(m);
    profile::released();  // glibc releases the mutex inside; applied a moment early
    const int rc = wait();
    if (rc != EINVAL) profile::acquired(m);
    return rc;
}

// Under ThreadSanitizer a program's cond wait reaches us from TSan's interceptor, which marks
// the call blocking (thr->ignore_interceptors) for its whole length; TSan then records no
// synchronization for the atomics inside it, contend's parking lot's included, but still
// checks the plain accesses they order, and reports races that are not there. The wait tells
// TSan to ignore its accesses too; the mutex's release and retake around it TSan models
// itself, from the interceptor, and the order the parking lot passes on through this thread
// (a slot, a bucket) it learns from the parking lot's annotations (contend/internal/tsan.hpp).
// dispatch_wait holds the ignore for the wait's whole length (tsan_ignored_thread).

// Under helgrind (helgrind_notes.hpp), a wait on our condition variable with a mutex our lock
// runs, as helgrind's model of glibc's wait tells it: the mutex released before the wait, and
// held again after it, on every way out (a cancellation's unwind retakes it too). A mutex
// glibc runs, helgrind follows through glibc's functions, which release and retake it.
struct helgrind_wait {
    pthread_mutex_t* m;
    bool told;
    helgrind_wait(pthread_mutex_t* mutex, bool tell) noexcept : m(mutex), told(tell) {
        if (!told) return;
        helgrind::releasing(m);
        helgrind::released(m);
    }
    ~helgrind_wait() {
        if (told) helgrind::acquired(m);
    }
    helgrind_wait(const helgrind_wait&) = delete;
    helgrind_wait& operator=(const helgrind_wait&) = delete;
};

// Runs wait(lock) -> std::cv_status on contend's condition variable with the right lock.
// Not noexcept: a cancellation unwinds through it (see the top of this file).
template <class Glibc, class Wait>
int dispatch_wait(pthread_cond_t* c, pthread_mutex_t* m, Glibc&& to_glibc, Wait&& wait) {
    const int flags = current_choice_and_flags();
    if (choice_of(flags) == lock_choice::glibc) return glibc_wait(m, to_glibc);
    const bool tell = (flags & valgrind_flag) != 0;
    if (tell) {
        helgrind::unchecked(c);
        helgrind::unchecked(m);
    }
    if (pshared(c)) {
        // glibc's wait cannot release our lock, and contend's parking lot cannot hear a signal
        // from another process: a process-shared cond with one of our (private) mutexes fails
        // plainly instead of losing wake-ups.
        return mutex_kind(m) == 0 ? EINVAL : to_glibc();
    }
    // A wake-up that was no timeout comes after the signals before it (helgrind's model of
    // glibc's cond: helgrind_notes.hpp).
    auto result = [&](std::cv_status s) {
        if (s == std::cv_status::timeout) return ETIMEDOUT;
        if (tell) helgrind::woken(c);
        return 0;
    };
    [[maybe_unused]] const contend::internal::tsan_ignored_thread ignored;
    try {
        return visit_mutex(
            m,
            [&](auto& lock) {
                if (const int rc = claim(c)) return rc;
                const helgrind_wait told_helgrind{m, tell};
                if (flags & profile_flag) {
                    profiled_lockable<std::remove_reference_t<decltype(lock)>> noted{lock, m};
                    return result(wait_cancellably(c, noted, wait));
                }
                return result(wait_cancellably(c, lock, wait));
            },
            [&] {
                if (!marked(c)) return to_glibc();
                glibc_lockable lock{m};
                const int rc = result(wait_cancellably(c, lock, wait));
                return lock.relock_error != 0 ? lock.relock_error : rc;
            });
    } catch (const unlock_failed& e) {
        return e.error;
    } catch (const contend::synchronization_error&) {
        return EPERM;  // our mutex was not held
    } catch (const std::exception&) {
        return EAGAIN;  // no memory for this thread's first park
    } catch (...) {
        // A cancellation's forced unwind (glibc's wait or ours), no std::exception: it goes on
        // unwinding, into the program, with the stack below this frame cleared of what the
        // frames it skipped left poisoned (ASan builds: platform/asan_stack.hpp).
        contend::internal::unpoison_stack_below_here();
        throw;
    }
}

int timed_wait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
    return with_deadline(clock, abstime, [&](auto t) {
        return dispatch_wait(
            c, m, [&] { return glibc().cond_clockwait(c, m, clock, abstime); },
            [&](auto& lock) { return as_contend_cond(c).wait_until(lock, t); });
    });
}

// pthread_cond_signal (all: _broadcast) under helgrind, whose flag is never set under glibc.
int noted_notify(pthread_cond_t* c, bool all) noexcept {
    helgrind::unchecked(c);
    if (!marked(c)) return all ? glibc().cond_broadcast(c) : glibc().cond_signal(c);
    helgrind::notifying(c);
    if (all) as_contend_cond(c).notify_all();
    else as_contend_cond(c).notify_one();
    return 0;
}

}  // namespace

extern "C" {

// glibc's init zeroes the cond (the marker with it) and records the clock and pshared
// attributes in __wrefs, where the waits read them: nothing of ours to add.
CONTEND_INTERPOSE_EXPORT int pthread_cond_init(pthread_cond_t* c, const pthread_condattr_t* attr) {
    return glibc().cond_init(c, attr);
}

CONTEND_INTERPOSE_EXPORT int pthread_cond_destroy(pthread_cond_t* c) {
    if (telling_helgrind()) helgrind::unchecked(c);
    if (marked(c)) {
        // Nobody may wait on a cond being destroyed; unmarked, it is glibc's again.
        __atomic_store_n(reinterpret_cast<std::uint8_t*>(c), 0, __ATOMIC_RELAXED);
        __atomic_store_n(u32_at(c, cond_marker_offset), 0u, __ATOMIC_RELEASE);
    }
    return glibc().cond_destroy(c);
}

CONTEND_INTERPOSE_EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
    return dispatch_wait(
        c, m, [&] { return glibc().cond_wait(c, m); },
        [&](auto& lock) {
            as_contend_cond(c).wait(lock);
            return std::cv_status::no_timeout;
        });
}

CONTEND_INTERPOSE_EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* abstime) {
    if (telling_helgrind()) helgrind::unchecked(c);
    if (current_lock() == lock_choice::glibc || (!marked(c) && mutex_kind(m) != 0))
        return glibc_wait(m, [&] { return glibc().cond_timedwait(c, m, abstime); });
    if (!valid_nanoseconds(abstime)) return EINVAL;
    const bool monotonic = load_u32(c, cond_wrefs_offset) & cond_wrefs_monotonic;
    return timed_wait(c, m, monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME, abstime);
}

CONTEND_INTERPOSE_EXPORT int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                                    const timespec* abstime) {
    if (telling_helgrind()) helgrind::unchecked(c);
    if (current_lock() == lock_choice::glibc || (!marked(c) && mutex_kind(m) != 0))
        return glibc_wait(m, [&] { return glibc().cond_clockwait(c, m, clock, abstime); });
    if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return EINVAL;
    if (!valid_nanoseconds(abstime)) return EINVAL;
    return timed_wait(c, m, clock, abstime);
}

// Under helgrind (the flag comes with the lock choice, in the same load): the cond's bytes
// unchecked before they are read, and the notification noted before it is made.
CONTEND_INTERPOSE_EXPORT int pthread_cond_signal(pthread_cond_t* c) {
    const int flags = current_choice_and_flags();
    if (flags & valgrind_flag) [[unlikely]]
        return noted_notify(c, false);
    if (choice_of(flags) == lock_choice::glibc || !marked(c)) return glibc().cond_signal(c);
    as_contend_cond(c).notify_one();
    return 0;
}

CONTEND_INTERPOSE_EXPORT int pthread_cond_broadcast(pthread_cond_t* c) {
    const int flags = current_choice_and_flags();
    if (flags & valgrind_flag) [[unlikely]]
        return noted_notify(c, true);
    if (choice_of(flags) == lock_choice::glibc || !marked(c)) return glibc().cond_broadcast(c);
    as_contend_cond(c).notify_all();
    return 0;
}

}  // extern "C"
