#include "results/statistics.hpp"
#include "text/numbers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace contend::lab {

double quantile(std::vector<double> samples, double q) {
    if (samples.empty()) return 0;
    std::sort(samples.begin(), samples.end());
    q = std::clamp(q, 0.0, 1.0);
    const double position = q * static_cast<double>(samples.size() - 1);
    const auto lower = static_cast<std::size_t>(std::floor(position));
    const auto upper = static_cast<std::size_t>(std::ceil(position));
    const double fraction = position - static_cast<double>(lower);
    return samples[lower] + (samples[upper] - samples[lower]) * fraction;
}

std::string describe_modes(const modes& m) {
    if (!m.modal) return "";
    return std::to_string(m.low_count) + " repetitions near " + ns_text(m.low_median) + " ns, " +
           std::to_string(m.high_count) + " near " + ns_text(m.high_median) + " ns";
}

modes find_modes(std::vector<double> samples) {
    modes found;
    const std::size_t n = samples.size();
    if (n < 2 * modes_min_group) return found;
    for (const double v : samples)
        if (!std::isfinite(v) || v <= 0) return found;
    std::sort(samples.begin(), samples.end());
    // The median of samples[from, to), sorted.
    const auto median_of = [&](std::size_t from, std::size_t to) {
        const std::size_t count = to - from, mid = from + count / 2;
        return count % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
    };
    double widest = 0;
    for (std::size_t k = modes_min_group; k + modes_min_group <= n; ++k) {
        const double low = median_of(0, k), high = median_of(k, n);
        const double gap = samples[k] / samples[k - 1];
        const double low_spread = samples[k - 1] / samples[0], high_spread = samples[n - 1] / samples[k];
        if (high < modes_min_ratio * low || gap < low_spread || gap < high_spread || gap <= widest) continue;
        widest = gap;
        found = {true, k, n - k, low, high};
    }
    return found;
}

}  // namespace contend::lab
