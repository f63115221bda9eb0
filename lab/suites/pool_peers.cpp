// The pool suite's peers: oneTBB and Boost.Asio behind the suite's post(f, queue, from_item),
// each compiled only when found at build time.
#include "suites/pool_peers.hpp"

#include <cstdint>
#include <utility>

#include "suites/pool_suite.hpp"

#if CONTEND_HAVE_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif
#if CONTEND_HAVE_ASIO
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#endif

namespace contend::lab {
namespace {

using pool_bench::queue_kind;

#if CONTEND_HAVE_TBB
// oneTBB with exactly `threads` workers: by default its scheduler starts one worker fewer
// than there are CPUs (it counts the main thread as the last one), so the process-wide
// limit is raised to threads + 1, and the items run in an arena of `threads` slots, none
// kept for an outside thread (the producer never joins it, so it never runs items).
//  - local: an item spawns its items with task_group::run, which pushes them on the
//    running worker's own deque (LIFO for the owner, stolen FIFO by the others), as
//    contend's post_local does.
//  - global, and every post of the producer: task_arena::enqueue, the arena's shared FIFO
//    queue (fire-and-forget, no wait), where contend's post and .NET's global queue put
//    them. Spawning the producer's items instead would need the producer inside the arena,
//    and it would then run items itself.
class tbb_pool {
public:
    explicit tbb_pool(int threads)
        : limit_(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads) + 1),
          arena_(threads, 0) {
        arena_.initialize();
    }
    ~tbb_pool() {
        // Every item has run by now (the workload waits for that); task_group requires a
        // wait() before its destruction all the same.
        arena_.execute([this] { group_.wait(); });
    }
    tbb_pool(const tbb_pool&) = delete;
    tbb_pool& operator=(const tbb_pool&) = delete;

    template <class F>
    void post(F&& f, queue_kind queue, bool from_item) {
        if (queue == queue_kind::local && from_item) group_.run(std::forward<F>(f));
        else arena_.enqueue(std::forward<F>(f));
    }

private:
    tbb::global_control limit_;
    tbb::task_arena arena_;
    tbb::task_group group_;
};
#endif

#if CONTEND_HAVE_ASIO
// boost::asio::thread_pool(threads): one scheduler, one mutex-guarded queue.
//  - global: boost::asio::post.
//  - local: boost::asio::defer, asio's "continuation" hint. On a pool thread it keeps the
//    item in that thread's private queue and moves the whole batch to the shared queue,
//    under one lock, when the running item returns; the thread then takes the queue's
//    front. Not a work-stealing deque: there is no per-thread queue once the item returns.
//    From the producer (not a pool thread) it is a plain post.
class asio_pool {
public:
    explicit asio_pool(int threads) : pool_(static_cast<std::size_t>(threads)) {}
    ~asio_pool() { pool_.join(); }  // without stop(): runs what is queued, then joins
    asio_pool(const asio_pool&) = delete;
    asio_pool& operator=(const asio_pool&) = delete;

    template <class F>
    void post(F&& f, queue_kind queue, bool) {
        if (queue == queue_kind::local) boost::asio::defer(pool_, std::forward<F>(f));
        else boost::asio::post(pool_, std::forward<F>(f));
    }

private:
    boost::asio::thread_pool pool_;
};
#endif

}  // namespace

void append_peer_pools(std::vector<contender>& out) {
#if CONTEND_HAVE_TBB
    append_pool_rows(out, "tbb", "oneTBB task_arena of exactly threads workers", true, pool_maker::of<tbb_pool>());
#endif
#if CONTEND_HAVE_ASIO
    append_pool_rows(out, "asio", "boost::asio::thread_pool (local: defer)", true, pool_maker::of<asio_pool>());
#endif
    (void)out;
}

}  // namespace contend::lab
