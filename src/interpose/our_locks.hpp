// The locks a kind-0 mutex can run on (CONTEND_INTERPOSE_LOCK), all kept in the mutex's own
// bytes before __kind, each free when all zero, and the few operations the pthread
// functions need that the locks do not share.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "contend/internal/prefetch.hpp"
#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "interpose/glibc_functions.hpp"
#include "interpose/glibc_layout.hpp"
#include "interpose/lock_choice.hpp"

namespace contend::interpose {

// ttas_lock is one 32-bit word (in __lock), ticket_lock two (__lock and __count); both are
// free when zero and before __kind, so the kind check never sees them.
static_assert(sizeof(contend::ttas_lock) == 4 && alignof(contend::ttas_lock) <= alignof(int));
static_assert(sizeof(contend::ticket_lock) == 8 && alignof(contend::ticket_lock) <= alignof(int));
static_assert(sizeof(contend::ticket_lock) <= mutex_kind_offset);
static_assert(std::is_standard_layout_v<contend::ttas_lock> && std::is_standard_layout_v<contend::ticket_lock>);
static_assert(std::is_trivially_destructible_v<contend::ttas_lock> &&
              std::is_trivially_destructible_v<contend::ticket_lock>);

// As as_contend_mutex (glibc_layout.hpp): the lock's all-zero bytes are its constructed state.
template <class Lock>
Lock& as_lock(pthread_mutex_t* m) noexcept {
    return *std::launder(reinterpret_cast<Lock*>(m));
}

// A kind-0 mutex glibc runs, as a lock, for the profiled calls under
// CONTEND_INTERPOSE_LOCK=glibc: glibc's functions, with the profile's notes around them.
// glibc's lock and unlock of a normal mutex check nothing and always return 0.
struct glibc_normal_mutex {
    pthread_mutex_t* m;
    bool try_lock() noexcept { return glibc().mutex_trylock(m) == 0; }
    void lock() noexcept { (void)glibc().mutex_lock(m); }
    void unlock() noexcept { (void)glibc().mutex_unlock(m); }
};

// Calls ours(lock) with the lock a kind-0 mutex runs on; theirs() when glibc runs the mutex.
// With_glibc: ours(glibc_normal_mutex) for a kind-0 mutex glibc runs (the profiled calls).
// Visit_mutex_as takes the choice its caller has already loaded.
template <bool with_glibc = false, class Ours, class Theirs>
inline int visit_mutex_as(lock_choice c, pthread_mutex_t* m, Ours&& ours, Theirs&& theirs) {
    if (mutex_kind(m) != 0) return theirs();
    switch (c) {
        case lock_choice::glibc:
            if constexpr (with_glibc) {
                glibc_normal_mutex g{m};
                return ours(g);
            } else {
                return theirs();
            }
        case lock_choice::ttas:
            return ours(as_lock<contend::ttas_lock>(m));
        case lock_choice::ticket:
            return ours(as_lock<contend::ticket_lock>(m));
        default:
            return ours(as_lock<contend::mutex>(m));
    }
}

template <bool with_glibc = false, class Ours, class Theirs>
inline int visit_mutex(pthread_mutex_t* m, Ours&& ours, Theirs&& theirs) {
    return visit_mutex_as<with_glibc>(current_lock(), m, std::forward<Ours>(ours), std::forward<Theirs>(theirs));
}

// The first attempt of a profiled lock call, made as the lock's own lock() makes it: the
// line asked for exclusive before the load (a plain try_lock would fetch it shared, then wait
// for ownership at the CAS: a second transfer of a contended line on every acquisition).
template <class Lock>
bool first_try(Lock& l) noexcept {
    contend::internal::prefetch_for_write(&l);
    return l.try_lock();
}
inline bool first_try(glibc_normal_mutex& g) noexcept { return g.try_lock(); }

// The wait after first_try failed: contend::mutex goes straight to its slow path; the others
// have none apart and try again.
template <class Lock>
void lock_after_first_try(Lock& l) {
    if constexpr (requires { l.lock_contended(); }) l.lock_contended();
    else l.lock();
}

inline bool is_held(const contend::mutex& l) noexcept { return l.is_locked(); }
inline bool is_held(const contend::ttas_lock& l) noexcept { return load_u32(&l, 0) != 0; }
inline bool is_held(const contend::ticket_lock& l) noexcept { return l.queue_length() != 0; }

// A timed acquisition. The spin locks have no deadline of their own: they poll, yielding
// between attempts (they are for the lab's comparisons, not for long waits).
template <class Lock, class TimePoint>
bool lock_until(Lock& l, const TimePoint& t) {
    if constexpr (requires { l.try_lock_until(t); }) {
        return l.try_lock_until(t);
    } else {
        for (;;) {
            if (l.try_lock()) return true;
            if (TimePoint::clock::now() >= t) return false;
            sched_yield();
        }
    }
}

}  // namespace contend::interpose
