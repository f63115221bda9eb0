// The locks a kind-0 mutex can run on (CONTEND_INTERPOSE_LOCK; the list: interpose_locks.hpp),
// all kept in the mutex's own bytes before __owner (glibc_layout.hpp), each free when all zero,
// and the few operations the pthread functions need that the locks do not share.
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
// Visit_mutex_as takes the choice its caller has already loaded: one case per entry of
// CONTEND_INTERPOSE_LOCKS (interpose_locks.hpp). Always inlined: it is the pthread functions'
// fast path, and past four cases the compiler stopped inlining it (a call, and the lambdas'
// captures spilled to the stack, on every lock).
template <bool with_glibc, class Lock, class Ours, class Theirs>
[[gnu::always_inline]] inline int visit_mutex_on(pthread_mutex_t* m, Ours& ours, Theirs& theirs) {
    if constexpr (!std::is_same_v<Lock, glibc_normal_mutex>) {
        return ours(as_lock<Lock>(m));
    } else if constexpr (with_glibc) {
        glibc_normal_mutex g{m};
        return ours(g);
    } else {
        return theirs();
    }
}

template <bool with_glibc = false, class Ours, class Theirs>
[[gnu::always_inline]] inline int visit_mutex_as(lock_choice c, pthread_mutex_t* m, Ours&& ours, Theirs&& theirs) {
    if (mutex_kind(m) != 0) return theirs();
    // The default first: its fast path pays one compare, not the switch's indirect jump.
    if (c == lock_choice::contend_mutex) [[likely]]
        return ours(as_lock<contend::mutex>(m));
    switch (c) {
#define CONTEND_INTERPOSE_CASE(name, alias, type, description) \
    case lock_choice::name:                                    \
        return visit_mutex_on<with_glibc, type>(m, ours, theirs);
        CONTEND_INTERPOSE_LOCKS(CONTEND_INTERPOSE_CASE)
#undef CONTEND_INTERPOSE_CASE
        default:  // unresolved: never seen here, current_choice_and_flags() resolves it first
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

// Whether a lock is held (pthread_mutex_destroy's EBUSY): its own answer where it has one, and
// for a lock of one 32-bit word, whether the word is not 0 (the all-zero state is free).
template <class Lock>
bool is_held(const Lock& l) noexcept {
    if constexpr (requires { l.is_locked(); }) {
        return l.is_locked();
    } else if constexpr (requires { l.queue_length(); }) {
        return l.queue_length() != 0;
    } else {
        static_assert(sizeof(Lock) == 4, "is_held: say how this lock tells whether it is held");
        return load_u32(&l, 0) != 0;
    }
}

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
