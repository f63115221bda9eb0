// The atomics of contend's primitives, named once: every atomic variable in the library is an
// internal::atomic<T>, and every fence an internal::thread_fence. In a normal build they are
// std::atomic<T> and std::atomic_thread_fence themselves, an alias and a forwarding call, so
// the layout and the instructions are the standard ones (checked by comparing the library's
// disassembly before and after they were introduced). The seam exists for a model-checking
// build, which puts a scheduler behind every operation (docs/design/model_check.md).
#pragma once

#include <atomic>

namespace contend::internal {

template <class T>
using atomic = std::atomic<T>;

inline void thread_fence(std::memory_order order) noexcept { std::atomic_thread_fence(order); }

}  // namespace contend::internal
