#include "text/numbers.hpp"

#include <cmath>
#include <cstdio>

namespace contend::lab {

std::string format_fixed(double v, int digits) {
    if (!std::isfinite(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string ns_text(double ns) {
    const double a = std::fabs(ns);
    return format_fixed(ns, a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

std::string format_time_per_op(double ns) {
    char text[64];
    const double a = std::fabs(ns);
    if (!std::isfinite(ns)) std::snprintf(text, sizeof text, "%g ns", ns);
    else if (a < 0.01 && a != 0) std::snprintf(text, sizeof text, "%.3g ns", ns);
    else if (a < 1e4) return ns_text(ns) + " ns";
    else if (a < 1e6) std::snprintf(text, sizeof text, "%.4g us", ns / 1e3);
    else if (a < 1e9) std::snprintf(text, sizeof text, "%.4g ms", ns / 1e6);
    else if (a < 1e14) std::snprintf(text, sizeof text, "%.4g s", ns / 1e9);
    else std::snprintf(text, sizeof text, "%.3g s", ns / 1e9);
    return text;
}

std::string format_change_percent(double before, double after) {
    // In logarithms when both are positive: after / before may overflow where its log does not.
    char text[64];
    const double log_ratio = before > 0 && after > 0 ? std::log(after) - std::log(before) : 0;
    if (log_ratio > 700) {  // past a double: the exponent from the logarithm, as "+1e+602 %"
        const double log10_percent = log_ratio / std::log(10.0) + 2;
        const double exponent = std::floor(log10_percent + 1e-9);  // 601.9999999 is 602
        std::snprintf(text, sizeof text, "+%.3ge+%.0f %%", std::pow(10.0, log10_percent - exponent), exponent);
        return text;
    }
    const double percent = before > 0 && after > 0 ? std::expm1(log_ratio) * 100 : (after - before) / before * 100;
    if (std::fabs(percent) < 1e5) std::snprintf(text, sizeof text, "%+.1f %%", percent);
    else std::snprintf(text, sizeof text, "%+.3g %%", percent);
    return text;
}

}  // namespace contend::lab
