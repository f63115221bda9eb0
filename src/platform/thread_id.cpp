// Compact thread ids. Allocation is rare (once per thread), so a plain mutex and a
// min-heap of free ids are enough; the point is that ids stay small and dense, so the
// thin lock's 16-bit owner field fits every thread of an ordinary program.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <new>
#include <vector>

#include "contend/internal/thread_id.hpp"
#include "contend/internal/tsan.hpp"
#include "platform/first_use.hpp"
#include "platform/fork_child.hpp"
#include "platform/yield.hpp"

namespace contend::internal {
namespace {

struct id_pool {
    std::mutex lock;
    std::vector<std::uint32_t> free_ids;  // min-heap: lowest id reused first
    std::uint32_t next_fresh = 1;
    std::uint32_t live = 0;
    std::uint32_t retired = 0;
    // In a fork child, the parent's pool this one replaced (reset_in_fork_child): never read,
    // only kept reachable.
    const void* parents = nullptr;
};

// Leaked on purpose: threads may exit (and return ids) during static destruction. Built on
// first use with no guard a forked child could find held (platform/first_use.hpp).
first_use_object<id_pool> id_pool_object;
id_pool& pool() { return id_pool_object.get(); }

void release_id(std::uint32_t id, bool abandoned_a_lock) noexcept {
    id_pool& p = pool();
    std::lock_guard guard(p.lock);
    --p.live;
    if (abandoned_a_lock) {
        ++p.retired;  // its locks still name it: no later thread may answer to it
        return;
    }
    // An id assigned by a test lies beyond the fresh range: next_fresh hands it out again
    // when it gets there, so it must not also wait in the free list.
    if (id >= p.next_fresh) return;
    try {
        p.free_ids.push_back(id);
        std::push_heap(p.free_ids.begin(), p.free_ids.end(), std::greater<>{});
    } catch (...) {
        // Out of memory: the id is lost to reuse, nothing else breaks.
    }
}

struct id_returner {
    std::uint32_t id = 0;
    ~id_returner() {
        // locks_held and thin_taken_free are plain thread_locals: still readable while
        // destructors run.
        if (id != 0) release_id(id, locks_held != 0 || thin_taken_free != nullptr);
    }
};

thread_local id_returner returner;

// fork(): a thread of the parent that was starting or ending may have held the pool's lock,
// or left its free list half-updated, and then the child's first new thread would wait for
// good or read a broken heap. The child gets a fresh pool (the old one is leaked, never read
// again) that goes on from the parent's next fresh id, so no id the parent's threads had is
// handed out again: those threads are not in the child, but locks in its memory may still
// name them. Ids the parent had freed are lost to reuse, a few at most.
void reset_in_fork_child() noexcept {
    id_pool* parents = id_pool_object.peek();
    if (parents == nullptr) return;  // no thread asked for an id yet: nothing to reset
    id_pool& old = *parents;
    const std::uint32_t next_fresh = old.next_fresh;
    const std::uint32_t retired = old.retired;
    helgrind_unchecked(&old, sizeof old);
    id_pool* fresh = new (std::nothrow) id_pool;
    if (fresh == nullptr) {  // no memory: at least the lock must not stay held
        new (&old.lock) std::mutex;
        return;
    }
    fresh->next_fresh = next_fresh;
    fresh->retired = retired;
    fresh->live = returner.id != 0 ? 1 : 0;  // the forking thread, the child's only one
    fresh->parents = parents;
    id_pool_object.replace_in_fork_child(fresh);
}
[[maybe_unused]] const bool fork_handler_registered = at_fork_child(reset_in_fork_child);

}  // namespace

std::uint32_t acquire_compact_thread_id() noexcept {
    if (returner.id != 0) return returner.id;
    id_pool& p = pool();
    // The pool's std::mutex is no scheduling point of the model, but a thread taking it can be
    // preempted there: one point here lets a model run other threads between what the caller
    // did before asking for its id and the id it gets (a thread ending meanwhile hands its id on).
    preemption_point(&p);
    std::uint32_t id;
    {
        std::lock_guard guard(p.lock);
        if (!p.free_ids.empty()) {
            std::pop_heap(p.free_ids.begin(), p.free_ids.end(), std::greater<>{});
            id = p.free_ids.back();
            p.free_ids.pop_back();
        } else {
            id = p.next_fresh++;
        }
        ++p.live;
    }
    returner.id = id;
    return id;
}

bool assign_compact_thread_id_for_testing(std::uint32_t id) noexcept {
    if (returner.id != 0) return false;
    id_pool& p = pool();
    {
        std::lock_guard guard(p.lock);
        if (id < p.next_fresh) return false;
        ++p.live;
    }
    returner.id = id;  // what compact_thread_id() will find on its first call
    return true;
}

std::uint32_t live_compact_thread_ids() noexcept {
    id_pool& p = pool();
    std::lock_guard guard(p.lock);
    return p.live;
}

std::uint32_t retired_compact_thread_ids() noexcept {
    id_pool& p = pool();
    std::lock_guard guard(p.lock);
    return p.retired;
}

}  // namespace contend::internal
