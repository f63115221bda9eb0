// `contend compare BASE TEST`: baseline against test, one verdict per benchmark.
//
// A row is a regression or an improvement only when it passes three tests at once, so that
// noise on a shared machine is not reported as a change:
//   - the test/base ratio of medians is past the relative threshold (default 5 %, the .NET
//     performance lab's rule; see docs/references.md, dotnet-perf-report);
//   - the difference of medians is past an absolute noise floor (default 0.5 ns: below it,
//     a few-ns benchmark flips with the timer's resolution and the CPU's mood);
//   - a two-sided Mann-Whitney U test on the repetitions says the two samples differ
//     (p < alpha, default 0.05), as Google Benchmark's compare.py tests. With fewer than 2
//     repetitions on a side nothing can be tested; with fewer than 9 the test is weak and
//     the row says so.
// A row past the thresholds but not significant is "noisy", not a change; a row within
// them is "same" (a row whose medians are equal is "same" whatever the thresholds, 0 included).
// Past the thresholds, not significant, but every repetition of one side beyond every
// repetition of the other, with both sides too short for the U test ever to reach alpha (3
// against 3 give p = 0.1 at best: u_test_smallest_p), a row is "undecided": a change the eye
// sees that the test cannot confirm at these repetitions. A slower undecided row fails the
// gate (unless fail_on_undecided is false), for a doubling must not pass because the run was
// short; the reason names the fewest repetitions a side that could decide it. So is a change of a side whose
// repetitions fall into separate modes (results/statistics.hpp): the median of such a side is one mode's or between
// them, and the U test cannot tell a move of the figure from a different mix of the modes. With a history (contend
// compare
// --db), a fourth test: the edge detector (analyze/edge_detector.hpp). A significant row whose benchmark's series shows
// no change point between the two runs, although it has enough runs on each side to show one, is "noisy" too: the U
// test saw two runs that differ, the history says runs differ that much anyway. Where the history has too few runs
// around the two, the row keeps the U test's verdict and says it is unconfirmed. Every row carries each side's spread
// (interquartile range over median), so a reader sees how much to trust it.
//
// The gate (gate_failures) fails on a regression row, a suite that regressed, a slower
// undecided row, nothing compared at all (a test run that measured nothing, or shares no
// benchmark with the baseline), and a test cell the lab could not measure (timed out, crashed,
// a failed check) where the baseline measured it: a test that deadlocked must not pass because
// it left nothing to compare. A test cell "skipped" because its contender timed out at fewer
// workers is listed, as every cell not measured is, but fails only through that cell.
//
// The suite as a whole gets a verdict too, so that a change of every benchmark, each too
// small a sample to be significant on its own (3 repetitions a side can never give p < 0.05
// when they overlap), is not waved through as "noisy". Its figure is the geometric mean of
// Test/Base over the compared benchmarks; its test, a two-sided sign test across them: how
// many got slower (the medians apart by at least the noise floor) against how many got
// faster. The suite regressed (or improved) when the geometric mean is past the threshold,
// the sign test gives p < alpha, and the majority moved the way the mean did. That fails the
// gate as a regression row does. The sign test asks nothing of the shape of the ratios and
// needs at least 6 benchmarks to reach p < 0.05 (5 of 5 one way: p = 1/16).
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "analyze/edge_detector.hpp"
#include "analyze/inputs.hpp"

