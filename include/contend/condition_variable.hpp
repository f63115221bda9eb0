// contend::condition_variable: wait for a condition under any BasicLockable
// (std::unique_lock<contend::mutex> first of all), built on the parking lot.
//
// One byte of state: whether threads may be waiting, so notify with no waiters costs one
// load. A waiter enqueues itself in the parking lot under the condition's address
// *before* it releases the lock (parking_lot's before_sleep), so a notify issued after
// the notifier took the lock cannot miss it: no lost wake-ups, whether or not the
// notifier holds the lock while it notifies.
//
// Costs: when the lock is a contend::mutex (itself or under a std::unique_lock) that is held
// when notify_one runs, the waiter is not woken: it moves to the mutex's queue (parking_lot's
// unpark_requeue_one), and the unlock wakes it with the mutex to take, one wake-up in all; a
// waiter woken while its notifier still held the mutex would only find it held (on a 2-CPU
// machine it mostly preempts the notifier to find that out). That notify_one takes a second
// bucket lock and registers the waiter with the mutex. Where the mutex's waiter slot has gone
// idle, that registration would need a process-wide barrier under the bucket locks: that
// notify_one wakes the waiter instead and pays the barrier (as a contended lock() does) after
// releasing them, so the next one moves.
// A waiter, once queued and its lock released, watches for its notify for up to 8 us
// (yielding its CPU to a notifier that shares it) before it sleeps: a notify within that time
// costs no sleep and no wake-up, which across CPUs is most of a hand-off's time; a longer
// wait costs those 8 us of CPU.
// Other waiters are woken: one retakes its lock with try_lock; if that fails, it yields its
// CPU once (to a notifier it may have preempted) and polls try_lock for up to 8 us before it
// queues for the lock with lock(). A lock without try_lock is retaken with lock().
// notify_all wakes every waiter.
//
// Spurious wake-ups are allowed, as for std::condition_variable: use the predicate forms.
// wait on a std::unique_lock that does not own its mutex throws synchronization_error.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "contend/internal/atomic.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/function_ref.hpp"
#include "contend/mutex.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"

namespace contend {

namespace internal {
template <class Lock>
concept try_lockable = requires(Lock& l) {
    { l.try_lock() } -> std::convertible_to<bool>;
};
}  // namespace internal

class condition_variable {
public:
    constexpr condition_variable() noexcept = default;
    condition_variable(const condition_variable&) = delete;
    condition_variable& operator=(const condition_variable&) = delete;

    template <class Lock>
    void wait(Lock& lock) {
        wait_until_internal(lock, internal::no_deadline);
    }

    template <class Lock, class Predicate>
    void wait(Lock& lock, Predicate pred) {
        while (!pred()) wait(lock);
    }

    template <class Lock, class Clock, class Duration>
    std::cv_status wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& t) {
        return wait_until_internal(lock, internal::to_deadline(t));
    }

    template <class Lock, class Clock, class Duration, class Predicate>
    bool wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& t, Predicate pred) {
        const auto until = internal::to_deadline(t);
        while (!pred()) {
            if (wait_until_internal(lock, until) == std::cv_status::timeout) return pred();
        }
        return true;
    }

    template <class Lock, class Rep, class Period>
    std::cv_status wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d) {
        return wait_until_internal(lock, internal::deadline_after(d));
    }

    template <class Lock, class Rep, class Period, class Predicate>
    bool wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
        return wait_until(lock, internal::deadline_after(d), std::move(pred));
    }

    void notify_one() noexcept {
        if (has_waiters_.load(std::memory_order_acquire)) notify_one_slow();
    }

    void notify_all() noexcept {
        if (has_waiters_.load(std::memory_order_acquire)) notify_all_slow();
    }

