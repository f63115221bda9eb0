// The pool suite's workload: .NET's ThreadPoolWorkThroughput benchmark (the PR that moved
// CoreCLR onto the portable thread pool, dotnet-runtime-portable-thread-pool in
// docs/references.md), run by the lab's harness against any pool with a post().
//
// A work item computes Fib(n), n drawn at random from 4..9, recursively, and counts itself
// on a counter of its thread's own, alone on a cache line. Two modes:
//  - sustained: every item posts one more before its work, so the pool is never idle. The
//    producer starts 8 x threads items with an argument of 1, which makes each of them post
//    two: 16 x threads items are in flight from then on (as in the original).
//  - burst N: bursts of N x threads items. The producer posts `threads` items; each of them
//    posts its share of the rest (the fan-out), then works. The producer waits for the
//    burst's last item (an event the item that brings a shared countdown to zero sets),
//    then posts the next burst.
// Items post to the pool's global queue, or with its "local" call (the queue of the thread
// running the item); the producer is never a pool thread, so its local posts go where the
// pool sends an outsider's.
//
// How it fits the harness: harness worker 0 is the producer; the other harness workers
// return at once (the pool's own threads do the work), so `workers` is the pool's thread
// count. A repetition runs `ops x threads` items (sustained: at least that many, then the
// producer drains the pool; burst: whole bursts), and ends only when no item of it is
// still queued or running, so nothing bleeds into the next repetition. Every wait polls
// the harness's stop flag, so a pool that loses or stalls items times out at the deadline
// instead of hanging the cell.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/event.hpp"
#include "measure/end_wait.hpp"
#include "measure/workload.hpp"

namespace contend::lab::pool_bench {

enum class queue_kind { global, local };

// The work of one item. Not inlined, so the recursion stays a recursion in every
// contender's build of the item.
[[gnu::noinline]] inline int fib(int n) { return n <= 1 ? n : fib(n - 2) + fib(n - 1); }

// Per running thread: its random stream and the sum that keeps fib's result alive.
struct item_rng {
    std::uint64_t state = 0;
    std::uint64_t fib_sum = 0;
    // Fib of a number drawn from 4..9 (xorshift64, scaled by a multiply: a % would put a
    // division into every item).
    void work() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const int n = 4 + static_cast<int>(((state >> 32) * 6) >> 32);
        fib_sum += static_cast<std::uint64_t>(fib(n));
    }
};

// A thread's counters: items it completed and items it posted (sustained mode). Written by
// that thread only (a plain load and store, as the original's ++ on a padded slot), read
// by the producer. The release store of `completed` publishes the `posted` before it.
struct alignas(contend::cache_line_size) item_slot {
    std::atomic<std::uint64_t> completed{0};
    std::atomic<std::uint64_t> posted{0};
};

inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by, std::memory_order order) {
    counter.store(counter.load(std::memory_order_relaxed) + by, order);
}

inline std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline double process_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Which slot a pool thread counts on, found once per thread and workload. Keyed by a
// workload number, not its address: oneTBB's worker threads outlive a workload, and a
// later one may be allocated where an earlier one was.
struct thread_slot {
    std::uint64_t owner = 0;
    item_slot* slot = nullptr;
    bool shared = false;  // the overflow slot, which several threads may share
    item_rng rng;
};
inline thread_local thread_slot this_thread_slot;
inline std::atomic<std::uint64_t> workload_numbers{0};

// The suite's metrics, the same for every row: items per ms of wall time, all threads'
// CPU per item, and how many distinct threads ran items in the cell so far.
inline void add_pool_metrics(const repetition_facts& facts, double cpu_ns, std::uint64_t threads_seen,
                             metric_list& out) {
    const double items = static_cast<double>(facts.completed);
    out.emplace_back("items_per_ms", facts.wall_ns > 0 ? items / (facts.wall_ns / 1e6) : 0);
    out.emplace_back("cpu_ns_per_item", items > 0 ? cpu_ns / items : 0);
    out.emplace_back("threads_seen", static_cast<double>(threads_seen));
}

// Pool: constructible from a thread count; `post(f, queue, from_item)`, from_item false for
// the producer's posts; a destructor that runs what was posted and joins.
template <class Pool>
class pool_throughput final : public workload {
public:
    // burst: 0 for sustained, else N (bursts of N x threads items).
    pool_throughput(queue_kind queue, std::uint32_t burst) : queue_(queue), burst_(burst) {}

