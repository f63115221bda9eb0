// The long section of the rw suite, compiled once for every contender. Inlined into each
// contender's run() (as it was), the burn loop took another address in each instantiation:
// in contend_shared_mutex's it straddled a 64-byte boundary, in the others it did not, and
// on the 2-vCPU AMD EPYC VM, in the phases when one vCPU ran about half as fast, that
// contender's 1-worker, 0 %-read cell took 650 to 690 ns a write against 475 for
// contend_mutex's on the same (pinned) CPU, while on the other CPU it was the faster of the
// two (308 against 319). One copy at a 64-byte boundary makes the work the same bytes for
// every lock, so what differs between two cells is the lock (docs/design/shared_mutex.md).
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
