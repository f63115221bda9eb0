// The pool suite's rows, shared by the suite (pool.cpp) and the peers' pools
// (suites/pool_peers.cpp): one row per queue and mode of a pool. Internal to the lab.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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

// pool.cpp: the suite, registered in registry.cpp.
suite make_pool_suite();

}  // namespace contend::lab
