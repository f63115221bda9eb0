// The results as CSV and as the table `contend bench` prints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <type_traits>

#include "results/statistics.hpp"
#include "store/results_io.hpp"

namespace contend::lab {
namespace {

std::string csv_quote(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}

std::string num(double v, const char* format = "%.6g") {
    if (!std::isfinite(v)) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

template <class T>
std::string csv_value(const T& value) {
    if constexpr (std::is_same_v<T, double>) {
        return num(value);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        return format_samples(value);
    } else if constexpr (std::is_same_v<T, param_list>) {
        return format_params(value);
    } else if constexpr (std::is_same_v<T, bool>) {
        return value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::string>) {
        return value;
    } else {
        return std::to_string(value);
    }
}

std::vector<std::string> metric_names(const std::vector<const cell_result*>& cells) {
    std::vector<std::string> names;
    for (const auto* c : cells)
        for (const auto& [name, value] : c->metrics)
            if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    return names;
}

}  // namespace

std::string to_csv(const run_result& run) {
    std::vector<const cell_result*> cells;
    for (const auto& c : run.cells) cells.push_back(&c);
    const auto metrics = metric_names(cells);
    std::ostringstream out;
    out << "name,valid";
    for (const auto& f : cell_fields()) out << ',' << f.name;
    for (const auto& m : metrics) out << ',' << m;
    out << '\n';
    for (const auto* c : cells) {
        out << csv_quote(c->name()) << ',' << (c->valid() ? "true" : "false");
        for (const auto& f : cell_fields())
            visit_field(f, *c, [&](const auto& value) { out << ',' << csv_quote(csv_value(value)); });
        for (const auto& m : metrics) out << ',' << num(c->metric(m));
        out << '\n';
    }
    return out.str();
}

std::vector<std::string> suites_of(const run_result& run) {
    std::vector<std::string> suites;
    for (const auto& c : run.cells)
        if (std::find(suites.begin(), suites.end(), c.suite) == suites.end()) suites.push_back(c.suite);
    return suites;
}

std::vector<cell_group> group_cells(const std::vector<const cell_result*>& cells) {
    bool one_contender = true;
    for (const auto* c : cells) one_contender = one_contender && c->contender == cells.front()->contender;
    // A single contender with several parameter points compares the points.
    bool several_points = false;
    for (const auto* c : cells) several_points = several_points || c->params != cells.front()->params;
    const bool compares_points = one_contender && several_points;
    auto params_of = [compares_points](const cell_result& c) {
        std::string p;
        if (compares_points) return p;
        // Appends only: GCC 12 warns (-Wrestrict, a false positive) on "x" + std::string&&.
        for (const auto& [k, v] : c.params) p.append(p.empty() ? "" : ", ").append(k).append(" ").append(v);
        return p;
    };
    std::vector<cell_group> groups;
    for (const auto* c : cells) {
        const std::string params = params_of(*c);
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const cell_group& g) { return g.params == params && g.workers == c->workers; });
        if (it == groups.end()) it = groups.insert(groups.end(), cell_group{params, c->workers, compares_points, {}});
        it->rows.push_back(c);
    }
    for (auto& g : groups)
        std::stable_sort(g.rows.begin(), g.rows.end(), [](const cell_result* a, const cell_result* b) {
            if (a->valid() != b->valid()) return a->valid();
            return a->median_ns < b->median_ns;
        });
    return groups;
}

