// The pipe suite's rows, shared by the suite (pipe.cpp) and the peers' transports
// (suites/pipe_peers.cpp): one row per chunk size of a transport. Internal to the lab.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "measure/cotenant.hpp"
#include "measure/workload.hpp"
#include "suites/pipe_workload.hpp"
#include "suites/suites.hpp"

namespace contend::lab {

// Appends pipe/<name>/chunk:<bytes> for every chunk size, each a stream_throughput of
// Transport built from (chunk, args...).
template <class Transport, class... Args>
void append_pipe_rows(std::vector<contender>& out, const std::string& name, const std::string& description,
                      Args... args) {
    using w = pipe_bench::stream_throughput<Transport>;
    for (const std::size_t chunk : pipe_bench::chunk_sizes) {
        contender c;
        c.name = name;
        c.description = description + ", chunks of " + std::to_string(chunk) + " bytes";
        c.params = {{"chunk", std::to_string(chunk)}};
        c.operation = "chunk";
        c.workload_type = demangled_type_name<w>();
        c.make = [chunk, args...]() -> std::unique_ptr<workload> { return std::make_unique<w>(chunk, args...); };
        out.push_back(std::move(c));
    }
}

// Appends pipe/<name>/chunk:4096/reader:count/one_cpu:yes: the natural pattern on one CPU,
// a writer that flushes every 4 KiB chunk and a reader that takes what arrived and advances
// past it, counting the bytes (stream_throughput's CountOnly), both threads on one CPU.
template <class Transport, class... Args>
void append_natural_one_cpu_row(std::vector<contender>& out, const std::string& name, const std::string& description,
                                Args... args) {
    using w = pipe_bench::stream_throughput<Transport, true>;
    contender c;
    c.name = name;
    c.description = description + ", chunks of 4096 bytes, a reader that counts what it gets, both on one CPU";
    c.params = {{"chunk", "4096"}, {"reader", "count"}};
    c.cotenant.one_cpu = true;
    for (auto& param : cotenant_params(c.cotenant)) c.params.push_back(std::move(param));
    c.operation = "chunk";
    c.workload_type = demangled_type_name<w>();
    c.make = [args...]() -> std::unique_ptr<workload> { return std::make_unique<w>(std::size_t{4096}, args...); };
    out.push_back(std::move(c));
}

// pipe.cpp: the suite, registered in registry.cpp.
suite make_pipe_suite();

}  // namespace contend::lab
