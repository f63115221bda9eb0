// The pool suite: work-item throughput of thread pools, after .NET's ThreadPoolWorkThroughput
// benchmark (pool_workload.hpp). Rows: pool/<pool>/queue:<global|local|none>/mode:<sustained|
// burst:N>, N = 1, 4, 16, 64, 256; each reports items_per_ms, cpu_ns_per_item and
// threads_seen. This file holds contend's own pool and the no-pool reference; the plain
// mutex pool is in pool_suite.hpp; oneTBB and Boost.Asio are peers (suites/pool_peers.cpp).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "contend/thread_pool.hpp"
#include "measure/harness.hpp"
#include "suites/pool_peers.hpp"
#include "suites/pool_suite.hpp"
#include "suites/pool_workload.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

using pool_bench::queue_kind;

// contend::thread_pool at a fixed size: hill climbing off and min = max, so that it runs
// the same number of threads as every other pool here. post_local from the producer (not
// a worker) goes to the global queue, as .NET's preferLocal does from a non-pool thread.
class contend_pool {
public:
    explicit contend_pool(int threads) : pool_(options(threads)) {}
    template <class F>
    void post(F&& f, queue_kind queue, bool) {
        if (queue == queue_kind::local) pool_.post_local(std::forward<F>(f));
        else pool_.post(std::forward<F>(f));
    }

private:
    static thread_pool_options options(int threads) {
        thread_pool_options o;
        o.min_threads = o.max_threads = static_cast<std::size_t>(threads);
        o.hill_climbing = false;
        o.name = "pool-suite";
        return o;
    }
    contend::thread_pool pool_;
};

// The physical reference: the same items called in a plain loop by each harness worker,
// no pool, no queue. Each worker counts on its own slot.
class no_pool_loop final : public workload {
public:
    void reset() override {
        for (auto& s : slots_) s.completed.store(0, std::memory_order_relaxed);
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& slot = slots_[static_cast<std::size_t>(worker)];
        pool_bench::item_rng rng{0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(worker + 1) | 1};
        const std::uint64_t done = run_polled(worker, ops, stop, progress, [&] {
            rng.work();
            pool_bench::bump(slot.completed, 1, std::memory_order_relaxed);
        });
        sums_[static_cast<std::size_t>(worker)].value = rng.fib_sum;  // keeps the work observable
        return done;
    }
    check_result check(const std::vector<std::uint64_t>& completed) override {
        std::uint64_t reported = 0, ran = 0;
        for (const auto c : completed) reported += c;
        for (const auto& s : slots_) ran += s.completed.load();
        if (ran == 0) return {"no_items", "no item completed"};
        if (ran != reported)
            return {"wrong_count",
                    std::to_string(ran) + " items counted, the workers reported " + std::to_string(reported)};
        return {};
    }
    void measure(const repetition_facts& facts, metric_list& out) override {
        // The harness's CPU time is all of it here: the workers are the only threads.
        pool_bench::add_pool_metrics(facts, facts.cpu_ns, facts.per_worker->size(), out);
    }

private:
    static constexpr std::size_t max_threads = 4096;  // the CLI caps --workers here
    std::vector<pool_bench::item_slot> slots_ = std::vector<pool_bench::item_slot>(max_threads);
    std::vector<contend::cache_padded<std::uint64_t>> sums_ =
        std::vector<contend::cache_padded<std::uint64_t>>(max_threads);
};

}  // namespace

void append_pool_rows(std::vector<contender>& out, const std::string& name, const std::string& description,
                      bool has_local, const pool_maker& make) {
    for (const queue_kind queue : {queue_kind::global, queue_kind::local}) {
        if (queue == queue_kind::local && !has_local) continue;
        const std::string queue_name = queue == queue_kind::local ? "local" : "global";
        for (const std::uint32_t burst : pool_modes) {
            const std::string mode = burst == 0 ? "sustained" : "burst:" + std::to_string(burst);
            contender c;
            c.name = name;
            c.description = description + ", " + queue_name + " queue, " +
                            (burst == 0 ? std::string("sustained (every item posts one more)")
                                        : "bursts of " + std::to_string(burst) + " x threads items");
            c.params = {{"queue", queue_name}, {"mode", mode}};
            c.operation = "item";
            c.workload_type = make.workload_type;
            c.make = [make = make.make, queue, burst] { return make(queue, burst); };
            out.push_back(std::move(c));
        }
    }
}

suite make_pool_suite() {
    suite s{"pool",
            "work-item throughput of thread pools (.NET's ThreadPoolWorkThroughput): items of Fib(4..9) posted "
            "to the global or the local queue, sustained or in bursts; workers = the pool's threads",
            {},
            {static_cast<std::int32_t>(allowed_cpus().size())}};
    append_pool_rows(s.contenders, "contend", "contend::thread_pool, fixed size, no hill climbing", true,
                     pool_maker::of<contend_pool>());
    append_peer_pools(s.contenders);
    append_pool_rows(s.contenders, "mutex_pool", "std::mutex + condition_variable + deque of std::function", false,
                     pool_maker::of<mutex_pool>());
    contender reference;
    reference.name = "no_pool";
    reference.description = "the same items in a plain loop on each worker thread, no pool";
    reference.params = {{"queue", "none"}, {"mode", "sustained"}};
    reference.operation = "item";
    reference.workload_type = demangled_type_name<no_pool_loop>();
    reference.make = [] { return std::make_unique<no_pool_loop>(); };
    s.contenders.push_back(std::move(reference));
    // contend's pool at its plainest beside a nice-19 busy loop: a worker descheduled for the
    // co-tenant holds up the items queued behind it.
    add_busy_loop_row(s, "contend/queue:global/mode:sustained");
    // Beside one busy loop at normal priority, the co-tenant a shared machine has: the kernel
    // tends to leave two workers on one CPU and the loop on the other (docs/design/pool.md,
    // "Beside a co-tenant"). The mutex pool too, for the comparison.
    for (const char* id : {"contend/queue:global/mode:sustained", "contend/queue:local/mode:sustained",
                           "mutex_pool/queue:global/mode:sustained"})
        add_busy_loop_row(s, id, 1, 0);
    return s;
}

}  // namespace contend::lab
