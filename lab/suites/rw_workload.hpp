// The rw suite's workload: every worker reads or writes the shared table (rw_table.hpp)
// under one reader-writer lock, each operation a read with probability read_pct %, else a
// write (xorshift64, one stream per worker: two shifts and a compare, no division).
//
// A Lock here has the standard's SharedMutex names: lock, unlock, lock_shared, unlock_shared
// (the suite's adapters, rw.cpp and rw_peers.cpp, give each contender those).
//
// What a repetition records, each worker in its own slot (no shared counter in the loop):
//  - its reads, its writes and its torn reads;
//  - the wait of one write in wait_period (10 at 0 % reads, 5 at 50 %, every write from 90 %
//    up): the time-stamp counter (measure/tick_clock.hpp) read before lock() and after it
//    returns, the difference kept in a ring of the worker's last 16,384. A pair of reads costs
//    about 50 ns on the 2-CPU AMD EPYC VM, half of it inside the section, so at most about one
//    operation in ten is timed: a tiny section stays tiny, and a rare write is always timed.
// check() fails the repetition, and so the cell, on any torn read ("torn_read"), on a table
// left torn ("torn_table") or on a table that saw another number of writes than the workers
// made ("wrong_count": two writers were inside at once). measure() adds reads_per_second,
// writes_per_second and write_wait_p99_ns (not measured when the cell made no write).
// Fairness is the harness's, from the published progress, as for every lock cell.
// Internal to the lab.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "contend/cache_padded.hpp"
#include "measure/tick_clock.hpp"
#include "measure/workload.hpp"
#include "results/statistics.hpp"
#include "suites/rw_table.hpp"

namespace contend::lab {

// The section's work outside the table, in burn iterations per line (rw_table.hpp): none
// for tiny; for long, one microsecond's worth spread over the 64 lines.
std::uint64_t rw_work_per_line(rw_section s);

template <class Lock, rw_section Section>
class rw_workload final : public workload {
public:
    static constexpr std::size_t wait_samples = 16384;  // per worker: a power of two (a mask)

    explicit rw_workload(int read_pct)
        : read_below_(static_cast<std::uint64_t>(read_pct) * (std::uint64_t{1} << 32) / 100),
          wait_period_(read_pct >= 90 ? 1 : static_cast<std::uint32_t>((100 - read_pct) / 10)),
          work_per_line_(rw_work_per_line(Section)) {}

    void reset() override {
        table_.clear();
        for (auto& w : workers_) w.clear();
        rate_.start();
    }

    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        slot& me = my_slot(worker, progress.size());
        std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(worker + 1) | 1;
        std::uint32_t until_timed = 1;  // this worker's first write is timed
        const auto op = [&] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if ((x >> 32) < read_below_) {
                lock_.lock_shared();
                const bool torn = Section == rw_section::tiny ? table_.line_torn(x & (rw_table::lines - 1))
                                                              : table_.table_torn(work_per_line_);
                lock_.unlock_shared();
                me.torn += torn;
                ++me.reads;
            } else {
                const bool timed = --until_timed == 0;
                if (timed) until_timed = wait_period_;
                const std::uint64_t asked = timed ? read_ticks() : 0;
                lock_.lock();
                const std::uint64_t got = timed ? read_ticks() : 0;
                if constexpr (Section == rw_section::tiny) table_.write_line(x & (rw_table::lines - 1));
                else table_.write_all(work_per_line_);
                lock_.unlock();
                ++me.writes;
                if (timed) me.waits[me.timed++ & (wait_samples - 1)] = got - asked;
            }
        };
        // A long operation polls after each one (see run_polled), so fairness is not read in
        // multiples of 64 microsecond-long operations.
        if constexpr (Section == rw_section::tiny) return run_polled(worker, ops, stop, progress, op);
        else return run_polled<1>(worker, ops, stop, progress, op);
    }

    check_result check(const std::vector<std::uint64_t>& completed) override {
        std::uint64_t torn = 0, writes = 0;
        for (std::size_t i = 0; i < completed.size() && i < workers_.size(); ++i) {
            torn += workers_[i].torn;
            writes += workers_[i].writes;
        }
        if (torn > 0)
            return {"torn_read", std::to_string(torn) +
                                     " reads saw the table half written: the lock let a "
                                     "reader in beside a writer"};
        if (!table_.consistent(Section))
            return {"torn_table", "the table ended half written: two writers were inside at once"};
        if (const auto seen = table_.writes_seen(Section); seen != writes)
            return {"wrong_count", "the table saw " + std::to_string(seen) + " writes, the workers made " +
                                       std::to_string(writes) + ": two writers were inside at once"};
        return {};
    }

    void measure(const repetition_facts& facts, metric_list& out) override {
        std::uint64_t reads = 0, writes = 0;
        std::vector<double> waits;
        const double ticks_per_ns = rate_.per_ns();
        for (const auto& w : workers_) {
            reads += w.reads;
            writes += w.writes;
            const std::uint64_t kept = w.timed < wait_samples ? w.timed : wait_samples;
            for (std::uint64_t i = 0; i < kept; ++i) waits.push_back(static_cast<double>(w.waits[i]) / ticks_per_ns);
        }
        const double per_second = facts.wall_ns > 0 ? 1e9 / facts.wall_ns : not_measured;
        out.emplace_back("reads_per_second", static_cast<double>(reads) * per_second);
        out.emplace_back("writes_per_second", static_cast<double>(writes) * per_second);
        out.emplace_back("write_wait_p99_ns",
                         waits.empty() || ticks_per_ns <= 0 ? not_measured : quantile(std::move(waits), 0.99));
    }

