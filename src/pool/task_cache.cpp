// The small task nodes' per-thread cache (contend/internal/task.hpp).
//
// Each thread keeps up to cache_blocks freed blocks of small_task_bytes in a stack, and
// allocates from it first: the block a worker frees is the one its next post takes, whoever
// allocated it, so a stream of items between two workers allocates nothing after its start.
// The bound is 128 blocks (8 KiB a thread): more than a batch of items a worker takes from
// the global queue or from another worker at once (32) and frees before it posts again, so
// a batch's blocks stay in the thread that ran them.
//
// The stack is plain thread-local data, never destroyed, so a node freed late in a thread's
// exit (by another thread-local's destructor) still finds it; a thread-local reaper's
// destructor gives the blocks back to operator delete and closes the stack, after which the
// thread's frees go straight to operator delete.
#include <cstddef>
#include <new>

#include "contend/internal/task.hpp"

namespace contend::internal {
namespace {

constexpr int cache_blocks = 128;

struct block_stack {
    void* blocks[cache_blocks];
    int count;
    bool closed;
};
thread_local block_stack stack{};  // zero-initialized, trivially destructible

struct reaper {
    bool armed = false;
    ~reaper() {
        while (stack.count > 0) ::operator delete(stack.blocks[--stack.count]);
        stack.closed = true;
    }
};
thread_local reaper stack_reaper;

}  // namespace

void* allocate_small_task() {
    if (stack.count > 0) return stack.blocks[--stack.count];
    return ::operator new(small_task_bytes);
}

void free_small_task(void* block) noexcept {
    if (stack.count < cache_blocks && !stack.closed) {
        if (!stack_reaper.armed) stack_reaper.armed = true;  // constructs the reaper: it runs at thread exit
        stack.blocks[stack.count++] = block;
        return;
    }
    ::operator delete(block);
}

std::size_t this_thread_cached_small_tasks() noexcept { return static_cast<std::size_t>(stack.count); }

}  // namespace contend::internal
