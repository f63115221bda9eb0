// The sharing suite isolates what every contender must manage: one cache line written by
// several cores. Each worker increments a counter of its own, packed 8 to a line (false
// sharing) or padded to a line each, beside one truly shared atomic.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

inline constexpr std::size_t max_private_workers = 4096;  // the CLI caps --workers here

// Each worker increments a counter that only it writes, with an ordinary load and store
// (no locked instruction): Slot is the counter alone (8 per cache line: false sharing) or
// the counter padded to a line of its own.
template <class Slot>
class private_counters final : public counting_workload {
public:
    void reset() override {
        for (std::size_t i = 0; i < max_private_workers; ++i) counter(i).store(0, std::memory_order_relaxed);
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& mine = counter(static_cast<std::size_t>(worker));
        return run_polled(worker, ops, stop, progress,
                          [&mine] { mine.store(mine.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); });
    }
    std::uint64_t observed_total() override {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < max_private_workers; ++i) sum += counter(i).load();
        return sum;
    }

private:
    std::atomic<std::uint64_t>& counter(std::size_t i) {
        if constexpr (sizeof(Slot) == sizeof(std::atomic<std::uint64_t>)) return slots_[i];
        else return slots_[i].value;
    }
    alignas(contend::cache_line_size) std::array<Slot, max_private_workers> slots_{};
};

template <class Slot>
contender private_contender(std::string name, std::string description) {
    return {std::move(name),
            std::move(description),
            false,
            [] { return std::make_unique<private_counters<Slot>>(); },
            {},
            demangled_type_name<private_counters<Slot>>()};
}

}  // namespace

suite make_sharing_suite() {
    return {"sharing",
            "every worker increments a counter of its own, 8 to a cache line (packed) or one per line (padded), "
            "against one truly shared atomic",
            {
                private_contender<std::atomic<std::uint64_t>>("packed", "private counters, 8 per cache line"),
                private_contender<contend::cache_padded<std::atomic<std::uint64_t>>>("padded",
                                                                                     "private counters, one per line"),
                atomic_contender<fetch_add_relaxed>("shared", "one shared counter, relaxed fetch_add"),
            },
            {1, 2, 64}};
}

}  // namespace contend::lab
