#include "analyze/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "analyze/significance.hpp"
#include "results/statistics.hpp"
#include "text/escape.hpp"
#include "text/numbers.hpp"

namespace contend::lab {
namespace {

// compare.py warns below 9 repetitions a side: the U test has little power there.
constexpr std::size_t few_samples = 9;

std::string suite_of(const std::string& name) {
    const auto slash = name.find('/');
    return slash == std::string::npos ? name : name.substr(0, slash);
}

double spread(const std::vector<double>& samples) {
    if (samples.size() < 2) return std::numeric_limits<double>::quiet_NaN();
    const double m = median(samples);
    if (!(m > 0)) return std::numeric_limits<double>::quiet_NaN();
    return (quantile(samples, 0.75) - quantile(samples, 0.25)) / m;
}

void check_options(const compare_options& o) {
    if (!(o.threshold >= 0) || std::isinf(o.threshold))
        throw std::invalid_argument("--threshold must be a finite percentage >= 0");
    if (!(o.noise_floor_ns >= 0) || std::isinf(o.noise_floor_ns))
        throw std::invalid_argument("--noise must be a finite number of ns >= 0");
    if (!(o.alpha > 0 && o.alpha < 1)) throw std::invalid_argument("--alpha must be between 0 and 1");
}

// A change the row claims: significant, or undecided (the eye sees it, the test cannot).
bool moved(compare_verdict v) {
    return v == compare_verdict::regression || v == compare_verdict::improvement || v == compare_verdict::undecided;
}

// Whether the two samples overlap: `slower` when every test value is above every baseline
// value, `faster` when below, `none` otherwise (a tie across the sides is an overlap). None
// below 2 values a side: one repetition shows no spread to lie apart from.
enum class separation { none, slower, faster };
separation separated(const std::vector<double>& base, const std::vector<double>& test) {
    if (base.size() < 2 || test.size() < 2) return separation::none;
    const auto [base_low, base_high] = std::minmax_element(base.begin(), base.end());
    const auto [test_low, test_high] = std::minmax_element(test.begin(), test.end());
    if (*test_low > *base_high) return separation::slower;
    if (*test_high < *base_low) return separation::faster;
    return separation::none;
}

compare_row compare_one(const benchmark_series& b, const benchmark_series& t, const compare_options& o,
                        const edge_check* edge) {
    compare_row r;
    r.name = t.name;
    r.suite = suite_of(t.name);
    r.base_ns = b.median_ns;
    r.test_ns = t.median_ns;
    r.ratio = t.median_ns / b.median_ns;
    r.base_samples = b.samples_ns.size();
    r.test_samples = t.samples_ns.size();
    r.base_spread = spread(b.samples_ns);
    r.test_spread = spread(t.samples_ns);
    if (r.base_samples >= 2 && r.test_samples >= 2) r.p_value = mann_whitney_u(b.samples_ns, t.samples_ns).p_value;

    const double diff = r.test_ns - r.base_ns;
    const separation apart = separated(b.samples_ns, t.samples_ns);
    if (diff == 0) {
        // Equal medians are no change whatever the thresholds, 0 included: "past a threshold
        // of 0" must not read as a move.
        r.verdict = compare_verdict::same;
        r.reason = "the medians are equal";
    } else if (std::fabs(diff) < o.noise_floor_ns) {
        r.verdict = compare_verdict::same;
        r.reason = "the medians differ by less than the noise floor (" + format_fixed(o.noise_floor_ns, 2) + " ns)";
    } else if (std::fabs(r.ratio - 1) < o.threshold) {
        r.verdict = compare_verdict::same;
        r.reason = "within the threshold (" + format_percent(o.threshold) + ")";
    } else if (std::isnan(r.p_value)) {
        r.verdict = compare_verdict::noisy;
        r.reason = "past the threshold, but a side has fewer than 2 repetitions: nothing to test";
    } else if (r.p_value >= o.alpha && apart != separation::none && (apart == separation::slower) == (diff > 0) &&
               !(u_test_smallest_p(r.base_samples, r.test_samples) < o.alpha)) {
        // The samples lie as far apart as samples can, so p is already the smallest these
        // counts allow: no result of this many repetitions could have been significant.
        r.verdict = compare_verdict::undecided;
        r.reason = "undecided at " + std::to_string(r.base_samples) + " / " + std::to_string(r.test_samples) +
                   " repetitions: every test repetition is " + (diff > 0 ? "slower" : "faster") +
                   " than every baseline one, but with so few the U test's smallest p is " + format_p(r.p_value) +
                   " >= " + format_p(o.alpha) + "; it needs at least " +
                   std::to_string(u_test_min_repetitions(o.alpha)) + " repetitions a side";
    } else if (r.p_value >= o.alpha) {
        r.verdict = compare_verdict::noisy;
        r.reason = "past the threshold, but the U test does not tell the samples apart (p " + format_p(r.p_value) +
                   " >= " + format_p(o.alpha) + ")";
    } else {
        r.verdict = diff > 0 ? compare_verdict::regression : compare_verdict::improvement;
        r.reason = "past the threshold and significant (p " + format_p(r.p_value) + ")";
    }
    if (r.verdict != compare_verdict::undecided && !std::isnan(r.p_value) &&
        (r.base_samples < few_samples || r.test_samples < few_samples))
        r.reason += "; fewer than 9 repetitions a side: the test is weak";
    const modes base_modes = find_modes(b.samples_ns), test_modes = find_modes(t.samples_ns);
    r.base_modal = b.flagged_modal || base_modes.modal;
    r.test_modal = t.flagged_modal || test_modes.modal;
    std::string sides;  // each modal side and its groups
    const auto side = [](const char* which, const modes& m) {
        const std::string groups = describe_modes(m);
        return std::string(which) + (groups.empty() ? " was flagged modal when measured" : ": " + groups);
    };
    if (r.base_modal) sides = side("the baseline", base_modes);
    if (r.test_modal) sides += (sides.empty() ? "" : "; ") + side("the test", test_modes);
    if (moved(r.verdict) && (r.base_modal || r.test_modal)) {
        r.verdict = compare_verdict::noisy;
        r.reason = "past the threshold (p " + format_p(r.p_value) +
                   "), but the repetitions fall into separate modes, so a median is not one figure (" + sides + ")";
    } else if (r.base_modal || r.test_modal) {
        // Named on every row, not only where they flip a verdict: a median of a modal side is
        // one mode's, whatever the verdict says.
        r.reason += "; the repetitions fall into separate modes (" + sides + ")";
    }
    r.base_others_share = b.others_cpu_share;
    r.test_others_share = t.others_cpu_share;
    std::string shared;  // each side measured beside a co-tenant, and how much it lost
    const auto beside = [](const char* which, double share) {
        return format_percent(share) + " of " + which + " CPUs";
    };
    if (r.base_others_share > shared_above) shared = beside("the baseline's", r.base_others_share);
    if (r.test_others_share > shared_above)
        shared += (shared.empty() ? "" : ", ") + beside("the test's", r.test_others_share);
    if (!shared.empty()) {
        if (moved(r.verdict)) {
            r.verdict = compare_verdict::noisy;
            r.reason = "past the threshold (p " + format_p(r.p_value) +
                       "), but measured beside a co-tenant: other processes took " + shared +
                       ", so the figures are not the machine's alone";
        } else {
            r.reason += "; measured beside a co-tenant (other processes took " + shared + ")";
        }
    }
    if (edge) {
        r.edge_checked = true;
        r.edge = edge->state;
        r.edge_detail = edge->detail;
        const bool changed = moved(r.verdict);
        if (changed && edge->state == edge_state::no_change) {
            r.reason = std::string(r.verdict == compare_verdict::undecided ? "past the threshold, every repetition "
                                                                             "of one side beyond the other's"
                                                                           : "past the threshold and significant") +
                       " within these two runs (p " + format_p(r.p_value) +
                       "), but the history shows no change point between them (" + edge->detail +
                       "): this benchmark moves this much from run to run";
            r.verdict = compare_verdict::noisy;
        } else if (changed && edge->state == edge_state::change) {
            r.reason += "; the history agrees: a change point between them (" + edge->detail + ")";
        } else if (changed) {
            r.reason += "; unconfirmed: the history has too few runs around these two for a change point (" +
                        edge->detail + ")";
        }
    }
    return r;
}

// The suite's verdict from its counts and geometric mean (see compare.hpp).
void judge_suite(comparison& c) {
    suite_verdict& s = c.suite;
    s.geomean_ratio = c.geomean_ratio;
    if (c.rows.empty()) {
        s.reason = "nothing compared";
        return;
    }
    if (s.slower == 0 && s.faster == 0) {
        // Every median equal (or within the noise floor): no move, even at a threshold of 0.
        s.p_value = 1;
        s.reason = "no benchmark moved: " + std::to_string(s.unchanged) +
                   " with equal medians or medians apart by less than the noise floor";
        return;
    }
    s.p_value = sign_test(s.slower, s.faster).p_value;
    const double g = s.geomean_ratio;
    const std::string counts = std::to_string(s.slower) + " slower, " + std::to_string(s.faster) + " faster, " +
                               std::to_string(s.unchanged) + " within the noise floor";
    if (!(std::fabs(g - 1) >= c.options.threshold)) {  // NaN (an overflowing mean) is no move either
        s.verdict = compare_verdict::same;
        s.reason = "the geometric mean of Test/Base is within the threshold (" + format_percent(c.options.threshold) +
                   "; " + counts + ")";
        return;
    }
    const bool up = g > 1;
    const bool majority_agrees = up ? s.slower > s.faster : s.faster > s.slower;
    if (s.p_value < c.options.alpha && majority_agrees) {
        s.verdict = up ? compare_verdict::regression : compare_verdict::improvement;
        s.reason = std::string("the whole suite moved: the geometric mean of Test/Base is past the threshold and ") +
                   counts + " (sign test p " + format_p(s.p_value) + " < " + format_p(c.options.alpha) + ")";
    } else {
        s.verdict = compare_verdict::noisy;
        s.reason = "the geometric mean of Test/Base is past the threshold, but the benchmarks do not move one way (" +
                   counts + ", sign test p " + format_p(s.p_value) + ")";
    }
}

}  // namespace

std::string suite_sentence(const comparison& c) {
    return "Suite: " + std::string(to_string(c.suite.verdict)) + " (geometric mean of Test/Base " +
           format_fixed(c.suite.geomean_ratio, 4) + "): " + c.suite.reason + ".";
}

bool has_regression(const comparison& c) { return c.regressions > 0 || c.suite.verdict == compare_verdict::regression; }

std::vector<std::string> gate_failures(const comparison& c) {
    const auto count = [](std::size_t n, const char* one, const char* many) {
        return std::to_string(n) + " " + (n == 1 ? one : many);
    };
    std::vector<std::string> out;
    if (c.regressions > 0) out.push_back(count(c.regressions, "regression", "regressions"));
    if (c.suite.verdict == compare_verdict::regression) out.push_back("the suite regressed as a whole");
    if (c.undecided_slower > 0 && c.options.fail_on_undecided)
        out.push_back(count(c.undecided_slower, "benchmark", "benchmarks") +
                      " undecided and slower: every test repetition slower than every baseline one, too few "
                      "repetitions for the U test to decide (at least " +
                      std::to_string(u_test_min_repetitions(c.options.alpha)) + " a side; --no-fail-on-undecided " +
                      "lets it pass)");
    std::size_t lost = 0;
    for (const auto& u : c.unmeasured_in_test) lost += u.fails_gate;
    if (lost > 0)
        out.push_back(count(lost, "cell", "cells") + " the baseline measured " + (lost == 1 ? "was" : "were") +
                      " not measured by the test (timed out, crashed or failed a check)");
    if (c.rows.empty()) {
        std::string why;
        if (c.measured_in_test == 0)
            why = c.unmeasured_in_test.empty()
                      ? "the test holds no benchmark"
                      : "the test measured none of its " + count(c.unmeasured_in_test.size(), "cell", "cells");
        else if (c.measured_in_base == 0) why = "the baseline holds no measured benchmark";
        else why = "no benchmark is measured on both sides";
        out.push_back("nothing was compared: " + why);
    }
    return out;
}

const char* to_string(compare_verdict v) noexcept {
    switch (v) {
        case compare_verdict::regression:
            return "regression";
        case compare_verdict::improvement:
            return "improvement";
        case compare_verdict::same:
            return "same";
        case compare_verdict::noisy:
            return "noisy";
        case compare_verdict::undecided:
            return "undecided";
    }
    return "?";
}

comparison compare_inputs(const comparison_input& base, const comparison_input& test, const compare_options& options,
                          const edge_evidence* edges, const change_options& edge_options) {
    check_options(options);
    comparison c;
    c.options = options;
    c.edges_checked = edges != nullptr;
    c.edge_options = edge_options;
    c.base_info = base;
    c.base_info.benchmarks.clear();
    c.test_info = test;
    c.test_info.benchmarks.clear();
    c.test_info.skipped.clear();
    c.base_info.skipped.clear();
    c.measured_in_base = base.benchmarks.size();
    c.measured_in_test = test.benchmarks.size();

    std::unordered_map<std::string, const benchmark_series*> in_base;
    for (const auto& b : base.benchmarks) in_base.emplace(b.name, &b);
    std::set<std::string> seen;
    double log_ratio_sum = 0;
    for (const auto& t : test.benchmarks) {
        const auto it = in_base.find(t.name);
        if (it == in_base.end()) {
            c.only_in_test.push_back(t.name);
            continue;
        }
        seen.insert(t.name);
        const edge_check* edge = nullptr;
        if (edges) {
            const auto found = edges->find(t.name);
            if (found != edges->end()) edge = &found->second;
        }
        for (const auto* side : {&base, &test}) {
            const benchmark_series& s = side == &base ? *it->second : t;
            if (!(s.median_ns > 0) || !std::isfinite(s.median_ns))
                throw input_error(input_error_kind::not_positive, side->source, s.name,
                                  "its median is not a positive finite number of ns");
        }
        compare_row r = compare_one(*it->second, t, options, edge);
        // In logarithms: a ratio of two finite medians can overflow (1e300 / 1e-300), its
        // logarithm cannot.
        log_ratio_sum += std::log(t.median_ns) - std::log(it->second->median_ns);
        const double diff = t.median_ns - it->second->median_ns;
        if (std::fabs(diff) < options.noise_floor_ns || diff == 0) ++c.suite.unchanged;
        else if (diff > 0) ++c.suite.slower;
        else ++c.suite.faster;
        switch (r.verdict) {
            case compare_verdict::regression:
                ++c.regressions;
                break;
            case compare_verdict::improvement:
                ++c.improvements;
                break;
            case compare_verdict::same:
                ++c.same;
                break;
            case compare_verdict::noisy:
                ++c.noisy;
                break;
            case compare_verdict::undecided:
                ++c.undecided;
                c.undecided_slower += r.ratio > 1;
                break;
        }
        c.rows.push_back(std::move(r));
    }
    // The cells a side could not measure, each with its reason; a valid cell of the other side
    // of the same name is then not "on one side only" but one the other failed.
    std::unordered_map<std::string, const skipped_benchmark*> skipped_in_base, skipped_in_test;
    for (const auto& u : base.skipped) skipped_in_base.emplace(u.name, &u);
    for (const auto& u : test.skipped) skipped_in_test.emplace(u.name, &u);
    std::set<std::string> valid_in_test;
    for (const auto& t : test.benchmarks) valid_in_test.insert(t.name);
    for (const auto& u : base.skipped)
        c.unmeasured_in_base.push_back({u.name, u.reason, valid_in_test.count(u.name) > 0});
    for (const auto& u : test.skipped) {
        const bool measured = in_base.count(u.name) > 0;
        c.unmeasured_in_test.push_back({u.name, u.reason, measured, measured && u.status != "skipped"});
    }
    std::erase_if(c.only_in_test, [&](const std::string& n) { return skipped_in_base.count(n) > 0; });
    for (const auto& b : base.benchmarks)
        if (!seen.count(b.name) && !skipped_in_test.count(b.name)) c.only_in_base.push_back(b.name);
    if (!c.rows.empty()) c.geomean_ratio = std::exp(log_ratio_sum / static_cast<double>(c.rows.size()));
    judge_suite(c);
    return c;
}

namespace {

std::string count(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

void run_info_row(std::string& md, const char* what, const std::string& base, const std::string& test) {
    md += "| " + std::string(what) + " | " + escape_markdown(base.empty() ? "-" : base) + " | " +
          escape_markdown(test.empty() ? "-" : test) + " |\n";
}

void verdict_tables(std::string& md, const comparison& c, compare_verdict which, const char* title,
                    const std::string& note = "") {
    std::map<std::string, std::vector<const compare_row*>> by_suite;
    for (const auto& r : c.rows)
        if (r.verdict == which) by_suite[r.suite].push_back(&r);
    md += "## " + std::string(title) + "\n\n";
    if (!note.empty() && !by_suite.empty()) md += escape_markdown(note) + "\n\n";
    if (by_suite.empty()) {
        md += "None.\n\n";
        return;
    }
    for (auto& [suite, rows] : by_suite) {
        // Worst first: the largest move away from 1.
        std::sort(rows.begin(), rows.end(), [](const compare_row* a, const compare_row* b) {
            return std::fabs(std::log(a->ratio)) > std::fabs(std::log(b->ratio));
        });
        md += "### " + escape_markdown(suite) + "\n\n";
        md +=
            "| Benchmark | Baseline (ns) | Test (ns) | Test/Base | p (U test) | Spread base | Spread test | "
            "Repetitions |";
        md += c.edges_checked ? " History |\n" : "\n";
        md += "|---|---:|---:|---:|---:|---:|---:|---:|";
        md += c.edges_checked ? "---|\n" : "\n";
        for (const auto* r : rows) {
            md += "| " + escape_markdown(r->name) + " | " + format_fixed(r->base_ns, 3) + " | " +
                  format_fixed(r->test_ns, 3) + " | " + format_fixed(r->ratio, 3) + " | " + format_p(r->p_value) +
                  " | " + format_percent(r->base_spread) + " | " + format_percent(r->test_spread) + " | " +
                  std::to_string(r->base_samples) + " / " + std::to_string(r->test_samples) + " |";
            if (c.edges_checked)
                md += " " +
                      (r->edge_checked ? escape_markdown(std::string(to_string(r->edge)) + ": " + r->edge_detail)
                                       : std::string("-")) +
                      " |";
            md += "\n";
        }
        md += "\n";
    }
}

}  // namespace

std::string format_percent(double fraction) {
    return std::isfinite(fraction) ? format_fixed(fraction * 100, 1) + " %" : "-";
}

std::string format_p(double p) {
    if (std::isnan(p)) return "-";
    char buf[64];
    if (p < 0.0001) std::snprintf(buf, sizeof buf, "%.1e", p);
    else std::snprintf(buf, sizeof buf, "%.4f", p);
    return buf;
}

std::string gate_reasons(const comparison& c) {
    std::string s;
    for (const auto& f : gate_failures(c)) s += (s.empty() ? "" : "; ") + f;
    return s;
}

std::string gate_sentence(const comparison& c) {
    const std::string reasons = gate_reasons(c);
    if (!reasons.empty()) return "Gate: fails: " + reasons + ".";
    // The flag lets them pass; the sentence still warns of them.
    if (c.undecided_slower > 0)
        return "Gate: passes, with a warning: " + std::to_string(c.undecided_slower) + " benchmark" +
               (c.undecided_slower == 1 ? " is" : "s are") +
               " undecided and slower (too few repetitions for the U test), not a failure with "
               "--no-fail-on-undecided.";
    return "Gate: passes.";
}

std::string undecided_note(const comparison& c) {
    return "Past the thresholds, every repetition of one side beyond every repetition of the other, but too few "
           "repetitions for the U test ever to give p < " +
           format_p(c.options.alpha) + " (3 against 3 give 0.1 at best). Run at least " +
           std::to_string(u_test_min_repetitions(c.options.alpha)) +
           " repetitions a side (contend bench --full, or more --reps) to decide. A slower one fails the gate" +
           (c.options.fail_on_undecided ? "" : ", except with --no-fail-on-undecided, as here") + ".";
}

std::string comparison_rules(const comparison& c) {
    std::string s = "Rules: a change counts when Test/Base is past " + format_percent(c.options.threshold) +
                    ", the medians differ by at least " + format_fixed(c.options.noise_floor_ns, 2) +
                    " ns, and a two-sided Mann-Whitney U test gives p < " + format_p(c.options.alpha) +
                    ", unless a side's repetitions fall into separate modes (then no median is one figure). The "
                    "suite as a whole regressed (or improved) when the geometric mean of Test/Base is past " +
                    format_percent(c.options.threshold) +
                    " and a two-sided sign test over the benchmarks (slower against faster) gives p < " +
                    format_p(c.options.alpha) +
                    "; that fails the gate as a regression row does. A row past the thresholds whose samples do not "
                    "overlap at all, with too few repetitions for the U test ever to reach p < " +
                    format_p(c.options.alpha) + " (at least " +
                    std::to_string(u_test_min_repetitions(c.options.alpha)) +
                    " a side), is undecided; a slower one fails the gate" +
                    (c.options.fail_on_undecided ? "" : " (not with --no-fail-on-undecided)") +
                    ". The gate also fails when nothing was compared, or when the test could not measure a cell the "
                    "baseline measured.";
    if (c.edges_checked)
        s += " From a history, also: a change point of the benchmark's series over the runs falls between the two "
             "(E-divisive means, p < " +
             format_p(c.edge_options.p) + ", at least " + std::to_string(c.edge_options.min_segment) +
             " runs a side, at least " + format_percent(c.edge_options.min_magnitude) +
             "), unless the history has too few runs to tell.";
    else
        s += " Each side is one run: the U test sees how its repetitions spread, not how much runs differ, which "
             "for contended cells can be more; contend compare --db checks a change against the history too.";
    return s;
}

std::vector<column_meaning> column_meanings(const comparison& c) {
    std::vector<column_meaning> out = {
        {"Baseline, Test", "the median over repetitions, ns per operation (lower is better)."},
        {"Test/Base", "above 1 the test is slower."},
        {"p (U test)",
         "the chance of samples at least this far apart if nothing changed (two-sided Mann-Whitney U on the "
         "repetitions); '-' when a side has fewer than 2."},
        {"Spread",
         "interquartile range over median of a side's repetitions; a spread near the change itself means the "
         "machine was noisy."},
    };
    if (c.edges_checked)
        out.push_back({"History",
                       "the edge detector. change: a change point of the benchmark's series over the history falls "
                       "between the two runs; no change: there are enough runs on each side and none does, so the "
                       "row is noisy whatever the U test says (repetitions of one run cannot show how much runs "
                       "differ); too few runs: unconfirmed."});
    return out;
}

std::string comparison_to_markdown(const comparison& c, const std::string& repro_command) {
    std::string md;
    md += "# contend compare: " + escape_markdown(c.base_info.label.empty() ? c.base_info.source : c.base_info.label) +
          " vs " + escape_markdown(c.test_info.label.empty() ? c.test_info.source : c.test_info.label) + "\n\n";
    md += "## Run information\n\n| | Baseline | Test |\n|---|---|---|\n";
    run_info_row(md, "Source", c.base_info.source, c.test_info.source);
    run_info_row(md, "Format", c.base_info.format, c.test_info.format);
    run_info_row(md, "Label", c.base_info.label, c.test_info.label);
    run_info_row(md, "Date", c.base_info.date, c.test_info.date);
    run_info_row(md, "CPU", c.base_info.cpu_model, c.test_info.cpu_model);
    run_info_row(md, "Version", c.base_info.version, c.test_info.version);
    md += "\n## Summary\n\n";
    md += count(c.rows.size(), "benchmark", "benchmarks") + " compared: **" +
          count(c.regressions, "regression", "regressions") + "**, **" +
          count(c.improvements, "improvement", "improvements") + "**, " + std::to_string(c.same) + " same, " +
          std::to_string(c.noisy) + " noisy, " + std::to_string(c.undecided) +
          " undecided. Geometric mean of Test/Base: " + format_fixed(c.geomean_ratio, 4) + ".\n\n" +
          (gate_reasons(c).empty() ? escape_markdown(gate_sentence(c))
                                   : "**Gate: fails**: " + escape_markdown(gate_reasons(c)) + ".") +
          "\n\n" +
          (c.suite.verdict == compare_verdict::regression || c.suite.verdict == compare_verdict::improvement
               ? "**" + escape_markdown(suite_sentence(c)) + "**"
               : escape_markdown(suite_sentence(c))) +
          "\n\n" + escape_markdown(comparison_rules(c));
    md += "\n\n";
    verdict_tables(md, c, compare_verdict::regression, "Regressions");
    verdict_tables(md, c, compare_verdict::improvement, "Improvements");
    verdict_tables(md, c, compare_verdict::undecided, "Undecided", undecided_note(c));
    md += c.edges_checked
              ? "## Noisy\n\nPast the thresholds but not shown to differ (too few repetitions, samples that "
                "overlap, a side whose repetitions fall into separate modes, or no change point in the history "
                "between the two runs):\n\n"
              : "## Noisy\n\nPast the thresholds but not shown to differ (too few repetitions, samples "
                "that overlap, or a side whose repetitions fall into separate modes):\n\n";
    bool any_noisy = false;
    for (const auto& r : c.rows) {
        if (r.verdict != compare_verdict::noisy) continue;
        any_noisy = true;
        md += "- " + escape_markdown(r.name) + ": " + format_fixed(r.base_ns, 3) + " -> " + format_fixed(r.test_ns, 3) +
              " ns (" + format_fixed(r.ratio, 3) + "x); " + escape_markdown(r.reason) + "\n";
    }
    if (!any_noisy) md += "None.\n";
    md += "\n## On one side only\n\n";
    if (c.only_in_base.empty() && c.only_in_test.empty()) md += "None.\n";
    for (const auto& n : c.only_in_base) md += "- only in the baseline: " + escape_markdown(n) + "\n";
    for (const auto& n : c.only_in_test) md += "- only in the test: " + escape_markdown(n) + "\n";
    md += "\n## Not measured\n\n";
    if (c.unmeasured_in_base.empty() && c.unmeasured_in_test.empty()) md += "None.\n";
    for (const auto& u : c.unmeasured_in_base)
        md += "- in the baseline: " + escape_markdown(u.name + ": " + u.reason) +
              (u.measured_on_other_side ? " (measured in the test)" : "") + "\n";
    for (const auto& u : c.unmeasured_in_test)
        md += "- in the test: " + escape_markdown(u.name + ": " + u.reason) +
              (u.fails_gate               ? " (**measured in the baseline: fails the gate**)"
               : u.measured_on_other_side ? " (measured in the baseline)"
                                          : "") +
              "\n";
    md += "\n## What the columns mean\n\n";
    for (const auto& [name, meaning] : column_meanings(c))
        md += "- **" + escape_markdown(name) + "**: " + escape_markdown(meaning) + "\n";
    md += "\n";
    md += "## Repro\n\n```sh\n" + repro_command + "\n```\n";
    return md;
}

std::string comparison_to_json(const comparison& c) {
    using nlohmann::json;
    const auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
    const auto side = [](const comparison_input& in) {
        return json{{"source", in.source}, {"format", in.format},       {"label", in.label},
                    {"date", in.date},     {"cpu_model", in.cpu_model}, {"version", in.version}};
    };
    const auto unmeasured = [](const std::vector<unmeasured_row>& list, bool test_side) {
        json out = json::array();
        for (const auto& u : list) {
            out.push_back(
                {{"name", u.name}, {"reason", u.reason}, {"measured_on_other_side", u.measured_on_other_side}});
            if (test_side) out.back()["fails_gate"] = u.fails_gate;
        }
        return out;
    };
    json rows = json::array();
    for (const auto& r : c.rows) {
        rows.push_back({{"name", r.name},
                        {"suite", r.suite},
                        {"baseline_ns", num(r.base_ns)},
                        {"test_ns", num(r.test_ns)},
                        {"ratio", num(r.ratio)},
                        {"baseline_repetitions", r.base_samples},
                        {"test_repetitions", r.test_samples},
                        {"p_value", num(r.p_value)},
                        {"baseline_spread", num(r.base_spread)},
                        {"test_spread", num(r.test_spread)},
                        {"baseline_modal", r.base_modal},
                        {"test_modal", r.test_modal},
                        {"baseline_others_cpu_share", num(r.base_others_share)},
                        {"test_others_cpu_share", num(r.test_others_share)},
                        {"verdict", to_string(r.verdict)},
                        {"reason", r.reason}});
        if (r.edge_checked) {
            rows.back()["edge"] = to_string(r.edge);
            rows.back()["edge_detail"] = r.edge_detail;
        }
    }
    json j{{"baseline", side(c.base_info)},
           {"test", side(c.test_info)},
           {"options",
            {{"threshold", c.options.threshold},
             {"noise_floor_ns", c.options.noise_floor_ns},
             {"alpha", c.options.alpha},
             {"fail_on_undecided", c.options.fail_on_undecided}}},
           {"summary",
            {{"compared", c.rows.size()},
             {"regressions", c.regressions},
             {"improvements", c.improvements},
             {"same", c.same},
             {"noisy", c.noisy},
             {"undecided", c.undecided},
             {"gate", {{"passes", gate_failures(c).empty()}, {"failures", gate_failures(c)}}},
             {"geomean_ratio", num(c.geomean_ratio)},
             {"suite",
              {{"verdict", to_string(c.suite.verdict)},
               {"geomean_ratio", num(c.suite.geomean_ratio)},
               {"slower", c.suite.slower},
               {"faster", c.suite.faster},
               {"unchanged", c.suite.unchanged},
               {"sign_test_p", num(c.suite.p_value)},
               {"reason", c.suite.reason}}}}},
           {"rows", rows},
           {"only_in_baseline", c.only_in_base},
           {"only_in_test", c.only_in_test},
           {"not_measured_in_baseline", unmeasured(c.unmeasured_in_base, false)},
           {"not_measured_in_test", unmeasured(c.unmeasured_in_test, true)}};
    if (c.edges_checked)
        j["edge_detector"] = {{"p", c.edge_options.p},
                              {"min_segment", c.edge_options.min_segment},
                              {"min_magnitude", c.edge_options.min_magnitude}};
    // Names come from files we did not write: replace invalid UTF-8 rather than throw.
    return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace contend::lab
