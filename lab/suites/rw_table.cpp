// The long section of the rw suite, compiled once for every contender. Inlined into each
// contender's run() (as it was), the burn loop took another address in each instantiation:
// in contend_shared_mutex's it straddled a 64-byte boundary, in std_shared_mutex's and
// tbb_spin_rw_mutex's it did not. On the 2-vCPU AMD EPYC VM, pinned to a vCPU in a phase
// when it ran slow, that contender's 1-worker, 0 %-read cell took 654 and 666 ns a write
// against 474 and 484 for contend_mutex's, while on the other vCPU it was the faster of the
// two (308 and 335 against 319 and 344). The VM has no PMU counters to show why. One copy
// at a 64-byte boundary makes the work the same bytes for every lock, so that the cells
// differ by the lock alone (docs/design/shared_mutex.md, "One copy of the section's work").
#include "suites/rw_table.hpp"

namespace contend::lab {

[[gnu::aligned(64)]] void rw_table::write_all(std::uint64_t work_per_line) noexcept {
    const std::uint64_t v = lines_[0].first.load(std::memory_order_relaxed) + 1;
    for (std::size_t i = 1; i <= lines; ++i) {
        auto& l = lines_[i % lines];
        l.first.store(v, std::memory_order_relaxed);
        l.last.store(v, std::memory_order_relaxed);
        locked_work<std::mutex>::burn(work_per_line);
    }
}

[[gnu::aligned(64)]] bool rw_table::table_torn(std::uint64_t work_per_line) const noexcept {
    const std::uint64_t v = lines_[lines - 1].last.load(std::memory_order_relaxed);
    bool torn = false;
    for (std::size_t i = lines; i-- > 0;) {
        torn |= lines_[i].last.load(std::memory_order_relaxed) != v;
        torn |= lines_[i].first.load(std::memory_order_relaxed) != v;
        locked_work<std::mutex>::burn(work_per_line);
    }
    return torn;
}

}  // namespace contend::lab
