// A posted work item: one heap node holding any move-only callable. Internal.
//
// The pool's queues hold task_node pointers: a pointer fits in one atomic slot of the
// work-stealing deque, the global queue and the timer heap, and an item moves between them
// without being copied. One allocation per item (what oneTBB and .NET pay too); the node
// frees itself after running, even if the callable throws.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace contend::internal {

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
        std::unique_ptr<task_impl> self(static_cast<task_impl*>(n));
        self->f();
    }
    static void discard_impl(task_node* n) noexcept { delete static_cast<task_impl*>(n); }

    F f;
};

template <class F>
task_node* make_task(F&& f) {
    using D = std::decay_t<F>;
    static_assert(std::is_invocable_v<D&>, "a work item must be callable with no arguments");
    return new task_impl<D>(std::forward<F>(f));
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
