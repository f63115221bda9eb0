// What a contender is to the harness: a workload that N workers run together.
//
// The hot loop lives inside run(), compiled per contender (templates below), so the
// harness pays one virtual call per worker per repetition, never one per operation. The
// loop checks the stop flag and publishes its progress every `poll_every` operations (or
// after each, when operations are long; see run_polled): a
// stalled cell can then be stopped at its deadline, and fairness can be read while the
// workers still run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "measure/cotenant.hpp"
#include "results/results.hpp"

namespace contend::lab {

inline constexpr std::uint64_t poll_every = 64;

// Per-worker progress, each on its own line: written by its worker only.
using progress_counters = std::vector<contend::cache_padded<std::atomic<std::uint64_t>>>;

// What a workload says of a repetition's work: nothing (status empty) when it is all
// accounted for, otherwise why not. The status names the kind of failure ("wrong_count",
// "checksum_mismatch", "items_lost"); the detail says what was found.
struct check_result {
    std::string status;
    std::string detail;
    bool ok() const { return status.empty(); }
};

// What the harness measured of one repetition, for a workload's own metrics.
struct repetition_facts {
    double wall_ns = 0;  // gate opening to the last worker's finish
    double cpu_ns = 0;  // the workers' CPU time, summed
    std::uint64_t completed = 0;  // operations, all workers
    const std::vector<std::uint64_t>* per_worker = nullptr;  // operations of each worker
};

// The workload contract. A workload states:
//  - its operation (contender::operation: what one unit of run() is, for "ns per ...");
//  - its validity check, run after every repetition, calibration included: a lock's
//    counter must equal the operations completed (counting_workload below), a pipe's bytes
//    must arrive with their checksum, a pool's items must all be accounted for;
//  - its extra metrics (items_per_ms, bytes_per_second, contentions_per_second, latency
//    percentiles...), measured per timed repetition; the cell keeps the median of each,
//    and the results model, the history and the report carry them by name.
class workload {
public:
    virtual ~workload() = default;
    // Called before each repetition, outside the timed interval.
    virtual void reset() = 0;
    // Worker `worker` performs `ops` operations, or fewer if `stop` becomes true; it
    // stores its completed count in progress[worker] at least every poll_every operations
    // and at the end. Returns the number completed.
    virtual std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                              progress_counters& progress) = 0;
    // After a repetition in which worker i completed completed[i] operations.
    virtual check_result check(const std::vector<std::uint64_t>& completed) = 0;
    // Appends this repetition's metrics, (name, value), names as check_metric_name
    // (results.hpp) allows, the same names in every repetition. Default: none.
    virtual void measure(const repetition_facts& facts, metric_list& out) {
        (void)facts;
        (void)out;
    }
    // The CPU time this repetition's operations cost, for cpu_ns_per_op. Default: the
    // harness's worker threads, summed. A workload whose work runs on threads the harness
    // does not own (a thread pool's workers) measures its own and returns it here.
    virtual double cpu_ns(const repetition_facts& facts) const { return facts.cpu_ns; }
};

// The contract of a shared counter (every lock and atomic contender): the counter's final
// value must equal what the workers' completed operations add up to.
class counting_workload : public workload {
public:
    // The value the shared counter ended with.
    virtual std::uint64_t observed_total() = 0;
    // What observed_total() must equal after a repetition in which worker i completed
    // completed[i] operations. One increment per operation unless a workload says
    // otherwise (the tax suite's operation is a work item, not an increment).
    virtual std::uint64_t expected_total(const std::vector<std::uint64_t>& completed) const {
        std::uint64_t sum = 0;
        for (const auto c : completed) sum += c;
        return sum;
    }
    check_result check(const std::vector<std::uint64_t>& completed) final {
        const std::uint64_t observed = observed_total(), expected = expected_total(completed);
        if (observed == expected) return {};
        std::uint64_t done = 0;
        for (const auto c : completed) done += c;
        return {"wrong_count", "counter ended at " + std::to_string(observed) + ", expected " +
                                   std::to_string(expected) + " from the workers' " + std::to_string(done) +
                                   " completed operations"};
    }
};