namespace contend::lab {

struct compare_options {
    double threshold = 0.05;  // relative change of medians that counts
    double noise_floor_ns = 0.5;  // absolute change of medians that counts
    double alpha = 0.05;  // significance level of the U test
    bool fail_on_undecided = true;  // a slower undecided row fails the gate (--no-fail-on-undecided)
};

enum class compare_verdict { regression, improvement, same, noisy, undecided };
const char* to_string(compare_verdict v) noexcept;

struct compare_row {
    std::string name;
    std::string suite;  // the name up to its first '/'
    double base_ns = 0, test_ns = 0;  // medians, ns per operation
    double ratio = 0;  // test / base: above 1 is slower
    std::size_t base_samples = 0, test_samples = 0;
    double p_value = std::numeric_limits<double>::quiet_NaN();  // NaN: not tested
    double base_spread = std::numeric_limits<double>::quiet_NaN();  // IQR / median; NaN below 2 samples
    double test_spread = std::numeric_limits<double>::quiet_NaN();
    // A side whose repetitions fall into separate modes (find_modes, results/statistics.hpp, or
    // the lab's flag on the cell): its median is not one figure, so a change is noisy.
    bool base_modal = false, test_modal = false;
    // What other processes took of each side's CPUs while it was measured (NaN: not
    // measured). A side over shared_above was measured beside a co-tenant: a change is noisy.
    double base_others_share = std::numeric_limits<double>::quiet_NaN();
    double test_others_share = std::numeric_limits<double>::quiet_NaN();
    compare_verdict verdict = compare_verdict::same;
    std::string reason;  // why this verdict, in words
    // The history's word (compare --db only; edge_checked false otherwise).
    bool edge_checked = false;
    edge_state edge = edge_state::too_few_runs;
    std::string edge_detail;
};

// A cell of one side that the lab could not measure (skipped_benchmark, inputs.hpp).
struct unmeasured_row {
    std::string name;
    std::string reason;  // its status, and its detail: "timed_out: no repetition finished within 3 s"
    bool measured_on_other_side = false;  // the other side holds a valid cell of that name
    // Test side only: the baseline measured it, and the test's cell failed (a status other
    // than "skipped"): the gate fails.
    bool fails_gate = false;
};

// The verdict over all the compared benchmarks (see above).
struct suite_verdict {
    compare_verdict verdict = compare_verdict::same;  // regression, improvement, same or noisy
    double geomean_ratio = std::numeric_limits<double>::quiet_NaN();  // NaN: nothing compared
    std::size_t slower = 0, faster = 0, unchanged = 0;  // benchmarks, by the noise floor
    double p_value = std::numeric_limits<double>::quiet_NaN();  // of the sign test; NaN: nothing compared
    std::string reason;  // in words
};

struct comparison {
    comparison_input base_info, test_info;  // sources and context (benchmarks and skipped emptied)
    compare_options options;
    std::vector<compare_row> rows;  // benchmarks present on both sides, in the test's order
    // Valid on one side, absent from the other (a cell the other side could not measure is
    // listed in unmeasured_* instead).
    std::vector<std::string> only_in_base, only_in_test;
    std::vector<unmeasured_row> unmeasured_in_base, unmeasured_in_test;  // in file order
    std::size_t measured_in_base = 0, measured_in_test = 0;  // valid benchmarks of each side
    std::size_t regressions = 0, improvements = 0, same = 0, noisy = 0, undecided = 0;
    std::size_t undecided_slower = 0;  // of the undecided rows, those whose test is slower
    double geomean_ratio = std::numeric_limits<double>::quiet_NaN();  // over every compared row
    suite_verdict suite;  // suite.geomean_ratio == geomean_ratio
    bool edges_checked = false;  // evidence from a history was given
    change_options edge_options;  // how its change points were found
};

// Throws std::invalid_argument for options out of range (threshold < 0, noise floor < 0,
// alpha outside (0, 1), NaN anywhere), and input_error naming the file and the benchmark for
// a median that is not a positive finite number (the readers refuse those before).
// `edges`, when given, is the history's evidence for each benchmark (edges_between, found
// with `edge_options`); a compared benchmark it does not name is judged without it.
comparison compare_inputs(const comparison_input& base, const comparison_input& test, const compare_options& options,
                          const edge_evidence* edges = nullptr, const change_options& edge_options = {});

// The report in the shape of the .NET lab's automatic issues: run information, a summary,
// one table of regressions and one of improvements grouped by suite, the benchmarks on one
// side only, a note on what each column means, and the command that reproduces it. Every
// name from an input is escaped.
std::string comparison_to_markdown(const comparison& c, const std::string& repro_command);
std::string comparison_to_json(const comparison& c);

// The report's numbers and words, one source for the Markdown report and the HTML page
// (pages/html_page.hpp), so that the two cannot say different things. Plain text: each
// writer escapes it for its format.
std::string format_percent(double fraction);  // 0.125 -> "12.5 %"; "-" when not finite
std::string format_p(double p);  // "1.1e-05" below 1e-4, else "0.0433"; "-" when NaN
// The suite's verdict in one sentence: "Suite: regression (geometric mean 2.0000, 200 of 200
// benchmarks slower, sign test p 1.2e-60)."
std::string suite_sentence(const comparison& c);
// True when a regression row or the suite regressed.
bool has_regression(const comparison& c);
// Why the comparison fails the gate, one sentence each (see above); empty when it passes.
std::vector<std::string> gate_failures(const comparison& c);
// Those joined with "; " ("" when it passes), and in a sentence: "Gate: passes." or "Gate:
// fails: 1 regression; nothing was compared: the test measured none of its 2 cells."
std::string gate_reasons(const comparison& c);
std::string gate_sentence(const comparison& c);
// What the Undecided section says above its table.
std::string undecided_note(const comparison& c);
// The sentences after the summary's counts: what makes a row a change (and, from a history,
// the edge detector; otherwise what one run a side cannot show).
std::string comparison_rules(const comparison& c);
// What each column of the verdict tables means, in table order (History only with a history).
struct column_meaning {
    std::string name, meaning;
};
std::vector<column_meaning> column_meanings(const comparison& c);

}  // namespace contend::lab
