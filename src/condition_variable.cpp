#include "contend/condition_variable.hpp"

#include "model/mutation.hpp"
#include "parking_keys.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"

namespace contend {

// A waiter that parked with a contend::mutex (its context) moves to that mutex's untimed
// queue if the mutex is held (mutex::register_requeued_waiter, under both bucket locks),
// else it is woken. The mutex is alive: its waiter is still queued here. A mutex whose
// waiter slot is idle has its slot armed here, after the locks, and the waiter is woken.
void condition_variable::notify_one_slow() noexcept {
    const void* arm = nullptr;  // a mutex whose waiter slot needs its barrier before a move
    parking_lot::unpark_requeue_one(
        this, [](const void* m) { return internal::mutex_untimed_key(m); },
        [&arm](const void* m) {
            bool needs_barrier = false;
            const bool moved =
                const_cast<mutex*>(static_cast<const mutex*>(m))->register_requeued_waiter(&needs_barrier);
            if (needs_barrier) arm = m;
            return moved;
        },
        [this](parking_lot::unpark_result r) -> std::intptr_t {
            // Under the bucket lock: no waiter can enqueue between this and the unpark.
            const bool more =
                r.may_have_more_threads && !CONTEND_MUTATION(condition_variable_notify_one_forgets_the_rest);
            has_waiters_.store(more, std::memory_order_relaxed);
            return 0;
        });
    if (arm != nullptr) mutex::arm_waiter_slot(arm);
}

// The retake after a wake-up. On the 2-vCPU VMs the scheduler mostly runs the woken waiter
// on the notifier's CPU and at once, while the notifier still holds the lock it notified
// under: the waiter's first try_lock fails, and if it then queued for the mutex, the
// notifier's unlock had to wake it a second time (a two-thread ping-pong spent 2.4x glibc's
// time, a third of its turns contended). So a waiter whose try_lock fails first yields its
// CPU, which lets a preempted notifier run on to its unlock (sched_yield returns at once
// when nothing else wants the CPU), then polls. A yield took the waiter's first retry from
// failing in 1 of 3 turns to failing in about 1 in 10,000 (docs/design/condition_variable.md).
//
// How long it polls: half of what queueing costs when the notifier then releases (a park
// and a wake-up, one way: 16 to 19 us on the AMD EPYC VM, docs/design/mutex.md; the Intel
// Xeon VM's syscalls and wake-ups are no cheaper), so the poll never costs more than it
// saves. A notifier that keeps the lock longer than this is doing work under it, and then
// the waiter should sleep. The poll is a spin_wait: it yields again where the notifier may
// need this CPU (platform/spin_wait.hpp).
constexpr std::chrono::nanoseconds handoff_poll = std::chrono::microseconds(8);

bool condition_variable::relock_poll(internal::function_ref<bool()> try_lock) {
    internal::yield_cpu();
    if (try_lock()) return true;
    internal::spin_wait poll{handoff_poll};
    while (poll.pause()) {
        if (try_lock()) return true;
    }
    return false;
}

// The wait itself polls for its notify as long, before it sleeps (parking_lot's poll), for
// the same reason: a notify that comes within it costs no sleep and no wake-up. Across CPUs
// a wake-up is most of a hand-off's time (on the 2-vCPU VMs an idle vCPU takes 40 to 150 us
// to wake; a two-thread ping-pong on two CPUs went from glibc's time to a fifth of it on the
// 16-core Intel Xeon and the AMD EPYC VM alike, docs/design/condition_variable.md), and a
// notify usually follows within microseconds where threads take turns. A waiter whose
// notify is later has spent 8 us of CPU, as a contended lock() spends on its spin.
std::chrono::nanoseconds condition_variable::wait_poll() noexcept { return handoff_poll; }

void condition_variable::notify_all_slow() noexcept {
    has_waiters_.store(false, std::memory_order_relaxed);
    parking_lot::unpark_all(this);
}

}  // namespace contend