struct harness_options;  // harness.hpp

struct contender {
    std::string name;  // row name part: lower case, words joined by '_'
    std::string description;
    bool is_lock = false;  // lock cells report fairness
    std::function<std::unique_ptr<workload>()> make;
    // Parameters of this point of a sweep, in row-name order (e.g. {"cs_us", "20"}).
    std::vector<std::pair<std::string, std::string>> params = {};
    // The demangled name of the workload class whose run() holds the hot loop, as
    // objdump -C prints it (for `contend disasm`); empty when unknown.
    std::string workload_type = {};
    // What one operation of run() is, for "ns per <operation>" (results.hpp).
    std::string operation = "increment";
    // A contender whose work is not operations that harness workers run (the server suite:
    // a load applied by another process for a fixed time) measures its cells itself:
    // run_cell_in_process calls this instead of calibrating and repeating make()'s workload. It must
    // keep the cell model (one sample per repetition, on_repetition after each, a failed
    // check making the cell invalid with its reason). Empty for every other contender.
    std::function<cell_result(const contender& self, const std::string& suite, std::int32_t workers,
                              const harness_options& options)>
        measure_cell = {};
    // What this row runs beside, besides the run's own co-tenant: a suite's busy-loop row
    // (busy_loop_row in suites.hpp) carries its busy loops here and in its parameters.
    cotenant_options cotenant = {};

    // Unique within a suite: the name plus "/key:value" per parameter (format_id).
    std::string id() const { return format_id(name, params); }
};

// The body shared by every contender: do `op` `ops` times, polling every `Every`
// operations. Cheap operations poll every poll_every, so the poll stays out of the loop's
// cost; an operation that lasts microseconds (the hold suite's) polls after each one, or
// fairness, read from the published progress, would see only multiples of 64.
template <std::uint64_t Every = poll_every, class Op>
std::uint64_t run_polled(int worker, std::uint64_t ops, const std::atomic<bool>& stop, progress_counters& progress,
                         Op&& op) {
    auto& mine = progress[static_cast<std::size_t>(worker)].value;
    std::uint64_t done = 0;
    while (done < ops) {
        const std::uint64_t chunk = ops - done < Every ? ops - done : Every;
        for (std::uint64_t i = 0; i < chunk; ++i) op();
        done += chunk;
        mine.store(done, std::memory_order_relaxed);
        if (stop.load(std::memory_order_relaxed)) break;
    }
    return done;
}

// A lock contender: the lock word and the plain counter on separate lines (the sleeping-spinlock study,
// docs/references.md).
template <class Lock>
class locked_counter final : public counting_workload {
public:
    void reset() override { counter_ = 0; }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        return run_polled(worker, ops, stop, progress, [this] {
            lock_.lock();
            counter_ = counter_ + 1;
            lock_.unlock();
        });
    }
    std::uint64_t observed_total() override { return counter_; }

private:
    alignas(contend::cache_line_size) Lock lock_;
    alignas(contend::cache_line_size) std::uint64_t counter_ = 0;
};

// A direct-atomic contender: one aligned counter, updated by `Increment`.
template <class Increment>
class atomic_counter final : public counting_workload {
public:
    void reset() override { counter_.store(0); }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        return run_polled(worker, ops, stop, progress, [this] { Increment{}(counter_); });
    }
    std::uint64_t observed_total() override { return counter_.load(); }

private:
    alignas(contend::cache_line_size) std::atomic<std::uint64_t> counter_{0};
};

// locked_work::burn, compiled once (work_rate.cpp) at a 64-byte boundary: every lock's
// section, and the rate's measurement, run the same bytes. Inlined into each contender's
// run(), the loop's address differed by contender, and so could its speed (rw_table.cpp).
void burn_work(std::uint64_t iterations) noexcept;

