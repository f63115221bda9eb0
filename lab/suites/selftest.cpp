// The selftest suite: contenders that fail in each way the harness must catch (a lost
// increment, a stall that polls, a deadlock that does not). Hidden from --list; the
// harness's and the CLI's tests run it.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

class miscounting final : public counting_workload {
public:
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        const auto done =
            run_polled(worker, ops, stop, progress, [this] { counter_.fetch_add(1, std::memory_order_relaxed); });
        if (worker == 0) counter_.fetch_sub(1);  // loses one increment per repetition
        return done;
    }
    std::uint64_t observed_total() override { return counter_.load(); }

private:
    std::atomic<std::uint64_t> counter_{0};
};

// Stops making progress but keeps polling: the harness's deadline catches it in-process.
class stalling_polite final : public counting_workload {
public:
    void reset() override {}
    std::uint64_t run(int worker, std::uint64_t, const std::atomic<bool>& stop, progress_counters& progress) override {
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        progress[static_cast<std::size_t>(worker)].value.store(0);
        return 0;
    }
    std::uint64_t observed_total() override { return 0; }
};

// Deadlocks for good (never polls): only killing its process ends it.
class deadlocked final : public counting_workload {
public:
    void reset() override {}
    std::uint64_t run(int, std::uint64_t, const std::atomic<bool>&, progress_counters&) override {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::uint64_t observed_total() override { return 0; }
};

template <class W>
contender custom(std::string name, std::string description, bool is_lock) {
    return {std::move(name),         std::move(description), is_lock, [] { return std::make_unique<W>(); }, {},
            demangled_type_name<W>()};
}

}  // namespace

suite make_selftest_suite() {
    return {"selftest",
            "the harness's failure modes, for its tests",
            {
                atomic_contender<fetch_add_relaxed>("ok", "a correct contender"),
                custom<miscounting>("miscount", "loses one increment per repetition", false),
                custom<stalling_polite>("stall_polite", "stops progressing, but polls the deadline", true),
                custom<deadlocked>("deadlock", "blocks forever without polling", true),
            },
            {1, 2},
            true};
}

}  // namespace contend::lab