    void reset() override {
        clear_counts();
        producer_posted_ = 0;
        cpu_ns_ = 0;
        start_us_.clear();
    }

    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker != 0) return 0;  // the pool's threads work; harness worker 0 produces
        if (!pool_) {
            // Outside any timed repetition's figures: the first call is calibration. The
            // warm-up starts every pool thread and runs each item path once.
            threads_ = static_cast<std::uint32_t>(progress.size());
            slot_count_ = threads_ + extra_slots;
            slots_ = std::make_unique<item_slot[]>(slot_count_);
            pool_ = std::make_unique<Pool>(static_cast<int>(threads_));
            warm_up_ = verify(drive(std::uint64_t{64} * threads_, stop, progress));
            clear_counts();
            producer_posted_ = 0;
        }
        const double cpu0 = process_cpu_ns();
        const std::uint64_t done = drive(ops * threads_, stop, progress);
        cpu_ns_ = process_cpu_ns() - cpu0;
        progress[0].value.store(done, std::memory_order_relaxed);
        return done;
    }

    check_result check(const std::vector<std::uint64_t>& completed) override {
        if (!warm_up_.ok()) return {warm_up_.status, "in the warm-up: " + warm_up_.detail};
        std::uint64_t reported = 0;
        for (const auto c : completed) reported += c;
        return verify(reported);
    }

    void measure(const repetition_facts& facts, metric_list& out) override {
        add_pool_metrics(facts, cpu_ns_, threads_seen(), out);
        // Burst modes: how long after the producer's first post of a burst its first item
        // started, the median over the repetition's bursts. The pool's workers are idle
        // between bursts (asleep, or polling for a while), so this is the wake-up a burst
        // pays, as the machine delivers it: the row explains itself beside its peers'.
        if (burst_ > 0 && !start_us_.empty()) {
            std::vector<double> sorted = start_us_;
            std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2),
                             sorted.end());
            out.emplace_back("burst_start_us", sorted[sorted.size() / 2]);
        }
    }
    // The pool's workers are not the harness's threads: the process's CPU over the window.
    double cpu_ns(const repetition_facts&) const override { return cpu_ns_; }