// A lock contender whose critical section also burns `work_iterations` of dependent
// arithmetic (calibrated by the hold suite to microseconds of CPU work that, unlike a
// clock-polling loop, does not shrink when the holder is preempted).
template <class Lock>
class locked_work final : public counting_workload {
public:
    explicit locked_work(std::uint64_t work_iterations) : work_(work_iterations) {}
    void reset() override { counter_ = 0; }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        return run_polled<1>(worker, ops, stop, progress, [this] {
            lock_.lock();
            burn_work(work_);
            counter_ = counter_ + 1;
            lock_.unlock();
        });
    }
    std::uint64_t observed_total() override { return counter_; }

    static void burn(std::uint64_t iterations) {
        std::uint64_t x = iterations;
        for (std::uint64_t i = 0; i < iterations; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            asm volatile("" : "+r"(x));  // keep the chain: the compiler may not fold it
        }
    }

private:
    alignas(contend::cache_line_size) Lock lock_;
    alignas(contend::cache_line_size) std::uint64_t counter_ = 0;
    std::uint64_t work_;
};

// T's name as objdump -C prints it in the symbols of T's member functions: T's mangled
// name (typeid) demangled by the same Itanium-ABI demangler. __PRETTY_FUNCTION__ spelled
// it otherwise for a template on an enum constant (by name, where objdump prints a cast
// number), for unsigned long (long unsigned int) and for anonymous namespaces ("<unnamed>"
// in one place, "{anonymous}" in another), and `contend disasm` then found no function.
std::string demangled_type_name(const char* mangled);
template <class T>
std::string demangled_type_name() {
    return demangled_type_name(typeid(T).name());
}

template <class Lock>
contender lock_contender(std::string name, std::string description) {
    return {std::move(name),
            std::move(description),
            true,
            [] { return std::make_unique<locked_counter<Lock>>(); },
            {},
            demangled_type_name<locked_counter<Lock>>()};
}

// Iterations of locked_work::burn per microsecond on this machine (measure/work_rate.cpp):
// measured once per process, unless the parent gave it with set_burn_iterations_per_us.
double burn_iterations_per_us();
// Makes every later burn_iterations_per_us() return `rate` (> 0, finite): `contend bench`
// measures the rate once and hands it to every cell's process, so that every lock of a
// run burns the same work (a rate measured per cell would differ by a few percent from
// cell to cell, which is the size of the differences the hold suite looks for).
void set_burn_iterations_per_us(double rate);

// One lock contender per point of a suite's parameter `key`: `describe(v)` is appended to
// the description, `make(v)` builds the workload (of type Workload, whose run() holds the
// hot loop that `contend disasm` looks for).
template <class Workload, class Value, class Describe, class Make>
void append_lock_points(std::vector<contender>& out, const std::string& name, const std::string& description,
                        const char* key, std::initializer_list<Value> values, Describe describe, Make make) {
    for (const Value v : values) {
        contender c;
        c.name = name;
        c.description = description + describe(v);
        c.is_lock = true;
        c.params = {{key, std::to_string(v)}};
        c.workload_type = demangled_type_name<Workload>();
        c.make = [make, v]() -> std::unique_ptr<workload> { return make(v); };
        out.push_back(std::move(c));
    }
}

// The hold suite's points for one lock: critical sections of 0, 1, 20 and 200 us (or of
// 0 and 1 only, `short_only`: the mutex's fixed spin rows, which only short holds tell apart).
template <class Lock>
void append_hold_points(std::vector<contender>& out, const std::string& name, const std::string& description,
                        bool short_only = false) {
    append_lock_points<locked_work<Lock>, int>(
        out, name, description, "cs_us",
        short_only ? std::initializer_list<int>{0, 1} : std::initializer_list<int>{0, 1, 20, 200},
        [](int cs_us) { return ", " + std::to_string(cs_us) + " us of work inside"; },
        [](int cs_us) {
            const auto iterations = static_cast<std::uint64_t>(burn_iterations_per_us() * cs_us);
            return std::make_unique<locked_work<Lock>>(iterations);
        });
}