private:
    // One worker's figures, on lines of its own; written by that worker only while it runs.
    struct alignas(contend::cache_line_size) slot {
        std::uint64_t reads = 0, writes = 0, torn = 0, timed = 0;
        std::vector<std::uint64_t> waits = std::vector<std::uint64_t>(wait_samples);  // in ticks
        void clear() { reads = writes = torn = timed = 0; }
    };
    // The worker's slot, made on its first run (outside the hot loop). A deque: growing it
    // leaves the slots other workers are using where they are.
    slot& my_slot(int worker, std::size_t workers) {
        std::lock_guard lk(slots_lock_);
        while (workers_.size() < workers) workers_.emplace_back();
        return workers_[static_cast<std::size_t>(worker)];
    }

    alignas(contend::cache_line_size) Lock lock_;
    rw_table table_;
    const std::uint64_t read_below_;  // a read when the top 32 bits of the draw are below this
    const std::uint32_t wait_period_;  // one write in this many is timed
    const std::uint64_t work_per_line_;
    std::mutex slots_lock_;
    std::deque<slot> workers_;
    tick_rate rate_;
};

const char* rw_section_name(rw_section s);

// One contender of the rw suite at one point of its grid: `name` at read_pct % reads, with
// Section's critical section.
template <class Lock, rw_section Section>
contender rw_point(const std::string& name, const std::string& description, int read_pct) {
    contender c;
    c.name = name;
    c.description =
        description + ", " + std::to_string(read_pct) + " % reads, " + rw_section_name(Section) + " critical section";
    c.is_lock = true;  // the harness reports each worker's share
    c.params = {{"read_pct", std::to_string(read_pct)}, {"cs", rw_section_name(Section)}};
    c.workload_type = demangled_type_name<rw_workload<Lock, Section>>();
    c.operation = "access";  // one read or one write
    c.make = [read_pct]() -> std::unique_ptr<workload> {
        return std::make_unique<rw_workload<Lock, Section>>(read_pct);
    };
    return c;
}

// The read shares of the grid, in row order.
inline constexpr int rw_read_pcts[] = {0, 50, 90, 99, 100};

// Every point of the grid for one lock: each read share, tiny then long.
template <class Lock>
void append_rw_points(std::vector<contender>& out, const std::string& name, const std::string& description) {
    for (const int pct : rw_read_pcts) out.push_back(rw_point<Lock, rw_section::tiny>(name, description, pct));
    for (const int pct : rw_read_pcts) out.push_back(rw_point<Lock, rw_section::long_work>(name, description, pct));
}

}  // namespace contend::lab