std::string to_table(const run_result& run) {
    std::ostringstream out;
    std::vector<const cell_result*> modal, shared;
    std::vector<std::string> unmeasured;  // why a fairness figure was not measured, once each
    for (const auto& suite : suites_of(run)) {
        std::vector<const cell_result*> cells;
        for (const auto& c : run.cells)
            if (c.suite == suite) cells.push_back(&c);
        for (const auto& g : group_cells(cells)) {
            const bool over = g.rows.front()->oversubscribed;
            const std::string& operation = g.rows.front()->operation;
            out << "\n"
                << suite << (g.params.empty() ? "" : ", ") << g.params << ", " << g.workers
                << (g.workers == 1 ? " worker" : " workers")
                << (operation.empty() || operation == "op" ? "" : ", ns per ") << (operation == "op" ? "" : operation)
                << (over ? "  (oversubscribed: more workers than CPUs)" : "") << "\n";
            out << "  " << std::string(24, ' ') << "   ns/op    p25-p75          cpu ns/op   min/max share\n";
            bool first_valid = true;
            for (const auto* c : g.rows) {
                std::string label = c->contender;
                if (g.compares_points && !c->params.empty()) label.append("/").append(format_params(c->params));
                char line[256];
                if (c->status == "skipped") {
                    std::snprintf(line, sizeof line, "  %-24s   skipped: ", label.c_str());
                    out << line << c->detail << "\n";
                    continue;
                }
                if (!c->valid()) {
                    std::snprintf(line, sizeof line, "  %-24s   INVALID (%s) ", label.c_str(), c->status.c_str());
                    out << line << c->detail << "\n";
                    continue;
                }
                std::string share;
                if (c->has_fairness && std::isfinite(c->min_share) && std::isfinite(c->max_share)) {
                    share = num(c->min_share, "%.2f") + " / " + num(c->max_share, "%.2f");
                } else if (c->has_fairness) {
                    // Not measured: a marker here, the reason once in a footnote.
                    const std::string why = c->fairness_reason.empty() ? "no figure was recorded" : c->fairness_reason;
                    auto at = std::find(unmeasured.begin(), unmeasured.end(), why);
                    if (at == unmeasured.end()) at = unmeasured.insert(unmeasured.end(), why);
                    share = "n/m [" + std::to_string(at - unmeasured.begin() + 1) + "]";
                }
                // '~' right after the median: not one figure; '!' after it: measured beside a
                // co-tenant (the footnotes say why and how much).
                std::snprintf(line, sizeof line, "%s %-24s %8.3f%c%c%8.3f-%-8.3f %10.3f   %-13s",
                              first_valid ? "*" : " ", label.c_str(), c->median_ns, c->modal ? '~' : ' ',
                              c->shared() ? '!' : ' ', c->p25_ns, c->p75_ns, c->cpu_ns_per_op, share.c_str());
                if (c->modal) modal.push_back(c);
                if (c->shared()) shared.push_back(c);
                std::string row = line;
                for (const auto& [name, value] : c->metrics)
                    row.append("  ").append(name).append(" ").append(num(value, "%.4g"));
                while (!row.empty() && row.back() == ' ') row.pop_back();
                out << row << "\n";
                first_valid = false;
            }
        }
    }
    out << "\n* fastest valid row of its table. ns/op: wall time per completed operation (all workers), "
           "median of repetitions.\n";
    if (!modal.empty()) {
        out << "~ modal: the repetitions fall into separate modes, so the median is not one figure "
               "(docs/lab.md, modal cells):\n";
        for (const auto* c : modal) {
            const std::string groups = describe_modes(find_modes(c->ns_per_op));
            out << "    " << c->name() << ": " << (groups.empty() ? "flagged when it was measured" : groups) << "\n";
        }
    }
    if (!shared.empty()) {
        out << "! shared: other processes took more than " << num(shared_above * 100, "%.0f")
            << " % of the cell's CPUs while it was measured, so its figures are not this machine's alone "
               "(docs/lab.md, co-tenants the lab did not start):\n";
        for (const auto* c : shared) {
            out << "    " << c->name() << ": " << num(c->others_cpu_share * 100, "%.0f") << " % of its CPUs' time";
            if (std::isfinite(c->others_runnable))
                out << ", up to " << num(c->others_runnable, "%.0f") << " runnable threads of other processes";
            out << "\n";
        }
    }
    for (std::size_t i = 0; i < unmeasured.size(); ++i)
        out << "[" << i + 1 << "] min/max share not measured: " << unmeasured[i] << "\n";
    return out.str();
}

}  // namespace contend::lab