// Many locks: a table of `stripes` (lock, counter) pairs laid out as a program lays out a
// striped table (not padded: neighbouring stripes share cache lines). Each operation picks
// a stripe at random (xorshift64, one stream per worker) and increments its counter under
// its lock. With few stripes and more workers than CPUs, a holder is often preempted while
// others want its stripe; with many, most acquisitions find the lock free. The count is a
// power of two, so a stripe is picked with a mask: a `%` would put a 64-bit division
// (tens of cycles) into every operation of every contender.
//
// The table starts on a cache line for every lock type, so every contender gets the same
// placement: a `new stripe[n]` puts an array cookie (the element count, 8 bytes) first when
// the lock has a destructor, which moved each stripe by 8 bytes and split one stripe in four
// across two lines (lock on one, counter on the next): the same contend::mutex measured
// 10 to 25 % slower at 64 and 1,024 stripes inside a wrapper with a destructor than bare.
template <class Lock>
class striped_counters final : public counting_workload {
public:
    explicit striped_counters(std::size_t stripes) : count_(stripes) {
        if (stripes == 0 || (stripes & (stripes - 1)) != 0)
            throw std::invalid_argument("the stripe count must be a power of two");
        // What `new stripe[n]` checks for itself: the size must not wrap around.
        if (stripes > std::numeric_limits<std::size_t>::max() / sizeof(stripe)) throw std::bad_array_new_length();
        stripes_ = static_cast<stripe*>(::operator new(stripes * sizeof(stripe), table_alignment));
        std::size_t made = 0;
        try {
            for (; made < stripes; ++made) ::new (static_cast<void*>(stripes_ + made)) stripe;
        } catch (...) {
            destroy(made);
            throw;
        }
    }
    ~striped_counters() override { destroy(count_); }
    const void* table() const noexcept { return stripes_; }  // for the placement test
    striped_counters(const striped_counters&) = delete;
    striped_counters& operator=(const striped_counters&) = delete;
    void reset() override {
        for (std::size_t i = 0; i < count_; ++i) stripes_[i].count = 0;
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(worker + 1) | 1;
        return run_polled(worker, ops, stop, progress, [&] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            stripe& s = stripes_[x & (count_ - 1)];
            s.lock.lock();
            s.count = s.count + 1;
            s.lock.unlock();
        });
    }
    std::uint64_t observed_total() override {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < count_; ++i) sum += stripes_[i].count;
        return sum;
    }

private:
    struct stripe {
        Lock lock;
        std::uint64_t count = 0;
    };
    static constexpr std::align_val_t table_alignment{contend::cache_line_size};
    void destroy(std::size_t made) noexcept {
        while (made > 0) stripes_[--made].~stripe();
        ::operator delete(stripes_, table_alignment);
    }
    stripe* stripes_ = nullptr;
    std::size_t count_;
};

// The striped suite's points for one lock: 1 to 65,536 locks.
template <class Lock>
void append_striped_points(std::vector<contender>& out, const std::string& name, const std::string& description) {
    append_lock_points<striped_counters<Lock>, std::size_t>(
        out, name, description, "locks", {1, 4, 16, 64, 1024, 65536},
        [](std::size_t locks) { return ", one of " + std::to_string(locks) + " locks at random"; },
        [](std::size_t locks) { return std::make_unique<striped_counters<Lock>>(locks); });
}

// How a suite runs its list of locks: around one plain increment (counter), around 0 to
// 200 us of work (hold), or as a table of many locks (striped). The suites run the same
// list of locks (suites/locks.cpp).
enum class lock_use { counter, hold, striped };

template <class Lock>
void append_lock(std::vector<contender>& out, lock_use use, std::string name, std::string description) {
    switch (use) {
        case lock_use::counter:
            out.push_back(lock_contender<Lock>(std::move(name), std::move(description)));
            break;
        case lock_use::hold:
            append_hold_points<Lock>(out, name, description);
            break;
        case lock_use::striped:
            append_striped_points<Lock>(out, name, description);
            break;
    }
}

template <class Increment>
contender atomic_contender(std::string name, std::string description) {
    return {std::move(name),
            std::move(description),
            false,
            [] { return std::make_unique<atomic_counter<Increment>>(); },
            {},
            demangled_type_name<atomic_counter<Increment>>()};
}

}  // namespace contend::lab
