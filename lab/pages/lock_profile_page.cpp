#include "pages/lock_profile_page.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "results/lock_profile.hpp"
#include "text/escape.hpp"

namespace contend::lab {
namespace {

using nlohmann::json;

// A share of a whole in whole percent, which says ">99" and "<1" rather than round a part
// that is not the whole to 100, or one that is not nothing to 0.
std::string share_text(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "0";
    const double share = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
    const long rounded = std::lround(share);
    if (rounded >= 100 && part < whole) return ">99";
    if (rounded == 0 && part > 0) return "<1";
    return std::to_string(rounded);
}

std::string lock_figures(const profiled_lock& l) {
    return std::to_string(l.contended) + " of " + std::to_string(l.acquisitions) + " acquisitions contended, waiting " +
           duration_text(static_cast<double>(l.wait_ns)) + " in all; a wait took " +
           duration_text(static_cast<double>(l.wait_p50_ns)) + " at p50, " +
           duration_text(static_cast<double>(l.wait_p90_ns)) + " at p90, " +
           duration_text(static_cast<double>(l.wait_p99_ns)) + " at p99, " +
           duration_text(static_cast<double>(l.wait_max_ns)) + " at most";
}

void stacks_html(std::string& html, const profiled_lock& l, std::uint64_t period) {
    if (l.stacks.empty()) {
        html += "<p class=\"note\">No call stack sampled" +
                std::string(period == 0 ? " (the profile ran with stacks off)." : " for this lock.") + "</p>\n";
        return;
    }
    html += "<p class=\"note\">Where it was waited on: " + std::to_string(l.stacks.size()) + " of its " +
            std::to_string(l.stacks_seen) + " call stacks, of " + std::to_string(l.sampled_waits) +
            " sampled waits (1 contended wait in " + std::to_string(period) +
            "), innermost frame first.</p>\n<ol class=\"stacks\">\n";
    for (const auto& s : l.stacks) {
        html += "<li><span class=\"share\">" + share_text(s.wait_ns, l.sampled_wait_ns) +
                " %</span> of the sampled waits' time (" + std::to_string(s.samples) +
                (s.samples == 1 ? " wait)" : " waits)") + "<ol class=\"frames\">";
        // The innermost frames say where; the rest (thread start, main) is said as a count.
        constexpr std::size_t shown = 8;
        for (std::size_t f = 0; f < s.frames.size() && f < shown; ++f)
            html += "<li><code>" + escape_html(s.frames[f]) + "</code></li>";
        if (s.frames.size() > shown)
            html += "<li class=\"note\">\u2026 " + std::to_string(s.frames.size() - shown) + " more frames</li>";
        html += "</ol></li>\n";
    }
    html += "</ol>\n";
}

}  // namespace

std::string duration_text(double ns) {
    if (!std::isfinite(ns) || ns < 0) return "n/a";
    static constexpr struct {
        double scale;
        const char* unit;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "\u00b5s"}, {1, "ns"}};
    for (const auto& u : units) {
        // 999.7 ns is written "1 µs", not "1e+03 ns".
        if (ns < u.scale * 0.9995 && u.scale > 1) continue;
        char text[48];
        std::snprintf(text, sizeof text, "%.3g %s", ns / u.scale, u.unit);
        return text;
    }
    return "0 ns";
}

std::size_t lock_profile_html(std::string& html, json& charts, const std::string& id_prefix,
                              const std::vector<const cell_result*>& cells) {
    std::size_t drawn = 0;
    for (std::size_t c = 0; c < cells.size(); ++c) {
        const cell_result& cell = *cells[c];
        if (cell.lock_profile.empty()) continue;
        lock_profile_data profile;
        try {
            profile = lock_profile_from_text(cell.lock_profile);
        } catch (const lock_profile_error& e) {
            throw std::runtime_error("row " + cell.name() + ": " + e.what());
        }
        const std::size_t n = profile.locks.size();
        html += "<div class=\"locks\">\n<h3>Where it waits: " + escape_html(cell.name()) + "</h3>\n<p class=\"note\">" +
                (n == 1 ? std::string("The one lock that waited")
                        : "The " + std::to_string(n) + " locks that waited longest") +
                ", in the profiled run whose total wait was the median of the row's runs; each chart counts that "
                "lock's contended waits by how long they took.</p>\n";
        for (std::size_t k = 0; k < profile.locks.size(); ++k) {
            const profiled_lock& l = profile.locks[k];
            const std::string id = id_prefix + "-" + std::to_string(c) + "-" + std::to_string(k);
            html += "<div class=\"lock\">\n<h4>" + std::to_string(k + 1) + ". " + (l.rwlock ? "rwlock" : "mutex") +
                    " at " + escape_html(l.site) + "</h4>\n<p>" + escape_html(lock_figures(l)) + ".</p>\n";
            if (!l.wait_histogram.empty()) {
                html += "<div class=\"chart small\"><canvas id=\"" + id + "\" role=\"img\" aria-label=\"" +
                        escape_html(l.site) + ": contended waits by duration\"></canvas></div>\n";
                json labels = json::array(), counts = json::array();
                for (const auto& [low, n] : l.wait_histogram) {
                    labels.push_back("\u2265 " + duration_text(static_cast<double>(low)));
                    counts.push_back(n);
                }
                charts.push_back({{"canvas", id},
                                  {"title", std::to_string(k + 1) + ". " + l.site},
                                  {"labels", std::move(labels)},
                                  {"counts", std::move(counts)}});
                ++drawn;
            }
            stacks_html(html, l, profile.stack_sample_period);
            html += "</div>\n";
        }
        html += "</div>\n";
    }
    return drawn;
}

}  // namespace contend::lab
