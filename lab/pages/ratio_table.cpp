// The ratio table of `contend report` (see ratio_table.hpp).
#include "pages/ratio_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "text/escape.hpp"

namespace contend::lab {

namespace {

// Within this of 1 a ratio is not coloured: the repetitions of one program under one lock
// spread by a few percent on the 2-vCPU VM (docs/lab.md, "The programs suite").
constexpr double neutral_band = 0.03;

std::string ratio_text(double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f", v);
    return s;
}

}  // namespace

rate_ratio ratio_to(const cell_result& cell, const cell_result& baseline) {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (!cell.valid() || !baseline.valid() || !(cell.median_ns > 0) || !(baseline.median_ns > 0)) return {nan, nan};
    const double spread = (cell.p75_ns - cell.p25_ns) / 2 / cell.median_ns;
    return {baseline.median_ns / cell.median_ns, std::isfinite(spread) ? spread : nan};
}

std::string ratio_table_html(const std::vector<const cell_result*>& cells, const std::string& baseline) {
    std::vector<std::string> rows, columns{baseline};
    std::map<std::string, std::map<std::string, const cell_result*>> at;
    bool any_baseline = false;
    for (const auto* c : cells) {
        const std::string row = format_params(c->params) + " " + std::to_string(c->workers);
        if (!at.count(row)) rows.push_back(row);
        at[row][c->contender] = c;
        if (std::find(columns.begin(), columns.end(), c->contender) == columns.end()) columns.push_back(c->contender);
        any_baseline |= c->contender == baseline;
    }
    if (!any_baseline) return "";
    std::string out = "<table class=\"ratios\"><caption>Rate as a multiple of " + escape_html(baseline) +
                      "'s (its ns per unit over the lock's: above 1 is faster), ± half the repetitions' p25-p75 "
                      "range; ★ the best of the row</caption>\n<thead><tr><th>point</th><th>workers</th>";
    for (const auto& col : columns) out += "<th>" + escape_html(col) + "</th>";
    out += "</tr></thead><tbody>\n";
    for (const auto& row : rows) {
        const auto& line = at[row];
        const cell_result* first = line.begin()->second;
        out += "<tr><td>" + escape_html(format_params(first->params)) + "</td><td class=\"num\">" +
               std::to_string(first->workers) + "</td>";
        const auto base = line.find(baseline);
        std::map<std::string, rate_ratio> ratios;
        double best = 0;
        for (const auto& [name, c] : line) {
            if (base == line.end()) break;
            const rate_ratio r = ratio_to(*c, *base->second);
            ratios[name] = r;
            if (std::isfinite(r.ratio)) best = std::max(best, r.ratio);
        }
        for (const auto& col : columns) {
            const auto it = line.find(col);
            if (it == line.end()) {
                out += "<td></td>";
                continue;
            }
            const cell_result& c = *it->second;
            if (!c.valid()) {
                out +=
                    "<td class=\"invalid\" title=\"" + escape_html(c.detail) + "\">" + escape_html(c.status) + "</td>";
                continue;
            }
            if (base == line.end() || !base->second->valid()) {
                out += "<td class=\"num\" title=\"no valid " + escape_html(baseline) + " cell to compare with\">" +
                       "n/a</td>";
                continue;
            }
            const rate_ratio r = ratios[col];
            std::string cls = "num";
            if (r.ratio > 1 + neutral_band) cls += " faster";
            if (r.ratio < 1 - neutral_band) cls += " slower";
            const bool is_best = r.ratio == best;
            if (is_best) cls += " best";
            out += "<td class=\"" + cls + "\">" + (is_best ? "★ " : "") + ratio_text(r.ratio);
            if (std::isfinite(r.spread))
                out += " <span class=\"spread\">±" + std::to_string(std::lround(r.spread * 100)) + " %</span>";
            out += "</td>";
        }
        out += "</tr>\n";
    }
    out += "</tbody></table>\n";
    return out;
}

}  // namespace contend::lab
