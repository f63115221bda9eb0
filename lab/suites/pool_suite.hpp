// The pool suite's rows, shared by the suite (pool.cpp) and the peers' pools
// (suites/pool_peers.cpp): one row per queue and mode of a pool. Internal to the lab.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure/workload.hpp"
#include "suites/pool_workload.hpp"
#include "suites/suites.hpp"

namespace contend::lab {

// The modes of every pool: 0 is sustained; N is bursts of N x threads items.
inline constexpr std::array<std::uint32_t, 6> pool_modes{0, 1, 4, 16, 64, 256};

// How to build a pool's workload for a queue and a mode, and the workload's type (for
// `contend disasm`).
struct pool_maker {
    std::function<std::unique_ptr<workload>(pool_bench::queue_kind, std::uint32_t)> make;
    std::string workload_type;

    template <class Pool>
    static pool_maker of() {
        using w = pool_bench::pool_throughput<Pool>;
        return {[](pool_bench::queue_kind queue, std::uint32_t burst) -> std::unique_ptr<workload> {
                    return std::make_unique<w>(queue, burst);
                },
                demangled_type_name<w>()};
    }
};

// Appends pool/<name>/queue:<q>/mode:<m> for every mode, on the global queue and, when
// has_local, on the local one.
void append_pool_rows(std::vector<contender>& out, const std::string& name, const std::string& description,
                      bool has_local, const pool_maker& make);

// The plainest pool: `threads` std::threads around one std::mutex, one
// std::condition_variable and a std::deque<std::function<void()>>. One queue, so it has no
// local rows. The destructor lets the workers empty the queue, then joins them. In this header
// (not pool.cpp) for the suite tests, whose fault-injecting pool wraps it.
class mutex_pool {
public:
    explicit mutex_pool(int threads) {
        for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~mutex_pool() {
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto& t : workers_) t.join();
    }
    mutex_pool(const mutex_pool&) = delete;
    mutex_pool& operator=(const mutex_pool&) = delete;

    template <class F>
    void post(F&& f, pool_bench::queue_kind, bool) {
        {
            std::lock_guard lk(m_);
            queue_.emplace_back(std::forward<F>(f));
        }
        cv_.notify_one();
    }

private:
    void work() {
        std::unique_lock lk(m_);
        for (;;) {
            cv_.wait(lk, [this] { return !queue_.empty() || stopping_; });
            if (queue_.empty()) return;
            std::function<void()> item = std::move(queue_.front());
            queue_.pop_front();
            lk.unlock();
            item();
            lk.lock();
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

// pool.cpp: the suite, registered in registry.cpp.
suite make_pool_suite();

}  // namespace contend::lab
