// Handlers for the child of a fork(): the library's state that names threads the child does
// not have (queued waiters, held bucket locks, counted registrations) goes back to rest there.
// Registered while the library loads, so they run before the program's own child handlers,
// which may unlock mutexes.
//
// The model-checking build registers none: a model never forks, and its threads are the
// scheduler's (docs/design/model-checking.md). This header is where that is chosen, so the
// files that own such state do not know which build they are in.
#pragma once

#if !CONTEND_MODEL_CHECK
#include <pthread.h>
#endif

namespace contend::internal {

// Runs `handler` in the child of every later fork(). True if it was registered (false in the
// model-checking build, or if pthread_atfork had no memory). `static const bool registered =
// at_fork_child(reset);` at namespace scope registers it once, at load.
inline bool at_fork_child(void (*handler)()) noexcept {
#if CONTEND_MODEL_CHECK
    (void)handler;
    return false;
#else
    return pthread_atfork(nullptr, nullptr, handler) == 0;
#endif
}

// The same with the three handlers of pthread_atfork, for state guarded by a lock that the
// parent takes before the fork and both sides release after it.
inline bool at_fork(void (*prepare)(), void (*parent)(), void (*child)()) noexcept {
#if CONTEND_MODEL_CHECK
    (void)prepare;
    (void)parent;
    (void)child;
    return false;
#else
    return pthread_atfork(prepare, parent, child) == 0;
#endif
}

}  // namespace contend::internal
