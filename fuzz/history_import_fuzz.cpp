// libFuzzer target for `contend history import` (lab/analyze/history_import.hpp), which reads
// a file with the compare reader and then again with the lab's whole-run reader
// (run_from_json) or as Google Benchmark's context: any bytes must end in a run or an
// input_error. An accepted run must be what the history can store: row names distinct, every
// valid cell's median a finite positive time. Start from the golden files:
//   build/fuzz/history_import_fuzz -runs=100000 tests/lab/golden/compare
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "analyze/history_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto imported = contend::lab::import_run(text, "fuzz.json", "fuzz");
        if (imported.run.context.label != "fuzz") __builtin_trap();
        std::set<std::string> names;
        for (const auto& cell : imported.run.cells) {
            if (!names.insert(cell.name()).second) __builtin_trap();
            if (cell.valid() && (!std::isfinite(cell.median_ns) || !(cell.median_ns > 0))) __builtin_trap();
        }
    } catch (const contend::lab::input_error&) {
    }
    return 0;
}
