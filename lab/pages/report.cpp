#include "pages/report.hpp"

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "analyze/inputs.hpp"
#include "measure/cotenant.hpp"
#include "pages/assets.hpp"
#include "pages/lock_profile_page.hpp"
#include "pages/page_parts.hpp"
#include "pages/ratio_table.hpp"
#include "results/statistics.hpp"
#include "store/interrupted.hpp"
#include "store/results_io.hpp"
#include "text/escape.hpp"
#include "text/numbers.hpp"

namespace contend::lab {
namespace {

// Distinct strings in the order they first came, each looked up in constant time: a page of a
// history of a million rows must not cost rows x distinct values (a linear search was 40,000
// rows in 4.8 s).
class first_seen {
public:
    // The index of `text`, added at the end when it is new.
    std::size_t add(const std::string& text) {
        const auto [at, added] = index_.try_emplace(text, values_.size());
        if (added) values_.push_back(text);
        return at->second;
    }
    // The index of `text`, or size() when it never came.
    std::size_t find(const std::string& text) const {
        const auto at = index_.find(text);
        return at == index_.end() ? values_.size() : at->second;
    }
    std::size_t size() const noexcept { return values_.size(); }
    const std::vector<std::string>& values() const noexcept { return values_; }

private:
    std::vector<std::string> values_;
    std::unordered_map<std::string, std::size_t> index_;
};

using nlohmann::json;

// --- Reading -----------------------------------------------------------------------------

// --- Figures -----------------------------------------------------------------------------

// A figure in a report table: a decimal more than a sentence gives (ns_text), for columns
// read side by side.
std::string format_ns(double v) {
    if (!std::isfinite(v)) return "n/a";
    const double a = std::fabs(v);
    return format_fixed(v, a < 10 ? 3 : a < 1000 ? 1 : 0);
}

bool is_number(const std::string& s, double& value) {
    if (s.empty()) return false;
    char* end = nullptr;
    value = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

std::string params_text(const cell_result& c, std::string_view except = {}) {
    std::string out;
    for (const auto& [k, v] : c.params) {
        if (k == except) continue;
        if (!out.empty()) out += ", ";
        out.append(k).append("=").append(v);
    }
    return out;
}

std::string x_value(const cell_result& c, const std::string& key) {
    if (key == "workers") return std::to_string(c.workers);
    for (const auto& [k, v] : c.params)
        if (k == key) return v;
    return "";
}

// Plotted: a valid cell whose median a log axis can show.
bool plottable(const cell_result& c) { return c.valid() && std::isfinite(c.median_ns) && c.median_ns > 0; }

json nullable(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// --- Page parts --------------------------------------------------------------------------

// One cell of a report table: a field's value as text. Figures of an invalid cell, and a
// figure that was not measured (NaN: no fairness for a non-lock cell), are left blank.
template <class T>
std::string table_text(const T& value, bool valid) {
    if constexpr (std::is_same_v<T, double>) {
        return valid && std::isfinite(value) ? format_ns(value) : "";
    } else if constexpr (std::is_same_v<T, param_list>) {
        return escape_html(format_params(value));
    } else if constexpr (std::is_same_v<T, std::string>) {
        return escape_html(value);
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::vector<double>>) {
        return "";  // no such column has a heading
    } else {
        return std::to_string(value);
    }
}

// The run's context: every field of context_fields() that has a heading, then the suites.
void context_table(std::string& out, const report_source& source) {
    out += "<table class=\"context\"><caption>" + escape_html(source.origin) + "</caption>\n";
    for (const auto& f : context_fields()) {
        if (f.heading.empty()) continue;
        std::string text = visit_field(f, source.run.context, [](const auto& v) { return table_text(v, true); });
        if (text.empty()) text = "(not known)";
        out += "<tr><th>" + escape_html(f.heading) + "</th><td>" + text + "</td></tr>\n";
    }
    const machine_context& c = source.run.context;
    out += "<tr><th>co-tenant</th><td>" + escape_html(describe_cotenant(c.busy_loops, c.busy_nice, c.one_cpu)) +
           "</td></tr>\n";
    std::string suites;
    for (const auto& name : suites_of(source.run)) suites.append(suites.empty() ? "" : ", ").append(name);
    out += "<tr><th>suites</th><td>" + escape_html(suites) + "</td></tr>\n</table>\n";
}

// The table of a suite: the cells grouped as the text table groups them (group_cells), one
// column per field that has a heading in the results model, then one per workload metric;
// the fastest valid cell of each group in bold, invalid cells with their status and why.
void cells_table(std::string& out, const std::vector<const cell_result*>& cells) {
    std::vector<std::string> metrics;
    for (const auto* c : cells)
        for (const auto& [name, value] : c->metrics)
            if (std::find(metrics.begin(), metrics.end(), name) == metrics.end()) metrics.push_back(name);
    out += "<table><thead><tr>";
    for (const auto& f : cell_fields())
        if (!f.heading.empty()) out += "<th>" + escape_html(f.heading) + "</th>";
    for (const auto& m : metrics) out += "<th>" + escape_html(m) + "</th>";
    out += "</tr></thead><tbody>\n";
    for (const auto& group : group_cells(cells)) {
        bool first_valid = true;
        for (const auto* c : group.rows) {
            const bool best = c->valid() && first_valid;
            if (c->valid()) first_valid = false;
            std::string cls = best ? "best" : c->valid() ? "" : "invalid";
            if (c->oversubscribed) cls += cls.empty() ? "oversubscribed" : " oversubscribed";
            out += cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">";
            for (const auto& f : cell_fields()) {
                if (f.heading.empty()) continue;
                std::string text = visit_field(f, *c, [&](const auto& v) { return table_text(v, c->valid()); });
                const bool numeric = std::holds_alternative<double cell_result::*>(f.member) ||
                                     std::holds_alternative<std::int32_t cell_result::*>(f.member);
                if (f.name == "status" && !c->valid())
                    text = "<span class=\"bad\">" + text + "</span>" +
                           (c->detail.empty() ? "" : ": " + escape_html(c->detail));
                if (f.name == "workers" && c->oversubscribed)
                    text += "<span class=\"flag\" title=\"more workers than CPUs\">oversubscribed</span>";
                if ((f.name == "min_share" || f.name == "max_share") && c->valid() && c->has_fairness && text.empty())
                    text = "<span class=\"flag unmeasured\" title=\"" +
                           escape_html(c->fairness_reason.empty() ? "no figure was recorded" : c->fairness_reason) +
                           "\">not measured</span>";
                if (f.name == "median_ns" && c->valid() && c->modal) {
                    const std::string groups = describe_modes(find_modes(c->ns_per_op));
                    text += "<span class=\"flag modal\" title=\"the repetitions fall into separate modes" +
                            escape_html(groups.empty() ? std::string() : ": " + groups) +
                            "; the median is not one figure\">modal</span>";
                }
                out += numeric ? "<td class=\"num\">" + text + "</td>" : "<td>" + text + "</td>";
            }
            for (const auto& m : metrics) out += "<td class=\"num\">" + table_text(c->metric(m), c->valid()) + "</td>";
            out += "</tr>\n";
        }
    }
    out += "</tbody></table>\n";
}

// The section's data for its three charts: one series per contender and remaining
// parameters (its "variant"), one value per x for each figure: median (with p25 and p75 for
// the tooltip), CPU ns per operation and the least-served share. A figure the chart cannot
// show (an invalid cell, a figure not measured) is null, drawn as a gap. `contenders` in order
// of first appearance: the order of the page's toggles and baseline choices.
json chart_data(const std::string& canvas_id, const std::string& suite, const std::vector<const cell_result*>& cells) {
    const chart_axis axis = choose_x_axis(cells);
    const std::string except = axis.key == "workers" ? "" : axis.key;
    first_seen labels, contenders, x_values;
    for (const std::string& x : axis.values) x_values.add(x);
    std::vector<json> series;
    bool any_share = false;
    for (const auto* c : cells) {
        contenders.add(c->contender);
        const std::string variant = params_text(*c, except);
        const std::string label = variant.empty() ? c->contender : c->contender + " " + variant;
        const std::size_t known = labels.size();
        const std::size_t s = labels.add(label);
        if (s == known) {
            const json empty = json::array_t(axis.values.size(), nullptr);
            series.push_back({{"label", label},
                              {"contender", c->contender},
                              {"variant", variant},
                              {"y", empty},
                              {"p25", empty},
                              {"p75", empty},
                              {"cpu", empty},
                              {"min_share", empty}});
        }
        if (!plottable(*c)) continue;
        const std::size_t x = x_values.find(x_value(*c, axis.key));
        if (x == axis.values.size() || !series[s]["y"][x].is_null()) continue;  // first valid cell wins
        series[s]["y"][x] = c->median_ns;
        series[s]["p25"][x] = nullable(c->p25_ns);
        series[s]["p75"][x] = nullable(c->p75_ns);
        // The CPU chart is on a log axis too: a zero (a clock too coarse) is a gap there.
        if (std::isfinite(c->cpu_ns_per_op) && c->cpu_ns_per_op > 0) series[s]["cpu"][x] = c->cpu_ns_per_op;
        if (std::isfinite(c->min_share)) {
            series[s]["min_share"][x] = c->min_share;
            any_share = true;
        }
    }
    std::string title = suite;
    if (axis.key != "workers" && !cells.empty())
        title += ", " + std::to_string(cells.front()->workers) + (cells.front()->workers == 1 ? " worker" : " workers");
    // The baseline a reader most often compares against, when the suite ran it; none (absolute
    // ns/op) when there is nothing to compare it with.
    const std::string baseline = contenders.size() < 2                              ? ""
                                 : contenders.find("std_mutex") < contenders.size() ? "std_mutex"
                                                                                    : contenders.values().front();
    return {{"canvas", canvas_id},
            {"cpu_canvas", canvas_id + "-cpu"},
            {"share_canvas", any_share ? json(canvas_id + "-share") : json(nullptr)},
            {"suite", suite},
            {"title", title},
            {"x_title", axis.key},
            {"labels", axis.values},
            {"contenders", contenders.values()},
            {"default_baseline", baseline},
            {"series", series}};
}

// A chart's canvas; `what` completes its accessible name.
std::string canvas(const std::string& id, const std::string& suite, const std::string& what) {
    return "<canvas id=\"" + id + "\" role=\"img\" aria-label=\"" + escape_html(suite) + ": " + what + "\"></canvas>";
}

}  // namespace

// --- Public ------------------------------------------------------------------------------

std::vector<report_source> newest_run_per_suite(const std::vector<stored_run>& history) {
    std::vector<report_source> picked;
    std::set<std::string> covered;
    for (auto it = history.rbegin(); it != history.rend(); ++it) {
        std::set<std::string> mine;
        for (const auto& suite : suites_of(it->run))
            if (covered.insert(suite).second) mine.insert(suite);
        if (mine.empty()) continue;
        report_source source{"history run " + std::to_string(it->id), run_result{it->run.context, {}}};
        for (const auto& c : it->run.cells)
            if (mine.count(c.suite)) source.run.cells.push_back(c);
        picked.push_back(std::move(source));
    }
    std::reverse(picked.begin(), picked.end());
    return picked;
}

std::vector<report_source> load_report_sources(const report_request& request) {
    std::vector<report_source> sources;
    if (!request.json_path.empty()) {
        if (request.run_id) throw std::runtime_error("--run picks a history run; it cannot be combined with --json");
        // Read as compare reads its inputs (a FIFO or `<(...)` too), and both the read and the
        // parse end at a stop signal.
        try {
            sources.push_back(
                {request.json_path, run_from_json(read_input_file(request.json_path, request.stop), request.stop)});
        } catch (const interrupted&) {
            throw;
        } catch (const input_error& e) {
            throw std::runtime_error(e.what());  // names the path
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(request.json_path + ": " + e.what());
        }
    } else {
        // history_store would create a missing file; a report must not. A PostgreSQL history
        // is no file: opening it read-only refuses a database that holds none.
        const std::string shown = history_store::printable(request.db_path);  // no password
        if (!history_store::is_database_uri(request.db_path) && !std::filesystem::exists(request.db_path))
            throw std::runtime_error("no history at " + shown + " (run `contend bench` first, or give --json FILE)");
        const history_store store(request.db_path, history_access::read_only, request.stop);
        if (request.run_id) {
            auto run = store.run(*request.run_id);
            if (!run)
                throw std::runtime_error("history " + shown + " has no run " + std::to_string(*request.run_id) +
                                         " (it holds " + std::to_string(store.run_count()) + " runs)");
            sources.push_back({"history run " + std::to_string(*request.run_id), std::move(*run)});
        } else {
            sources = newest_run_per_suite(store.stored_runs());
            if (sources.empty())
                throw std::runtime_error("history " + shown + " holds no results yet (run `contend bench` first)");
        }
    }
    const bool any_cell =
        std::any_of(sources.begin(), sources.end(), [](const report_source& s) { return !s.run.cells.empty(); });
    if (!any_cell) throw std::runtime_error(sources.front().origin + " holds no result rows: nothing to report");
    return sources;
}

chart_axis choose_x_axis(const std::vector<const cell_result*>& cells) {
    auto distinct = [&](const std::string& key) {
        first_seen values;
        for (const auto* c : cells) values.add(x_value(*c, key));
        return values.values();
    };
    chart_axis axis{"workers", distinct("workers")};
    if (axis.values.size() <= 1) {
        first_seen keys;
        for (const auto* c : cells)
            for (const auto& [k, v] : c->params) keys.add(k);
        for (const auto& key : keys.values()) {
            std::vector<std::string> values = distinct(key);
            if (values.size() > std::max<std::size_t>(axis.values.size(), 1)) axis = {key, std::move(values)};
        }
    }
    double a = 0, b = 0;
    const bool numeric =
        std::all_of(axis.values.begin(), axis.values.end(), [&](const std::string& v) { return is_number(v, a); });
    if (numeric)
        std::stable_sort(axis.values.begin(), axis.values.end(), [&](const std::string& x, const std::string& y) {
            is_number(x, a);
            is_number(y, b);
            return a < b;
        });
    return axis;
}

std::string render_report(const std::vector<report_source>& sources, std::string_view chart_library) {
    const std::string_view library = inlinable_chart_library(chart_library);
    const std::string_view style = inlinable(assets::style_css.text, "style", assets::style_css.path);
    const std::string_view error_trap = inlinable(assets::error_trap_js.text, "script", assets::error_trap_js.path);
    const std::string_view drawing = inlinable(assets::render_js.text, "script", assets::render_js.path);

    std::string sections;
    json charts = json::array(), lock_charts = json::array();
    std::size_t suite_count = 0, side_charts = 0, lock_charts_expected = 0;
    for (const auto& source : sources) {
        for (const auto& suite : suites_of(source.run)) {
            std::vector<const cell_result*> cells;
            for (const auto& c : source.run.cells)
                if (c.suite == suite) cells.push_back(&c);
            const std::string id = "chart-" + std::to_string(suite_count++);
            const json chart = chart_data(id, suite, cells);
            const auto valid =
                std::count_if(cells.begin(), cells.end(), [](const cell_result* c) { return c->valid(); });
            std::string axis_note = "x axis: " + chart["x_title"].get<std::string>();
            if (chart["x_title"] != "workers") axis_note += " (the suite ran one worker count)";
            sections += "<section class=\"suite\" id=\"suite-" + std::to_string(suite_count - 1) + "\" data-suite=\"" +
                        escape_html(suite) + "\">\n<h2>" + escape_html(suite) + "</h2>\n<p class=\"note\">From " +
                        escape_html(source.origin) + " (" + escape_html(source.run.context.date) +
                        (source.run.context.label.empty() ? "" : ", ") + escape_html(source.run.context.label) + "). " +
                        std::to_string(valid) + " of " + std::to_string(cells.size()) +
                        " cells valid; invalid cells are listed, not plotted. " + escape_html(axis_note) + ".</p>\n";
            // The controls are the script's to fill (render.js): without it they would do nothing.
            sections += "<div class=\"controls\" id=\"" + id + "-controls\"></div>\n<div class=\"charts\">\n";
            sections += "<div class=\"chart main\">" + canvas(id, suite, "median ns per operation") + "</div>\n";
            sections += "<div class=\"side\">\n<div class=\"chart small\">" +
                        canvas(id + "-cpu", suite, "CPU ns per operation") + "</div>\n";
            const bool any_unmeasured = std::any_of(cells.begin(), cells.end(), [](const cell_result* c) {
                return c->valid() && c->has_fairness && std::isnan(c->min_share);
            });
            sections += chart["share_canvas"].is_null()
                            ? std::string(any_unmeasured
                                              ? "<p class=\"note no-share\">No fairness figures: the repetitions were "
                                                "too short for the scheduler to run every worker (the table's min "
                                                "share says why, cell by cell).</p>\n"
                                              : "<p class=\"note no-share\">No fairness figures: no cell of this "
                                                "suite measured the least-served worker's share.</p>\n")
                            : "<div class=\"chart small\">" +
                                  canvas(id + "-share", suite, "least-served worker's share of the mean progress") +
                                  "</div>\n";
            sections += "</div>\n</div>\n<div class=\"cells\">\n";
            // Which lock for which program: each lock's rate against glibc's, program by program.
            if (suite == "programs") sections += ratio_table_html(cells, "glibc");
            cells_table(sections, cells);
            // A profiled contend run's rows: their locks' waits and stacks.
            lock_charts_expected += lock_profile_html(sections, lock_charts, id + "-lock", cells);
            sections += "</div>\n</section>\n";
            side_charts += chart["share_canvas"].is_null() ? 1 : 2;
            charts.push_back(chart);
        }
    }

    std::string out;
    out.reserve(library.size() + sections.size() + 16384);
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    // Nothing may be fetched: everything the page needs is in it.
    out +=
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>contend report</title>\n";
    out += "<style>\n";
    out += style;
    out += "</style>\n</head>\n";
    // The figures the script records once it has drawn (report.hpp), zero until then, so a
    // page whose script never ran reads as having drawn nothing.
    out += "<body data-charts-expected=\"" + std::to_string(suite_count) +
           "\" data-charts-rendered=\"0\" data-side-charts-expected=\"" + std::to_string(side_charts) +
           "\" data-side-charts-rendered=\"0\" data-lock-charts-expected=\"" + std::to_string(lock_charts_expected) +
           "\" data-lock-charts-rendered=\"0\" data-points-plotted=\"0\" data-ratio-points-plotted=\"0\" "
           "data-baseline=\"\" data-shown=\"\" data-errors=\"0\">\n";
    out += "<script>\n";
    out += error_trap;
    out += "</script>\n";
    out +=
        "<h1>contend report</h1>\n<p class=\"note\">Per suite, against workers or the suite's parameter: the "
        "median wall-clock ns per operation (all workers together) of each contender as a multiple of a baseline's "
        "at the same point (pick the baseline, or absolute ns/op, above the chart; below 1 is faster), its CPU ns "
        "per operation, and the least-served worker's share of the mean progress; all on log scales but the "
        "share. The checkboxes choose the lines of all three charts; the address of the page keeps the choice "
        "(#baseline=NAME&amp;show=NAME,NAME). The tables hold every cell. Compare figures of one machine "
        "only.</p>\n";
    out += "<noscript><p class=\"bad\">The charts need JavaScript; the tables below do not.</p></noscript>\n";
    out += "<h2>Runs</h2>\n<div class=\"runs\">\n";
    for (const auto& source : sources) context_table(out, source);
    out += "</div>\n";
    out += sections;
    out +=
        "<footer>Written by <code>contend report</code>. Bold: the fastest valid cell of its parameter point and "
        "worker count. modal: the cell's repetitions fall into separate modes, so its median is not one figure. "
        "min/max share: the least and most served worker's progress as a fraction of the mean, not measured "
        "when the repetitions were too short for the scheduler to run every worker. "
        "Charts drawn by " +
        escape_html(chart_library_name(library)) + " (MIT licence), inlined in this page.</footer>\n";
    out += "<script type=\"application/json\" id=\"report-data\">" +
           script_safe_json({{"charts", charts}, {"lock_charts", lock_charts}}) + "</script>\n";
    out += "<script>\n";
    out += library;
    out += "\n</script>\n";
    out += "<script>\n";
    out += drawing;
    out += "</script>\n</body>\n</html>\n";
    return out;
}

}  // namespace contend::lab
