// libFuzzer target for the inputs of `contend compare` (lab/analyze/inputs.hpp): any bytes
// must end in a result or an input_error. Another exception escapes and libFuzzer reports
// it as a crash, as it does a sanitizer's report; an accepted input with a time that is not
// finite and positive traps. Start from the golden files:
//   build/<clang build>/fuzz/compare_inputs_fuzz -runs=100000 tests/lab/golden/compare
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyze/inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto in = contend::lab::parse_comparison_input(text, "fuzz.json");
        for (const auto& s : in.benchmarks) {
            if (s.name.empty() || !std::isfinite(s.median_ns) || !(s.median_ns > 0)) __builtin_trap();
            for (const double v : s.samples_ns)
                if (!std::isfinite(v) || !(v > 0)) __builtin_trap();
        }
    } catch (const contend::lab::input_error&) {
    }
    return 0;
}
