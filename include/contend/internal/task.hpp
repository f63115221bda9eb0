// A posted work item: one heap node holding any move-only callable. Internal.
//
// The pool's queues hold task_node pointers: a pointer fits in one atomic slot of the
// work-stealing deque, the global queue and the timer heap, and an item moves between them
// without being copied. One node per item (what oneTBB and .NET pay too); the node frees
// itself after running, even if the callable throws.
//
// Small nodes (at most small_task_bytes, ordinarily aligned) come from a cache of the
// calling thread's and go back to the cache of the thread that frees them
// (src/pool/task_cache.cpp): a few loads and stores, no locked instruction. With malloc, an
// item posted on one worker and run on another was freed into the poster's arena, which
// glibc does with a compare-and-swap on that arena's list once the freeing thread's own
// cache holds 7 chunks of the size: the global/sustained row on 2 workers ran 59 to 64 ns an
// item, 47 to 49 with the cache (Intel Xeon VM, docs/design/pool.md).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace contend::internal {

// The size of every cached node: a task_node and a callable of up to 48 bytes (six pointers).
inline constexpr std::size_t small_task_bytes = 64;

// A block of small_task_bytes from the calling thread's cache, else from operator new.
void* allocate_small_task();
// Back to the calling thread's cache (up to its bound), else to operator delete.
void free_small_task(void* block) noexcept;
// How many blocks the calling thread's cache holds (for tests).
std::size_t this_thread_cached_small_tasks() noexcept;

// Whether T's nodes come from the cache: small enough, and aligned as operator new aligns.
// Not under AddressSanitizer, which must see each node freed to catch a use after it.
template <class T>
inline constexpr bool cached_task_node =
#if defined(__SANITIZE_ADDRESS__)
    false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    false;
#else
    sizeof(T) <= small_task_bytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
#endif
#else
    sizeof(T) <= small_task_bytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
#endif

struct task_node {
    // Runs the callable, then frees the node (also when the callable throws).
    void (*run)(task_node*);
    // Frees the node without running it (a cancelled timer, a pool torn down).
    void (*discard)(task_node*) noexcept;
};

template <class F>
struct task_impl final : task_node {
    explicit task_impl(F&& fn) : task_node{&run_impl, &discard_impl}, f(std::move(fn)) {}
    explicit task_impl(const F& fn) : task_node{&run_impl, &discard_impl}, f(fn) {}

    static void run_impl(task_node* n) {
        struct freed_after {
            task_impl* node;
            ~freed_after() { destroy(node); }
        } self{static_cast<task_impl*>(n)};
        self.node->f();
    }
    static void discard_impl(task_node* n) noexcept { destroy(static_cast<task_impl*>(n)); }

    static void destroy(task_impl* node) noexcept {
        if constexpr (cached_task_node<task_impl>) {
            node->~task_impl();
            free_small_task(node);
        } else {
            delete node;
        }
    }

    F f;
};

template <class F>
task_node* make_task(F&& f) {
    using D = std::decay_t<F>;
    using node = task_impl<D>;
    static_assert(std::is_invocable_v<D&>, "a work item must be callable with no arguments");
    if constexpr (cached_task_node<node>) {
        void* block = allocate_small_task();
        try {
            return ::new (block) node(std::forward<F>(f));
        } catch (...) {
            free_small_task(block);
            throw;
        }
    } else {
        return new node(std::forward<F>(f));
    }
}

// Owns a node until it is handed over (release) or dropped (discarded, not run).
struct task_holder {
    task_node* node = nullptr;
    explicit task_holder(task_node* n) noexcept : node(n) {}
    task_holder(const task_holder&) = delete;
    task_holder& operator=(const task_holder&) = delete;
    ~task_holder() {
        if (node) node->discard(node);
    }
    task_node* release() noexcept { return std::exchange(node, nullptr); }
};

}  // namespace contend::internal