private:
    template <class Lock>
    std::cv_status wait_until_internal(Lock& lock, internal::deadline until) {
        check_owned(lock);
        mutex* const m = requeue_target(lock);
        const auto park = [&] {
            try {
                return parking_lot::park_requeueable(
                    this, m,
                    [this] {
                        has_waiters_.store(true, std::memory_order_seq_cst);
                        return true;
                    },
                    [&lock] { release_to_wait(lock); }, until, wait_poll());
            } catch (...) {  // a cancellation's unwind included: rethrown
                if (m != nullptr && parking_lot::detail::this_thread_was_requeued()) m->drop_requeued_registration();
                throw;
            }
        };
        const auto result = park();
        if (result.requeued) {
            // Notified: a deadline that passed while it waited on the mutex's queue is the
            // mutex's wait, as it is for a waiter woken and then blocked on the mutex.
            m->lock_requeued(result.was_unparked(), result.token);
            retaken_by_requeue(lock, *m);
            return std::cv_status::no_timeout;
        }
        relock(lock);
        return result.status == parking_lot::park_status::timed_out ? std::cv_status::timeout
                                                                    : std::cv_status::no_timeout;
    }

    // How long a waiter watches for its notify before it sleeps (condition_variable.cpp).
    static std::chrono::nanoseconds wait_poll() noexcept;

    // The contend::mutex under a lock whose waiters a notify may move onto that mutex's
    // queue (the mutex itself, a std::unique_lock of one, or a wrapper that names it with
    // requeue_target() and takes note of the retake in retaken_by_requeue()); else nullptr.
    template <class Lock>
    static mutex* requeue_target(Lock& lock) noexcept {
        if constexpr (std::is_same_v<Lock, mutex>) {
            return &lock;
        } else if constexpr (std::is_same_v<Lock, std::unique_lock<mutex>>) {
            return lock.mutex();
        } else if constexpr (requires {
                                 { lock.requeue_target() } -> std::same_as<mutex*>;
                                 lock.retaken_by_requeue();
                             }) {
            return lock.requeue_target();
        } else {
            return nullptr;
        }
    }
    // A requeued waiter has taken m (mutex::lock_requeued): the lock owns it again.
    template <class Lock>
    static void retaken_by_requeue(Lock& lock, mutex& m) {
        if constexpr (std::is_same_v<Lock, mutex>) {
        } else if constexpr (std::is_same_v<Lock, std::unique_lock<mutex>>) {
            lock = Lock(m, std::adopt_lock);
        } else if constexpr (requires { lock.retaken_by_requeue(); }) {
            lock.retaken_by_requeue();
        }
    }

    // A lock that has unlock_before_blocking (contend::mutex: mutex.hpp says why) is
    // released with it, also through the std::unique_lock that usually holds it; other
    // locks with unlock().
    template <class Lock>
    static void release_to_wait(Lock& lock) {
        if constexpr (requires { lock.unlock_before_blocking(); }) {
            lock.unlock_before_blocking();
        } else if constexpr (requires {
                                 lock.mutex()->unlock_before_blocking();
                                 lock.release();
                                 Lock(*lock.mutex(), std::defer_lock);
                             }) {
            auto* m = lock.mutex();
            m->unlock_before_blocking();  // throws before the unique_lock changes, if it must
            (void)lock.release();
            lock = Lock(*m, std::defer_lock);  // not owning, as unlock() leaves it
        } else {
            lock.unlock();
        }
    }

    // Retakes the lock after the park. A notifier usually holds the lock when it notifies
    // and releases it a moment later, while this thread is waking: yielding once and polling
    // try_lock for a few microseconds (relock_poll, src/condition_variable.cpp) takes it
    // then, where lock() would park again and need a second wake-up from the notifier's
    // unlock. In a two-thread wait/notify ping-pong that second wake-up was most of the gap
    // to glibc's condition variable (docs/design/condition_variable.md).
    template <class Lock>
    static void relock(Lock& lock) {
        // A std::unique_lock has try_lock whatever its mutex has: its mutex must have it too.
        if constexpr (requires { lock.mutex(); }) {
            if constexpr (internal::try_lockable<std::remove_pointer_t<decltype(lock.mutex())>>) {
                if (try_relock(lock)) return;
            }
        } else if constexpr (internal::try_lockable<Lock>) {
            if (try_relock(lock)) return;
        }
        lock.lock();
    }
    template <class Lock>
    static bool try_relock(Lock& lock) {
        return lock.try_lock() || relock_poll([&lock] { return static_cast<bool>(lock.try_lock()); });
    }
    static bool relock_poll(internal::function_ref<bool()> try_lock);

    template <class Lock>
    static void check_owned(Lock& lock) {
        if constexpr (requires { lock.owns_lock(); }) {
            if (!lock.owns_lock())
                throw synchronization_error("contend::condition_variable::wait: the lock is not held");
        }
    }

    void notify_one_slow() noexcept;
    void notify_all_slow() noexcept;

    internal::atomic<bool> has_waiters_{false};
};

}  // namespace contend
