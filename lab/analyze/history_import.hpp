// `contend history import FILE --label LABEL`: a run made elsewhere (a CI artifact, another
// machine's `contend bench --json`, a plain Google Benchmark program's --benchmark_out) as
// one run of the history, so that one history can follow a benchmark across machines and
// builds, and `contend compare --db` and `contend history --changes` can read it.
//
// The file is first read by the reader of `contend compare` (inputs.hpp), so it is refused
// for exactly the same reasons, with the same input_error: a file that compare would refuse
// is never half-imported.
//   - A lab file is stored as `contend bench` would have stored it: its context and every
//     cell, the invalid ones included; only the label is replaced by LABEL.
//   - A Google Benchmark file becomes one cell per benchmark, named the lab's way:
//     suite = the program's file name (the context's "executable"; "google_benchmark" when
//     absent) in lower case, spaces and '-' as '_', contender = the run_name without its "/threads:N" part, workers = N
//     (1 when the name has none). So "BM_Lock/64/threads:4" of ./lock_bench is stored as the row
//     "lock_bench/bm_lock/64/workers:4" (row names are lower case: results.hpp). Its
//     repetitions are the cell's samples, their median its median; a benchmark with
//     aggregates only gets its median (or mean) and no samples. The context keeps what
//     Google Benchmark wrote: date, host_name, num_cpus, library_build_type, and cpu_model
//     and version when given with --benchmark_context.
// Two benchmarks that would make the same row name are refused (duplicate), as two rows of
// one name are in a lab file.
//
// Internal to the lab (namespace contend::lab).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include "analyze/inputs.hpp"
#include "results/results.hpp"

namespace contend::lab {

struct imported_run {
    run_result run;  // ready for history_store::append
    std::string format;  // "contend-lab" or "google-benchmark"
    std::size_t benchmarks = 0;  // valid cells
    std::size_t skipped = 0;  // invalid lab cells, stored with their status
};

// `text` read from `source` (named in errors) as a run labelled `label`. Throws input_error
// for anything the compare reader refuses, an empty label (kind other), and two benchmarks of
// one row name (duplicate); interrupted once `stop` (may be null: never) holds a signal, as
// the compare reader does (inputs.hpp), the second parse included.
imported_run import_run(std::string_view text, const std::string& source, const std::string& label,
                        const std::atomic<int>* stop = nullptr);

// The file at `path`, read (read_input_file) and imported; a file that cannot be read is an
// input_error.
imported_run import_run_file(const std::string& path, const std::string& label, const std::atomic<int>* stop = nullptr);

}  // namespace contend::lab
