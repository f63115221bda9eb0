// The monitor suite: the Monitor scenarios of the dotnet/runtime thin-lock PR (enter/exit, try-enter/exit when
// unlocked, try-enter when another thread holds the lock) for thin_lock, a thin_lock inflated beforehand (fat),
// a thin_lock inflated under contention and deflated once idle, monitor:: on an address, and
// contend::mutex and std::recursive_mutex beside them. Rows:
// monitor/<lock>/scenario:<scenario>/workers:N.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "contend/monitor.hpp"
#include "contend/mutex.hpp"
#include "contend/thin_lock.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// --- the locks, one interface: lock / try_lock / unlock, and prepare() before a run --------
struct thin_adapter {
    contend::thin_lock l;
    void prepare() {}
    void lock() { l.lock(); }
    bool try_lock() { return l.try_lock(); }
    void unlock() { l.unlock(); }
};
// Inflated once, before the first repetition, by recursing past the thin count.
struct fat_adapter {
    contend::thin_lock l;
    void prepare() {
        if (l.is_inflated()) return;
        for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.lock();
        for (unsigned i = 0; i <= contend::thin_lock::max_thin_recursion + 1; ++i) l.unlock();
    }
    void lock() { l.lock(); }
    bool try_lock() { return l.try_lock(); }
    void unlock() { l.unlock(); }
};
// Inflated under contention once (a second thread parks on it), then left alone for two
// deflation sweeps (thin_lock::deflate_idle_locks, what the background sweeps do after one
// to two idle intervals): a lock contended during start-up, used by one thread since.
struct deflated_adapter {
    contend::thin_lock l;
    bool prepared = false;
    void prepare() {
        if (prepared) return;
        prepared = true;
        // On a loaded machine the contender may not have parked in 5 ms (it then takes the
        // thin lock without inflating it): try again, a bounded number of times.
        for (int attempt = 0; attempt < 20 && !l.is_inflated(); ++attempt) {
            l.lock();
            std::thread contender([this] {
                l.lock();
                l.unlock();
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past its spin: it parks
            l.unlock();
            contender.join();
        }
        if (!l.is_inflated()) throw std::runtime_error("deflated_lock: the contended lock did not inflate in 20 tries");
        contend::thin_lock::deflate_idle_locks();
        contend::thin_lock::deflate_idle_locks();
        if (l.is_inflated()) throw std::runtime_error("deflated_lock: two sweeps left the idle lock fat");
    }
    void lock() { l.lock(); }
    bool try_lock() { return l.try_lock(); }
    void unlock() { l.unlock(); }
};
struct monitor_adapter {
    alignas(64) char object = 0;  // any address; never written
    void prepare() {}
    void lock() { contend::monitor::enter(&object); }
    bool try_lock() { return contend::monitor::try_enter(&object); }
    void unlock() { contend::monitor::exit(&object); }
};
struct mutex_adapter {
    contend::mutex m;
    void prepare() {}
    void lock() { m.lock(); }
    bool try_lock() { return m.try_lock(); }
    void unlock() { m.unlock(); }
};
struct recursive_mutex_adapter {
    std::recursive_mutex m;
    void prepare() {}
    void lock() { m.lock(); }
    bool try_lock() { return m.try_lock(); }
    void unlock() { m.unlock(); }
};

enum class scenario { enter_exit, try_enter_exit_unlocked, try_enter_when_locked };

// Every operation is counted: a success increments the shared counter under the lock, a
// failed try increments the worker's own failure count; the two must add up exactly.
template <class Lock, scenario S>
class monitor_workload final : public counting_workload {
public:
    ~monitor_workload() override { stop_holder(); }
    void reset() override {
        counter_ = 0;
        failures_.store(0, std::memory_order_relaxed);
        lock_.prepare();
        if constexpr (S == scenario::try_enter_when_locked) start_holder();
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        std::uint64_t failed = 0;  // this worker's failed tries, added to the total once
        const auto done = run_polled(worker, ops, stop, progress, [&] {
            if constexpr (S == scenario::enter_exit) {
                lock_.lock();
                counter_ = counter_ + 1;
                lock_.unlock();
            } else if (lock_.try_lock()) {
                counter_ = counter_ + 1;
                lock_.unlock();
            } else {
                ++failed;
            }
        });
        failures_.fetch_add(failed, std::memory_order_relaxed);
        return done;
    }
    std::uint64_t observed_total() override { return counter_ + failures_.load(); }

private:
    // A thread that holds the lock for the whole cell, so every try by a worker meets a
    // lock held elsewhere (MonitorTryEnterWhenLocked of the dotnet/runtime thin-lock PR).
    void start_holder() {
        if (holder_.joinable()) return;
        std::unique_lock lk(m_);
        holder_ = std::thread([this] {
            lock_.lock();
            std::unique_lock hold(m_);
            held_ = true;
            cv_.notify_all();
            cv_.wait(hold, [this] { return release_; });
            hold.unlock();
            lock_.unlock();
        });
        cv_.wait(lk, [this] { return held_; });
    }
    void stop_holder() {
        if (!holder_.joinable()) return;
        {
            std::lock_guard lk(m_);
            release_ = true;
        }
        cv_.notify_all();
        holder_.join();
    }

    alignas(contend::cache_line_size) Lock lock_;
    alignas(contend::cache_line_size) std::uint64_t counter_ = 0;
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> failures_{0};
    std::thread holder_;
    std::mutex m_;
    std::condition_variable cv_;
    bool held_ = false, release_ = false;
};

const char* scenario_name(scenario s) {
    switch (s) {
        case scenario::enter_exit:
            return "enter_exit";
        case scenario::try_enter_exit_unlocked:
            return "try_enter_exit_unlocked";
        case scenario::try_enter_when_locked:
            return "try_enter_when_locked";
    }
    return "?";
}

template <class Lock, scenario S>
contender point(const std::string& lock_name, const std::string& description) {
    contender c;
    c.name = lock_name;
    c.description = description + ", " + scenario_name(S);
    c.is_lock = true;
    c.params = {{"scenario", scenario_name(S)}};
    c.workload_type = demangled_type_name<monitor_workload<Lock, S>>();
    c.operation = "call";  // one enter+exit, or one try_enter (+exit)
    c.make = [] { return std::make_unique<monitor_workload<Lock, S>>(); };
    return c;
}

template <class Lock>
void add_lock(std::vector<contender>& out, const std::string& name, const std::string& description) {
    out.push_back(point<Lock, scenario::enter_exit>(name, description));
    out.push_back(point<Lock, scenario::try_enter_exit_unlocked>(name, description));
    out.push_back(point<Lock, scenario::try_enter_when_locked>(name, description));
}

}  // namespace

suite make_monitor_suite() {
    suite s{"monitor",
            "the Monitor scenarios of the dotnet/runtime thin-lock PR: enter/exit, try-enter/exit when unlocked, "
            "try-enter when another "
            "thread holds the lock; thin_lock, an inflated thin_lock, monitor:: on an address, contend::mutex, "
            "std::recursive_mutex",
            {},
            {1, 4}};
    add_lock<thin_adapter>(s.contenders, "thin_lock", "contend::thin_lock");
    add_lock<fat_adapter>(s.contenders, "fat_lock", "contend::thin_lock inflated beforehand");
    add_lock<deflated_adapter>(s.contenders, "deflated_lock",
                               "contend::thin_lock inflated under contention, then deflated while idle");
    add_lock<monitor_adapter>(s.contenders, "monitor", "contend::monitor on an address");
    add_lock<mutex_adapter>(s.contenders, "contend_mutex", "contend::mutex");
    add_lock<recursive_mutex_adapter>(s.contenders, "recursive_mutex", "std::recursive_mutex");
    return s;
}

}  // namespace contend::lab
