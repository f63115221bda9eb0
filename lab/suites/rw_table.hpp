// The rw suite's shared table: 64 cache lines, each carrying a version at both of its ends.
// A write sets versions, a read checks them; a read that finds two that disagree saw a write
// half done, which a reader-writer lock exists to prevent (a "torn" read).
//
// Two lengths of critical section:
//  - tiny: one line, picked by the caller: a write bumps its version (two stores), a read
//    loads both ends (two loads). A few ns when the line is in cache.
//  - long: the whole table, with 1/64 of the section's calibrated work after each line, so the
//    section lasts about `work` in all (the hold suite's burn, which a preempted holder does
//    not shorten). A write gives every line the next version; a read checks that all 128
//    words carry one version.
//
// The words are relaxed atomics: on x86-64 and arm64 the same plain loads and stores, but a
// lock that fails to exclude (the test's broken lock) makes a torn read, not undefined
// behaviour, and ThreadSanitizer stays quiet about the table itself.
// Internal to the lab.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "contend/cache_padded.hpp"
#include "measure/workload.hpp"

namespace contend::lab {

enum class rw_section { tiny, long_work };

class rw_table {
public:
    static constexpr std::size_t lines = 64;

    void clear() noexcept {
        for (auto& l : lines_) {
            l.first.store(0, std::memory_order_relaxed);
            l.last.store(0, std::memory_order_relaxed);
        }
    }

    // tiny: line `i` (below `lines`) gets its next version, first word first.
    void write_line(std::size_t i) noexcept {
        auto& l = lines_[i];
        const std::uint64_t v = l.first.load(std::memory_order_relaxed) + 1;
        l.first.store(v, std::memory_order_relaxed);
        l.last.store(v, std::memory_order_relaxed);
    }
    // tiny: whether line `i` is torn. Read last word first, the reverse of the write, so
    // that a write running alongside is caught between its two stores.
    bool line_torn(std::size_t i) const noexcept {
        const auto& l = lines_[i];
        const std::uint64_t last = l.last.load(std::memory_order_relaxed);
        return l.first.load(std::memory_order_relaxed) != last;
    }

    // long: every line gets the next version, with `work_per_line` burn iterations after
    // each. The version is read from line 0 and line 0 is written last, so that two writers
    // let in together both write the same version and one write is lost (writes_seen tells).
    // Out of line (rw_table.cpp), as table_torn is: every contender's section runs these same
    // bytes, at the same alignment (see there).
    [[gnu::noinline]] void write_all(std::uint64_t work_per_line) noexcept;
    // long: whether the table holds more than one version. Read from the last line down, so
    // that a read alongside a write (which goes up from line 1) must cross it: it then sees
    // the old version above the crossing and the new one below, whatever their speeds.
    [[gnu::noinline]] bool table_torn(std::uint64_t work_per_line) const noexcept;

    // The writes the table has seen, once no operation runs: each tiny write adds one to one
    // line; each long write one to every line.
    std::uint64_t writes_seen(rw_section s) const noexcept {
        if (s == rw_section::long_work) return lines_[0].first.load(std::memory_order_relaxed);
        std::uint64_t sum = 0;
        for (const auto& l : lines_) sum += l.first.load(std::memory_order_relaxed);
        return sum;
    }
    // Whether the table at rest is as `s`'s writes leave it (every line whole; for long, one
    // version throughout).
    bool consistent(rw_section s) const noexcept {
        for (std::size_t i = 0; i < lines; ++i)
            if (line_torn(i)) return false;
        return s == rw_section::tiny || !table_torn(0);
    }

private:
    // One line: the version in its first and last words (8 apart), nothing else on it.
    struct alignas(contend::cache_line_size) line {
        std::atomic<std::uint64_t> first{0};
        std::array<std::uint64_t, contend::cache_line_size / 8 - 2> middle{};
        std::atomic<std::uint64_t> last{0};
    };
    static_assert(sizeof(line) == contend::cache_line_size);
    std::array<line, lines> lines_;
};

}  // namespace contend::lab
