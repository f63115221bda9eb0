// Whether the library runs threads of its own that act by themselves on real time and CPU use,
// not on a caller's request: the fat-lock sweeper (sync_table.cpp) and the pool's gate
// (pool/gate_thread.cpp). The one place that knows: a file that starts one asks here.
//
// Not in the model-checking build (docs/design/model-checking.md): an OS thread outside the
// model would run the library's model atomics unscheduled, and its timed waits on the real
// clock could never end an execution. A model sweeps from one of its own threads
// (thin_lock::deflate_idle_locks), and a model pool runs its minimum of workers. The pool's
// other threads (workers, timer, wait) run there as model threads (pool/os_thread_model.cpp).
#pragma once

namespace contend::internal {

#if CONTEND_MODEL_CHECK
inline constexpr bool background_threads = false;
#else
inline constexpr bool background_threads = true;
#endif

}  // namespace contend::internal
