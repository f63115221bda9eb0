// The atomics of contend's primitives, named once: every atomic variable in the library is an
// internal::atomic<T>, and every fence an internal::thread_fence. In a normal build they are
// std::atomic<T> and std::atomic_thread_fence themselves, an alias and a forwarding call, so
// the layout and the instructions are the standard ones (checked by comparing the library's
// disassembly before and after they were introduced). In the model-checking build
// (CONTEND_MODEL_CHECK) they are model::atomic and model::fence, which put a scheduling point
// before every operation (docs/design/model-checking.md).
#pragma once

#include <atomic>

#if CONTEND_MODEL_CHECK
#include "contend/internal/model_atomic.hpp"
#endif

namespace contend::internal {

#if CONTEND_MODEL_CHECK
template <class T>
using atomic = model::atomic<T>;

inline void thread_fence(std::memory_order order) noexcept { model::fence(order); }
#else
template <class T>
using atomic = std::atomic<T>;

inline void thread_fence(std::memory_order order) noexcept { std::atomic_thread_fence(order); }
#endif

}  // namespace contend::internal
