// The tax suite puts local work around the shared word and reports ns per work item, so
// a primitive's cost is seen at a realistic update rate: one shared increment every 0.01
// to 10,000 work items.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "suites/primitives.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// The shared word of the tax suite, behind one primitive.
template <class Increment>
struct atomic_shared {
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> value{0};
    void increment() { Increment{}(value); }
    std::uint64_t read() const { return value.load(); }
    void clear() { value.store(0); }
};

template <class Lock>
struct locked_shared {
    alignas(contend::cache_line_size) Lock lock;
    alignas(contend::cache_line_size) std::uint64_t value = 0;
    void increment() {
        lock.lock();
        value = value + 1;
        lock.unlock();
    }
    std::uint64_t read() const { return value; }
    void clear() { value = 0; }
};

// One operation is one work item: a dependent multiply-add on a worker-local value (the
// same instructions for every primitive, kept by an empty asm). With a ratio r below 1,
// each item also makes 1/r shared increments; with r >= 1, every r-th item of a worker
// makes one.
template <class Shared>
class taxed_work final : public counting_workload {
public:
    taxed_work(std::uint64_t increments_per_item, std::uint64_t items_per_increment)
        : per_item_(increments_per_item), every_(items_per_increment) {}
    void reset() override { shared_.clear(); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        std::uint64_t x = static_cast<std::uint64_t>(worker) + 1;
        std::uint64_t countdown = every_;
        return run_polled(worker, ops, stop, progress, [&] {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            asm volatile("" : "+r"(x));
            if (per_item_ != 0) {
                for (std::uint64_t i = 0; i < per_item_; ++i) shared_.increment();
            } else if (--countdown == 0) {
                shared_.increment();
                countdown = every_;
            }
        });
    }
    std::uint64_t observed_total() override { return shared_.read(); }
    std::uint64_t expected_total(const std::vector<std::uint64_t>& completed) const override {
        std::uint64_t sum = 0;
        for (const auto c : completed) sum += per_item_ != 0 ? c * per_item_ : c / every_;
        return sum;
    }

private:
    Shared shared_;
    std::uint64_t per_item_;  // increments per item, when the ratio is below 1; else 0
    std::uint64_t every_;  // items per increment, when the ratio is at least 1
};

struct tax_ratio {
    const char* label;  // work items per shared increment, as the row names it
    std::uint64_t increments_per_item;
    std::uint64_t items_per_increment;
};
constexpr std::array<tax_ratio, 7> tax_ratios{{{"0.01", 100, 1},
                                               {"0.1", 10, 1},
                                               {"1", 0, 1},
                                               {"10", 0, 10},
                                               {"100", 0, 100},
                                               {"1000", 0, 1000},
                                               {"10000", 0, 10000}}};

template <class Shared>
void add_tax_points(std::vector<contender>& out, const std::string& name, const std::string& description,
                    bool is_lock) {
    for (const auto& r : tax_ratios) {
        contender c;
        c.name = name;
        c.description = description + ", one shared increment per " + r.label + " work items";
        c.is_lock = is_lock;
        c.params = {{"items_per_inc", r.label}};
        c.workload_type = demangled_type_name<taxed_work<Shared>>();
        c.operation = "work_item";
        c.make = [r] { return std::make_unique<taxed_work<Shared>>(r.increments_per_item, r.items_per_increment); };
        out.push_back(std::move(c));
    }
}

}  // namespace

suite make_tax_suite() {
    suite s{"tax",
            "local work with one shared increment every 0.01 to 10,000 work items: ns per work item, per primitive",
            {},
            {2, 64}};
    add_tax_points<atomic_shared<fetch_add_relaxed>>(s.contenders, "fetch_add_relaxed", "relaxed fetch_add", false);
    add_tax_points<atomic_shared<cas_backoff_sleep>>(s.contenders, "cas_backoff", "CAS, 1 ns nanosleep on failure",
                                                     false);
    add_tax_points<locked_shared<contend::sleeping_spin_lock>>(s.contenders, "sleeping_spin_lock", "sleeping spin lock",
                                                               true);
    add_tax_points<locked_shared<std::mutex>>(s.contenders, "std_mutex", "std::mutex", true);
    add_tax_points<locked_shared<contend::mutex>>(s.contenders, "contend_mutex", "contend::mutex", true);
    return s;
}

}  // namespace contend::lab
