#include "pages/html_page.hpp"
#include "text/utf8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "pages/assets.hpp"
#include "pages/page_parts.hpp"
#include "text/escape.hpp"
#include "text/numbers.hpp"

namespace contend::lab {
namespace {

using nlohmann::json;

// --- Text --------------------------------------------------------------------------------

// Text from an input, as HTML text or an attribute value.
std::string html(std::string_view text) { return escape_html(valid_utf8(text)); }

// Figures are spelled as comparison_to_markdown spells them: format_fixed, format_percent and
// format_p (compare.hpp), so the page and the Markdown report of one comparison read the same.

// As `contend history --changes` prints its rules: 0.001, 1e-05.
std::string general(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string signed_percent(double before, double after) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%+.1f %%", (after - before) / before * 100);
    return buf;
}

json nullable(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string plural(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// --- The page's frame --------------------------------------------------------------------

struct page_counts {
    std::size_t charts = 0, change_points = 0;
};

// Everything around the body's content: the head with the CSP and the style, <body> with
// its data-* attributes, the error trap first, the data, Chart.js and the drawing script last.
std::string page(const std::string& title, const std::string& content, const json& data, const page_counts& counts,
                 std::string_view chart_library) {
    const std::string_view library = inlinable_chart_library(chart_library);
    const std::string_view style = inlinable(assets::history_css.text, "style", assets::history_css.path);
    const std::string_view error_trap = inlinable(assets::error_trap_js.text, "script", assets::error_trap_js.path);
    const std::string_view drawing = inlinable(assets::history_js.text, "script", assets::history_js.path);
    std::string out;
    out.reserve(library.size() + content.size() + 16384);
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    // Nothing may be fetched: everything the page needs is in it.
    out +=
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" + html(title) +
           "</title>\n<style>\n";
    out += style;
    out += "</style>\n</head>\n";
    out += "<body data-charts-expected=\"" + std::to_string(counts.charts) +
           "\" data-charts-rendered=\"0\" data-change-points-expected=\"" + std::to_string(counts.change_points) +
           "\" data-change-points-marked=\"0\" data-runs-marked=\"0\" data-errors=\"0\">\n<script>\n";
    out += error_trap;
    out += "</script>\n";
    out += content;
    out += "<noscript><p class=\"bad\">The charts need JavaScript; the tables do not.</p></noscript>\n";
    out += "<footer>Charts drawn by " + escape_html(chart_library_name(library)) +
           " (MIT licence), inlined in this page.</footer>\n";
    out += "<script type=\"application/json\" id=\"page-data\">" + script_safe_json(data) + "</script>\n<script>\n";
    out += library;
    out += "\n</script>\n<script>\n";
    out += drawing;
    out += "</script>\n</body>\n</html>\n";
    return out;
}

// A chart's place on the page: a canvas the script finds by id.
std::string canvas(const std::string& id, const std::string& name, const char* what, const char* size_class) {
    return "<div class=\"chart " + std::string(size_class) + "\"><canvas id=\"" + id + "\" role=\"img\" aria-label=\"" +
           html(name) + ": " + what + "\"></canvas></div>\n";
}

// A benchmark's history chart as the script reads it. Segment means: for each point, the
// mean of the segment it lies in, bounded by the change points (each change point carries the
// means of the segments either side of it).
json history_chart(const std::string& id, const benchmark_history& s) {
    json steps = nullptr, changes = json::array();
    if (!s.changes.empty()) {
        steps = json::array();
        std::size_t next = 0;
        for (std::size_t i = 0; i < s.medians.size(); ++i) {
            while (next < s.changes.size() && s.changes[next].point.index <= i) ++next;
            steps.push_back(next < s.changes.size() ? s.changes[next].point.before_mean
                                                    : s.changes.back().point.after_mean);
        }
    }
    for (const auto& c : s.changes)
        changes.push_back({{"index", c.point.index},
                           {"before", c.point.before_mean},
                           {"after", c.point.after_mean},
                           {"text", signed_percent(c.point.before_mean, c.point.after_mean)}});
    json p25 = json::array(), p75 = json::array();
    for (std::size_t i = 0; i < s.medians.size(); ++i) {
        p25.push_back(nullable(s.p25[i]));
        p75.push_back(nullable(s.p75[i]));
    }
    return {{"canvas", id}, {"kind", "history"}, {"title", s.name}, {"labels", s.run_names}, {"median", s.medians},
            {"p25", p25},   {"p75", p75},        {"steps", steps},  {"changes", changes},    {"marks", json::array()}};
}

void changes_table(std::string& out, const std::vector<const benchmark_history*>& shown,
                   const std::map<const benchmark_history*, std::string>& anchors) {
    out +=
        "<table class=\"changes\"><thead><tr><th>Benchmark</th><th>Old (ns)</th><th>New (ns)</th>"
        "<th>Change</th><th>Between</th><th>And</th><th>p (t-test)</th></tr></thead><tbody>\n";
    for (const auto* s : shown) {
        for (const auto& c : s->changes) {
            const bool slower = c.point.after_mean > c.point.before_mean;
            out += "<tr class=\"" + std::string(slower ? "slower" : "faster") + "\"><td><a href=\"#" + anchors.at(s) +
                   "\">" + html(s->name) + "</a></td><td class=\"num\">" + ns_text(c.point.before_mean) +
                   "</td><td class=\"num\">" + ns_text(c.point.after_mean) + "</td><td class=\"num\">" +
                   signed_percent(c.point.before_mean, c.point.after_mean) + "</td><td>" + html(c.label_before) +
                   "</td><td>" + html(c.label_after) + "</td><td class=\"num\">" + format_p(c.point.p_value) +
                   "</td></tr>\n";
        }
    }
    out += "</tbody></table>\n";
}

// --- The compare page's parts ------------------------------------------------------------

void run_info_row(std::string& out, const char* what, const std::string& base, const std::string& test) {
    out += "<tr><th>" + std::string(what) + "</th><td>" + html(base.empty() ? "-" : base) + "</td><td>" +
           html(test.empty() ? "-" : test) + "</td></tr>\n";
}

const benchmark_series* find_series(const comparison_input* in, const std::string& name) {
    if (!in) return nullptr;
    for (const auto& b : in->benchmarks)
        if (b.name == name) return &b;
    return nullptr;
}

// A side of a strip chart: its repetitions, or its median alone when it has none.
json strip_side(const benchmark_series* s) {
    if (!s) return json::array();
    return s->samples_ns.empty() ? json::array({s->median_ns}) : json(s->samples_ns);
}

struct compare_builder {
    const comparison& c;
    const compare_page_evidence& evidence;
    json charts = json::array();
    page_counts counts;

    // The chart under a row, or a note saying why there is none.
    std::string evidence_for(const compare_row& r, const std::string& anchor) {
        const std::string id = "chart-" + std::to_string(charts.size());
        if (evidence.history) {
            const auto it = std::find_if(evidence.history->begin(), evidence.history->end(),
                                         [&](const benchmark_history& h) { return h.name == r.name; });
            if (it == evidence.history->end())
                return "<p class=\"note\" id=\"" + anchor + "\">" + html(r.name) +
                       ": not in the history's series.</p>\n";
            json chart = history_chart(id, *it);
            for (std::size_t i = 0; i < it->run_ids.size(); ++i) {
                if (it->run_ids[i] == evidence.base_run) chart["marks"].push_back({{"index", i}, {"text", "baseline"}});
                if (it->run_ids[i] == evidence.test_run) chart["marks"].push_back({{"index", i}, {"text", "test"}});
            }
            ++counts.charts;
            counts.change_points += it->changes.size();
            charts.push_back(std::move(chart));
            return "<figure id=\"" + anchor + "\">" +
                   canvas(id, r.name, "median ns per operation over the history", "wide") + "<figcaption>" +
                   html(r.name) + ": every run of the history that holds it; " +
                   plural(it->changes.size(), "change point", "change points") +
                   ". Green dotted lines and rings: the baseline and test runs." +
                   (r.edge_checked
                        ? " The edge detector: " + html(std::string(to_string(r.edge)) + ", " + r.edge_detail) + "."
                        : std::string()) +
                   "</figcaption></figure>\n";
        }
        const benchmark_series* b = find_series(evidence.base, r.name);
        const benchmark_series* t = find_series(evidence.test, r.name);
        if (!b || !t)
            return "<p class=\"note\" id=\"" + anchor + "\">" + html(r.name) + ": no repetitions to show.</p>\n";
        charts.push_back({{"canvas", id},
                          {"kind", "strip"},
                          {"title", r.name},
                          {"base", strip_side(b)},
                          {"test", strip_side(t)},
                          {"base_median", r.base_ns},
                          {"test_median", r.test_ns}});
        ++counts.charts;
        std::string note;
        if (b->samples_ns.empty() || t->samples_ns.empty()) note = " A side with aggregates only shows its median.";
        return "<figure id=\"" + anchor + "\">" + canvas(id, r.name, "repetitions, baseline and test", "strip") +
               "<figcaption>" + html(r.name) + ": each repetition, ns per operation; bars: the medians." + note +
               "</figcaption></figure>\n";
    }

    void verdict_section(std::string& out, compare_verdict which, const char* title, const char* prefix,
                         const std::string& note = "") {
        std::map<std::string, std::vector<const compare_row*>> by_suite;
        for (const auto& r : c.rows)
            if (r.verdict == which) by_suite[r.suite].push_back(&r);
        out += "<h2>" + std::string(title) + "</h2>\n";
        if (by_suite.empty()) {
            out += "<p>None.</p>\n";
            return;
        }
        if (!note.empty()) out += "<p class=\"note\">" + escape_html(note) + "</p>\n";
        std::size_t n = 0;
        for (auto& [suite, rows] : by_suite) {
            // Worst first, as in the Markdown report: the largest move away from 1.
            std::sort(rows.begin(), rows.end(), [](const compare_row* a, const compare_row* b) {
                return std::fabs(std::log(a->ratio)) > std::fabs(std::log(b->ratio));
            });
            out += "<h3>" + html(suite) + "</h3>\n";
            out +=
                "<table class=\"rows\"><thead><tr><th>Benchmark</th><th>Baseline (ns)</th><th>Test (ns)</th>"
                "<th>Test/Base</th><th>p (U test)</th><th>Spread base</th><th>Spread test</th><th>Repetitions</th>" +
                std::string(c.edges_checked ? "<th>History</th>" : "") + "</tr></thead><tbody>\n";
            std::string figures;
            for (const auto* r : rows) {
                const std::string anchor = std::string(prefix) + "-" + std::to_string(n++);
                out += "<tr><td><a href=\"#" + anchor + "\">" + html(r->name) + "</a></td><td class=\"num\">" +
                       format_fixed(r->base_ns, 3) + "</td><td class=\"num\">" + format_fixed(r->test_ns, 3) +
                       "</td><td class=\"num\">" + format_fixed(r->ratio, 3) + "</td><td class=\"num\">" +
                       format_p(r->p_value) + "</td><td class=\"num\">" + format_percent(r->base_spread) +
                       "</td><td class=\"num\">" + format_percent(r->test_spread) + "</td><td class=\"num\">" +
                       std::to_string(r->base_samples) + " / " + std::to_string(r->test_samples) + "</td>";
                if (c.edges_checked)
                    out += "<td>" +
                           (r->edge_checked ? html(std::string(to_string(r->edge)) + ": " + r->edge_detail)
                                            : std::string("-")) +
                           "</td>";
                out += "</tr>\n";
                figures += evidence_for(*r, anchor);
            }
            out += "</tbody></table>\n<div class=\"figures\">\n" + figures + "</div>\n";
        }
    }
};

}  // namespace

std::string render_history_page(const std::vector<stored_run>& runs, const std::vector<benchmark_history>& series,
                                const history_page_request& request, std::string_view chart_library) {
    // Benchmarks with changes first; otherwise in order of first appearance (stable).
    std::vector<const benchmark_history*> shown;
    for (const auto& s : series) shown.push_back(&s);
    std::stable_partition(shown.begin(), shown.end(), [](const benchmark_history* s) { return !s->changes.empty(); });
    std::map<const benchmark_history*, std::string> anchors;
    for (std::size_t i = 0; i < shown.size(); ++i) anchors[shown[i]] = "bench-" + std::to_string(i);

    page_counts counts;
    std::size_t changed = 0;
    for (const auto* s : shown) {
        counts.change_points += s->changes.size();
        changed += !s->changes.empty();
    }
    const std::string glob = request.name_glob.empty() ? "every benchmark" : "benchmarks matching " + request.name_glob;
    std::string out = "<h1>contend history: " + html(request.db_path) + "</h1>\n";
    out += "<p class=\"lead\">" + plural(counts.change_points, "change", "changes") + " in " +
           plural(changed, "benchmark", "benchmarks") + " of " + std::to_string(shown.size()) + " (" + html(glob) +
           ") over " + plural(runs.size(), "run", "runs") + ".</p>\n";
    out +=
        "<p class=\"note\">A change point is a run after which a benchmark's median moved to a new level and stayed "
        "there (E-divisive means, then Student's t-test between the neighbouring segments, corrected for the choice of "
        "the split): p &lt; " +
        general(request.options.p) + ", at least " + std::to_string(request.options.min_segment) +
        " runs on each side, a change of means of at least " + format_percent(request.options.min_magnitude) +
        ". A run without a valid cell of a benchmark is left out of its series.</p>\n";
    out += "<h2>Changes</h2>\n";
    if (counts.change_points == 0) out += "<p>None.</p>\n";
    else changes_table(out, shown, anchors);

    json charts = json::array();
    out +=
        "<h2>Benchmarks</h2>\n<p class=\"note\">Median ns per operation of each run (its label, or run &lt;id&gt;), "
        "bars from p25 to p75 of its repetitions; red dashed lines: change points, between the two runs that "
        "bracket them; orange steps: the mean of each segment.</p>\n";
    for (const auto* s : shown) {
        const std::string id = "chart-" + std::to_string(charts.size());
        out += "<section class=\"benchmark\" id=\"" + anchors[s] + "\">\n<h3>" + html(s->name) + "</h3>\n";
        out += "<p class=\"note\">" + plural(s->medians.size(), "run", "runs") + ", " +
               plural(s->changes.size(), "change point", "change points");
        for (const auto& c : s->changes)
            out += "; " + ns_text(c.point.before_mean) + " -> " + ns_text(c.point.after_mean) + " ns (" +
                   signed_percent(c.point.before_mean, c.point.after_mean) + ") between " + html(c.label_before) +
                   " and " + html(c.label_after);
        out += ".</p>\n" + canvas(id, s->name, "median ns per operation over the runs", "wide") + "</section>\n";
        charts.push_back(history_chart(id, *s));
    }
    if (shown.empty()) out += "<p>No benchmark has a valid result in these runs.</p>\n";
    counts.charts = charts.size();

    out +=
        "<h2 id=\"runs\">Runs</h2>\n<table class=\"runs\"><thead><tr><th>Id</th><th>Label</th><th>Date</th>"
        "<th>CPU</th><th>Host</th><th>Cells (valid)</th></tr></thead><tbody>\n";
    for (const auto& r : runs) {
        const auto& c = r.run.context;
        out += "<tr><td class=\"num\">" + std::to_string(r.id) + "</td><td>" + html(c.label.empty() ? "-" : c.label) +
               "</td><td>" + html(c.date) + "</td><td>" + html(c.cpu_model.empty() ? "-" : c.cpu_model) + "</td><td>" +
               html(c.host_name.empty() ? "-" : c.host_name) + "</td><td class=\"num\">" +
               std::to_string(r.run.cells.size()) + " (" + std::to_string(r.run.valid_cells()) + ")</td></tr>\n";
    }
    out += "</tbody></table>\n";
    return page("contend history: " + request.db_path, out, {{"charts", charts}}, counts, chart_library);
}

std::string render_compare_page(const comparison& c, const std::string& repro_command,
                                const compare_page_evidence& evidence, std::string_view chart_library) {
    const std::string base_name = c.base_info.label.empty() ? c.base_info.source : c.base_info.label;
    const std::string test_name = c.test_info.label.empty() ? c.test_info.source : c.test_info.label;
    std::string out = "<h1>contend compare: " + html(base_name) + " vs " + html(test_name) + "</h1>\n";
    out +=
        "<h2>Run information</h2>\n<table class=\"info\"><thead><tr><th></th><th>Baseline</th><th>Test</th></tr>"
        "</thead><tbody>\n";
    run_info_row(out, "Source", c.base_info.source, c.test_info.source);
    run_info_row(out, "Format", c.base_info.format, c.test_info.format);
    run_info_row(out, "Label", c.base_info.label, c.test_info.label);
    run_info_row(out, "Date", c.base_info.date, c.test_info.date);
    run_info_row(out, "CPU", c.base_info.cpu_model, c.test_info.cpu_model);
    run_info_row(out, "Version", c.base_info.version, c.test_info.version);
    out += "</tbody></table>\n<h2>Summary</h2>\n<p class=\"lead\">" + plural(c.rows.size(), "benchmark", "benchmarks") +
           " compared: " + (c.regressions ? "<strong class=\"bad\">" : "<strong>") +
           plural(c.regressions, "regression", "regressions") + "</strong>, <strong>" +
           plural(c.improvements, "improvement", "improvements") + "</strong>, " + std::to_string(c.same) + " same, " +
           std::to_string(c.noisy) + " noisy, " + std::to_string(c.undecided) +
           " undecided. Geometric mean of Test/Base: " + format_fixed(c.geomean_ratio, 4) + ".</p>\n";
    out += gate_failures(c).empty()
               ? "<p class=\"lead\">" + escape_html(gate_sentence(c)) + "</p>\n"
               : "<p class=\"lead\"><strong class=\"bad\">Gate: fails</strong>: " + escape_html(gate_reasons(c)) +
                     ".</p>\n";
    out += c.suite.verdict == compare_verdict::regression
               ? "<p class=\"lead\"><strong class=\"bad\">" + escape_html(suite_sentence(c)) + "</strong></p>\n"
               : "<p class=\"lead\">" + escape_html(suite_sentence(c)) + "</p>\n";
    out += "<p class=\"note\">" + escape_html(comparison_rules(c));
    out += "</p>\n";

    compare_builder builder{c, evidence, json::array(), {}};
    builder.verdict_section(out, compare_verdict::regression, "Regressions", "regression");
    builder.verdict_section(out, compare_verdict::improvement, "Improvements", "improvement");
    builder.verdict_section(out, compare_verdict::undecided, "Undecided", "undecided", undecided_note(c));

    out += c.edges_checked ? "<h2>Noisy</h2>\n<p class=\"note\">Past the thresholds but not shown to differ (too few "
                             "repetitions, samples that overlap, a side whose repetitions fall into separate modes, "
                             "or no change point in the history between the two runs).</p>\n"
                           : "<h2>Noisy</h2>\n<p class=\"note\">Past the thresholds but not shown to differ (too few "
                             "repetitions, samples that overlap, or a side whose repetitions fall into separate "
                             "modes).</p>\n";
    std::string noisy;
    for (const auto& r : c.rows)
        if (r.verdict == compare_verdict::noisy)
            noisy += "<li>" + html(r.name) + ": " + format_fixed(r.base_ns, 3) + " -&gt; " +
                     format_fixed(r.test_ns, 3) + " ns (" + format_fixed(r.ratio, 3) + "x); " + html(r.reason) +
                     "</li>\n";
    out += noisy.empty() ? "<p>None.</p>\n" : "<ul>\n" + noisy + "</ul>\n";
    out += "<h2>On one side only</h2>\n";
    if (c.only_in_base.empty() && c.only_in_test.empty()) out += "<p>None.</p>\n";
    else {
        out += "<ul>\n";
        for (const auto& n : c.only_in_base) out += "<li>only in the baseline: " + html(n) + "</li>\n";
        for (const auto& n : c.only_in_test) out += "<li>only in the test: " + html(n) + "</li>\n";
        out += "</ul>\n";
    }
    out += "<h2>Not measured</h2>\n";
    if (c.unmeasured_in_base.empty() && c.unmeasured_in_test.empty()) out += "<p>None.</p>\n";
    else {
        out += "<ul>\n";
        for (const auto& u : c.unmeasured_in_base)
            out += "<li>in the baseline: " + html(u.name) + ": " + html(u.reason) +
                   (u.measured_on_other_side ? " (measured in the test)" : "") + "</li>\n";
        for (const auto& u : c.unmeasured_in_test)
            out += "<li>in the test: " + html(u.name) + ": " + html(u.reason) +
                   (u.fails_gate ? " <strong class=\"bad\">(measured in the baseline: fails the gate)</strong>"
                    : u.measured_on_other_side ? " (measured in the baseline)"
                                               : "") +
                   "</li>\n";
        out += "</ul>\n";
    }
    out += "<h2>What the columns mean</h2>\n<ul>\n";
    for (const auto& [name, meaning] : column_meanings(c))
        out += "<li><strong>" + escape_html(name) + "</strong>: " + escape_html(meaning) + "</li>\n";
    out += "</ul>\n";
    out += "<h2>Repro</h2>\n<pre><code>" + html(repro_command) + "</code></pre>\n";
    return page("contend compare: " + base_name + " vs " + test_name, out, {{"charts", builder.charts}}, builder.counts,
                chart_library);
}

}  // namespace contend::lab
