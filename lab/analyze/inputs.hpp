// The inputs of `contend compare` and `contend history import`: a results file, read into one
// series of repetitions per benchmark, whatever wrote it.
//
// Two formats are read, told apart by their context:
//   - "contend-lab": what `contend bench --json` writes (the context has "contend_version").
//     Rows are read by the lab's own reader (results_io.hpp), so the field table of
//     results.hpp stays the one place that spells them. A row's "samples" are its
//     repetitions, already in ns per operation.
//   - "google-benchmark": anything else with a "benchmarks" array, as Google Benchmark's
//     --benchmark_out writes it. Rows of run_type "iteration" are the repetitions of their
//     run_name; aggregate rows (mean, median, stddev, cv, BigO...) are ignored, except that a
//     benchmark with no iteration rows (--benchmark_report_aggregates_only) takes its median
//     aggregate, or its mean when there is no median. A row without run_type (files older
//     than Google Benchmark 1.5) is an iteration of its name.
//
// What is refused, each with an input_error naming the file and, when one is concerned, the
// benchmark (or "benchmarks[i]" when the row has no usable name). Nothing is guessed:
//   input_error_kind        when
//   unreadable              the file cannot be opened or read
//   malformed_json          not JSON, or truncated
//   bad_shape               not an object, no "benchmarks" array, a row that is not an
//                           object, a field of the wrong JSON type, an unknown run_type, a
//                           lab row the lab's reader refuses (one whose real_time, p25 or
//                           p75 is not that statistic of its samples among them), a Google
//                           Benchmark row whose "threads" is not the N of "/threads:N" in
//                           its name (or not 1 when the name has none)
//   missing_field           a row without "name"; a row that gives a time without
//                           "real_time" or "time_unit"; an aggregates-only benchmark
//                           with neither a median nor a mean
//   not_a_number            a time that is null (how JSON writers spell NaN)
//   not_finite              a time too large to be finite (1e999 parses as infinity)
//   not_positive            a time that is zero or negative
//   unknown_unit            a time_unit other than ns, us, ms, s
//   mixed_units             two rows of one benchmark in different units (across
//                           benchmarks each is converted to ns: that is no error)
//   duplicate               an object that holds one key twice (nlohmann would keep the
//                           last: {"benchmarks": [...], "benchmarks": []} read as none);
//                           two rows that would make the same series: the same lab row
//                           twice, the same repetition_index twice, two median (or two
//                           mean) aggregates of one run_name
//   benchmark_error         a Google Benchmark row with "error_occurred": true (its
//                           error_message is quoted)
// A lab cell that is not valid (status other than "ok": timed out, wrong count...) is not an
// error: the lab reports such cells, never drops them, so they are listed in `skipped` with
// their reason and left out of `benchmarks`.
//
// Internal to the lab (namespace contend::lab).
#pragma once

#include <atomic>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace contend::lab {

// One benchmark of one input.
struct benchmark_series {
    std::string name;  // the row's run_name (Google Benchmark) or the lab's row name
    // Per repetition, in ns per operation (real time), in file order. Empty when the input
    // holds only aggregates: then no test of significance can be made on this side.
    std::vector<double> samples_ns;
    // The median of samples_ns when there are any; otherwise the median aggregate, or the
    // mean aggregate when there is no median (and `note` says so).
    double median_ns = 0;
    std::string note;  // "" or how median_ns was found: "aggregates only: median"
    // The lab flagged the cell modal when it measured it (cell_result::modal). compare also
    // applies the rule to samples_ns itself, for every format.
    bool flagged_modal = false;
    // What other processes took of the cell's CPUs while the lab measured it
    // (cell_result::others_cpu_share); NaN when not measured (another format, an older file).
    double others_cpu_share = std::numeric_limits<double>::quiet_NaN();
};

// A lab cell left out because it is not valid.
struct skipped_benchmark {
    std::string name;
    std::string reason;  // the cell's status, and its detail when it has one: "timed_out: ..."
    // The cell's status alone: "timed_out", "crashed", "wrong_count"..., or "skipped" (not run:
    // its contender timed out at fewer workers in the same run, results/results.hpp).
    std::string status;
};

struct comparison_input {
    std::string source;  // the file path (or a history label)
    std::string format;  // "contend-lab" or "google-benchmark"
    // What the context says, "" when absent. Google Benchmark writes a date; label,
    // cpu_model and version come from --benchmark_context=label=...,cpu_model=...,version=...
    std::string label, date, cpu_model, version;
    std::vector<benchmark_series> benchmarks;  // in order of first appearance in the file
    std::vector<skipped_benchmark> skipped;  // lab cells that are not valid, in file order
};

enum class input_error_kind {
    unreadable,
    malformed_json,
    bad_shape,
    missing_field,
    not_a_number,
    not_finite,
    not_positive,
    unknown_unit,
    mixed_units,
    duplicate,
    benchmark_error,
    other,  // raised by a caller (an unknown history label, say) with the short constructor
};
std::string_view to_string(input_error_kind kind);

// what(): "<source>: benchmark '<name>': <problem>", or "<source>: <problem>" when no
// benchmark is concerned.
class input_error : public std::runtime_error {
public:
    input_error(input_error_kind kind, std::string source, std::string benchmark, std::string problem);
    input_error(std::string source, std::string benchmark, std::string problem)
        : input_error(input_error_kind::other, std::move(source), std::move(benchmark), std::move(problem)) {}

    input_error_kind kind() const noexcept { return kind_; }
    const std::string& source() const noexcept { return source_; }
    const std::string& benchmark() const noexcept { return benchmark_; }  // "" when none
    const std::string& problem() const noexcept { return problem_; }

private:
    input_error_kind kind_;
    std::string source_, benchmark_, problem_;
};

// Stopping on a signal: `stop` (may be null: never) is the CLI's stop signal. It is looked
// at while the file is read (a FIFO or a pipe that never ends included), while its JSON is
// parsed (parse_json_refusing_duplicate_keys) and between rows; once it holds a signal the
// call throws interrupted (store/interrupted.hpp), having kept nothing. A results file of
// hundreds of MB takes tens of seconds to read and parse: the first signal ends that at once.

// Reads `text` as either format. `source` names the input in errors and in the result.
// Throws input_error only (std::bad_alloc and interrupted aside).
comparison_input parse_comparison_input(std::string_view text, const std::string& source,
                                        const std::atomic<int>* stop = nullptr);
// Reads the file at `path` (read_input_file) and parses it.
comparison_input read_comparison_input(const std::string& path, const std::atomic<int>* stop = nullptr);
// The whole text of the input file at `path`: a regular file, or a FIFO, a pipe (`<(...)`)
// or a device, read until its writer closes it. One that cannot be opened or read, or a
// folder, is an input_error of kind unreadable.
std::string read_input_file(const std::string& path, const std::atomic<int>* stop = nullptr);
// Throws interrupted, naming `source` as not read to its end, once `stop` holds a signal.
void stop_if_asked(const std::atomic<int>* stop, const std::string& source);

}  // namespace contend::lab
