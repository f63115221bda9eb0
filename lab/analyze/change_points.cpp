#include "analyze/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "analyze/significance.hpp"

namespace contend::lab {
namespace {

double mean_of(std::span<const double> values) {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double relative_change(double before, double after) {
    if (before == 0) return after == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::fabs(after - before) / std::fabs(before);
}

// The split between `before` and `after`, measured: Student's pooled t-test between the two
// sides, its p corrected for the choice of the split among the `candidates` a window of this
// length offers (Sidak: 1 - (1 - p)^k, the chance that the best of k independent tests of
// pure noise scores as well; the header says why). A one-point side (possible only with
// min_segment 1) is no level and cannot be told from noise, so its p is 1.
change_point measure(std::span<const double> before, std::span<const double> after, std::size_t index,
                     std::size_t min_segment) {
    double p = 1.0;
    if (before.size() >= 2 && after.size() >= 2) {
        const double raw = student_t_test(before, after).p_value;
        const std::size_t length = before.size() + after.size();
        const double candidates = length >= 2 * min_segment ? static_cast<double>(length - 2 * min_segment + 1) : 1.0;
        // -expm1(k log1p(-p)) keeps the precision of a tiny p, where 1 - (1 - p)^k loses it.
        p = raw >= 1 ? 1.0 : -std::expm1(candidates * std::log1p(-raw));
    }
    return {index, mean_of(before), mean_of(after), p};
}

// The first pass's looser test of a split against the whole segment: Welch's t-test, whose
// trust in a small side's spread finds the split at 8 of 100 -> 120 -> 100 (the header), and
// no correction, because the merge judges every candidate again, corrected.
double candidate_p(std::span<const double> before, std::span<const double> after) {
    return before.size() >= 2 && after.size() >= 2 ? welch_t_test(before, after).p_value : 1.0;
}

double magnitude(const change_point& change) { return relative_change(change.before_mean, change.after_mean); }

// Step 1 of the header: the split of `segment` (relative index) maximizing Q with alpha = 1,
// among those leaving min_segment points a side. Requires segment.size() >= 2 * min_segment.
//
// Sums of pairwise distances, updated as tau moves right by one:
//   within_before(tau + 1) = within_before(tau) + sum_{i < tau} |x_i - x_tau|
//   within_after(tau + 1)  = within_after(tau)  - sum_{j > tau} |x_tau - x_j|
//   between(tau)           = all pairs - within_before(tau) - within_after(tau)
// so each split costs O(1) after O(n^2) for the two rows of sums.
std::size_t best_split(std::span<const double> segment, std::size_t min_segment) {
    const std::size_t n = segment.size();
    std::vector<double> to_earlier(n, 0.0);  // sum over i < k of |x_i - x_k|
    std::vector<double> to_later(n, 0.0);  // sum over j > k of |x_k - x_j|
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t j = k + 1; j < n; ++j) {
            const double distance = std::fabs(segment[k] - segment[j]);
            to_later[k] += distance;
            to_earlier[j] += distance;
        }
    }
    const double all_pairs = std::accumulate(to_earlier.begin(), to_earlier.end(), 0.0);
    auto pairs = [](double count) { return count * (count - 1) / 2; };

    double within_before = 0;
    double within_after = all_pairs;
    std::size_t best = min_segment;
    double best_q = -std::numeric_limits<double>::infinity();
    for (std::size_t tau = 0; tau + min_segment <= n; ++tau) {
        if (tau >= min_segment) {
            const double m = static_cast<double>(tau);
            const double k = static_cast<double>(n - tau);
            const double between = all_pairs - within_before - within_after;
            const double before_term = m > 1 ? within_before / pairs(m) : 0.0;
            const double after_term = k > 1 ? within_after / pairs(k) : 0.0;
            const double q = m * k / (m + k) * (2 * between / (m * k) - before_term - after_term);
            if (q > best_q) {  // strictly greater: the first of equal maxima wins
                best_q = q;
                best = tau;
            }
        }
        within_before += to_earlier[tau];
        within_after -= to_later[tau];
    }
    return best;
}

}  // namespace

std::vector<change_point> find_change_points(std::span<const double> series, const change_options& options) {
    for (const double v : series) {
        if (!std::isfinite(v)) throw std::invalid_argument("find_change_points: a value is NaN or infinite");
    }
    const std::size_t min_segment = std::max<std::size_t>(options.min_segment, 1);

    // Steps 1 to 3: hierarchical splitting, a stack of segments [lo, hi) left to examine, at
    // the looser first-pass p (the header says why).
    const double first_pass_p = options.p < 0.05 ? options.p * 10 : options.p < 0.5 ? options.p * 2 : options.p;
    std::vector<std::size_t> accepted;
    std::vector<std::pair<std::size_t, std::size_t>> pending{{0, series.size()}};
    while (!pending.empty()) {
        const auto [lo, hi] = pending.back();
        pending.pop_back();
        if (hi - lo < 2 * min_segment) continue;
        const std::span<const double> segment = series.subspan(lo, hi - lo);
        const std::size_t tau = best_split(segment, min_segment);
        if (!(candidate_p(segment.first(tau), segment.subspan(tau)) < first_pass_p)) continue;
        accepted.push_back(lo + tau);
        pending.emplace_back(lo, lo + tau);
        pending.emplace_back(lo + tau, hi);
    }
    std::sort(accepted.begin(), accepted.end());

    // Step 4, Otava's merge: every split against its final neighbours. Drop the one with the
    // largest p if that p fails; else the one with the smallest relative change if that fails;
    // then judge the rest again against their new neighbours. Stops when all pass.
    while (true) {
        std::vector<change_point> result;
        std::size_t largest_p = 0;
        std::size_t smallest_change = 0;
        for (std::size_t i = 0; i < accepted.size(); ++i) {
            const std::size_t start = i == 0 ? 0 : accepted[i - 1];
            const std::size_t end = i + 1 == accepted.size() ? series.size() : accepted[i + 1];
            const std::span<const double> before = series.subspan(start, accepted[i] - start);
            const std::span<const double> after = series.subspan(accepted[i], end - accepted[i]);
            result.push_back(measure(before, after, accepted[i], min_segment));
            if (result[i].p_value > result[largest_p].p_value) largest_p = i;
            if (magnitude(result[i]) < magnitude(result[smallest_change])) smallest_change = i;
        }
        if (result.empty()) return result;
        std::size_t drop = largest_p;
        if (result[largest_p].p_value < options.p) {
            if (magnitude(result[smallest_change]) >= options.min_magnitude) return result;
            drop = smallest_change;
        }
        accepted.erase(accepted.begin() + static_cast<std::ptrdiff_t>(drop));
    }
}

}  // namespace contend::lab