private:
    static constexpr std::uint32_t extra_slots = 64;  // room to see a pool run too many threads
    static constexpr std::uint64_t first_items_per_thread = 8;

    // Whether the items counted are the `reported` ones the producer saw complete, every
    // item posted ran once, and no more threads ran them than the pool was given.
    check_result verify(std::uint64_t reported) const {
        const std::uint64_t ran = completed_sum();
        const std::uint64_t seen = threads_seen();
        if (seen > threads_)
            return {"too_many_threads",
                    std::to_string(seen) + " threads ran items in a pool of " + std::to_string(threads_)};
        if (ran == 0) return {"no_items", "no item completed"};
        if (ran != reported)
            return {"wrong_count",
                    std::to_string(ran) + " items counted, the producer saw " + std::to_string(reported)};
        if (burst_ == 0) {
            const std::uint64_t posted = producer_posted_ + posted_sum();
            if (posted != ran)
                return {"items_lost", std::to_string(posted) + " items posted, " + std::to_string(ran) + " ran"};
        } else {
            const std::uint64_t burst_items = std::uint64_t{burst_} * threads_;
            if (ran % burst_items != 0 || scheduled_.load() != 0)
                return {"items_lost",
                        std::to_string(ran) + " items ran, not whole bursts of " + std::to_string(burst_items)};
        }
        return {};
    }

    std::uint64_t drive(std::uint64_t items, const std::atomic<bool>& stop, progress_counters& progress) {
        return burst_ == 0 ? run_sustained(items, stop, progress) : run_bursts(items, stop, progress);
    }

    // Posts the first items, lets the pool run until `items` have completed, then stops the
    // reposting and waits until every item posted has run.
    std::uint64_t run_sustained(std::uint64_t items, const std::atomic<bool>& stop, progress_counters& progress) {
        draining_.store(false, std::memory_order_relaxed);
        const std::uint64_t first_items = first_items_per_thread * threads_;
        producer_posted_ += first_items;
        for (std::uint64_t i = 0; i < first_items; ++i) pool_->post([this] { sustained_item(1); }, queue_, false);
        // Polls, not a wait on the items: an item that signalled the producer would add a
        // shared write to every item. The sleep grows to 1 ms, under 2 % of a 50 ms
        // repetition, and the items done meanwhile are counted, not lost.
        auto nap = std::chrono::microseconds(50);
        for (;;) {
            const std::uint64_t done = completed_sum();
            progress[0].value.store(done, std::memory_order_relaxed);
            if (done >= items || stop.load(std::memory_order_relaxed)) break;
            std::this_thread::sleep_for(nap);
            nap = std::min(nap * 2, std::chrono::microseconds(1000));
        }
        draining_.store(true, std::memory_order_relaxed);
        end_wait pace;
        for (;;) {
            // Completed first, then posted: a thread's completed count is published after
            // its posted count, so equal sums mean nothing posted is still queued or running
            // (an item that ran was counted as posted, and so were the items it posted).
            // More completed than posted cannot happen in a pool that runs each item once:
            // one ran twice, and check() will say so.
            const std::uint64_t done = completed_sum();
            if (done >= producer_posted_ + posted_sum() || stop.load(std::memory_order_relaxed)) return done;
            pace.step();
        }
    }

    // .NET's burst producer: the first `threads` items carry the fan-out between them.
    std::uint64_t run_bursts(std::uint64_t items, const std::atomic<bool>& stop, progress_counters& progress) {
        const std::uint64_t length = std::uint64_t{burst_} * threads_;
        const std::uint64_t bursts = std::max<std::uint64_t>(1, (items + length - 1) / length);
        const std::uint64_t to_fan_out = length - threads_;
        const std::uint64_t each = to_fan_out / threads_;
        std::uint64_t done = 0;
        for (std::uint64_t b = 0; b < bursts; ++b) {
            scheduled_.store(length, std::memory_order_relaxed);
            burst_started_.store(false, std::memory_order_relaxed);  // the posts below publish both
            const std::int64_t posted_ns = steady_ns();
            std::uint64_t extra = to_fan_out - each * threads_;
            for (std::uint32_t i = 0; i < threads_; ++i) {
                const std::uint64_t to_post = each + (extra > 0 ? 1 : 0);
                if (extra > 0) --extra;
                pool_->post([this, to_post] { burst_item(to_post); }, queue_, false);
            }
            while (!burst_done_.wait_for(std::chrono::milliseconds(5)))
                if (stop.load(std::memory_order_relaxed)) return completed_sum();
            done += length;
            // The event's set and wait order the first item's store before this load.
            start_us_.push_back(static_cast<double>(burst_start_ns_.load(std::memory_order_relaxed) - posted_ns) /
                                1000.0);
            progress[0].value.store(done, std::memory_order_relaxed);
        }
        return done;
    }

    thread_slot& my_slot() {
        thread_slot& t = this_thread_slot;
        if (t.owner != number_) {
            const std::uint64_t index = next_slot_.fetch_add(1, std::memory_order_relaxed);
            t.owner = number_;
            t.shared = index >= slot_count_ - 1;
            t.slot = &slots_[t.shared ? slot_count_ - 1 : index];
            t.rng.state = 0x9E3779B97F4A7C15ull * (index + 1) | 1;
        }
        return t;
    }

    void count(thread_slot& t, std::atomic<std::uint64_t>& counter, std::uint64_t by, std::memory_order order) {
        if (t.shared) counter.fetch_add(by, order);
        else bump(counter, by, order);
    }

    void sustained_item(std::uint64_t to_post) {
        thread_slot& t = my_slot();
        if (!draining_.load(std::memory_order_relaxed)) {
            ++to_post;
            count(t, t.slot->posted, to_post, std::memory_order_relaxed);
            do pool_->post([this] { sustained_item(0); }, queue_, true);
            while (--to_post > 0);
        }
        t.rng.work();
        count(t, t.slot->completed, 1, std::memory_order_release);
    }

    void burst_item(std::uint64_t to_post) {
        if (!burst_started_.load(std::memory_order_relaxed) &&
            !burst_started_.exchange(true, std::memory_order_relaxed))
            burst_start_ns_.store(steady_ns(), std::memory_order_relaxed);
        thread_slot& t = my_slot();
        for (; to_post > 0; --to_post) pool_->post([this] { burst_item(0); }, queue_, true);
        t.rng.work();
        count(t, t.slot->completed, 1, std::memory_order_release);
        if (scheduled_.fetch_sub(1, std::memory_order_acq_rel) == 1) burst_done_.set();
    }

    std::uint64_t completed_sum() const {
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i < slot_count_; ++i) sum += slots_[i].completed.load(std::memory_order_acquire);
        return sum;
    }
    std::uint64_t posted_sum() const {
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i < slot_count_; ++i) sum += slots_[i].posted.load(std::memory_order_relaxed);
        return sum;
    }
    std::uint64_t threads_seen() const { return next_slot_.load(std::memory_order_relaxed); }
    void clear_counts() {
        for (std::uint32_t i = 0; i < slot_count_; ++i) {
            slots_[i].completed.store(0, std::memory_order_relaxed);
            slots_[i].posted.store(0, std::memory_order_relaxed);
        }
        scheduled_.store(0, std::memory_order_relaxed);
    }

    const queue_kind queue_;
    const std::uint32_t burst_;
    const std::uint64_t number_ = workload_numbers.fetch_add(1) + 1;
    std::uint32_t threads_ = 0;
    std::uint32_t slot_count_ = 0;
    std::unique_ptr<item_slot[]> slots_;
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> next_slot_{0};
    alignas(contend::cache_line_size) std::atomic<bool> draining_{false};
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> scheduled_{0};  // the burst's countdown
    // The burst's first item to start says when (written once a burst, read by every item).
    alignas(contend::cache_line_size) std::atomic<bool> burst_started_{false};
    std::atomic<std::int64_t> burst_start_ns_{0};
    std::vector<double> start_us_;  // the producer's: each burst's first start after its first post
    contend::auto_reset_event burst_done_;
    std::uint64_t producer_posted_ = 0;  // the first items: the producer's thread only
    double cpu_ns_ = 0;  // all threads' CPU time over the producer's window
    check_result warm_up_;  // a failure in the warm-up invalidates the cell
    // Last, so that it is destroyed first: its threads finish before the state they use goes.
    std::unique_ptr<Pool> pool_;
};

}  // namespace contend::lab::pool_bench
