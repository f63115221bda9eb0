#include "compare/significance.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace contend::lab {
namespace {

void require_finite(std::span<const double> values, const char* what) {
    for (const double v : values) {
        if (!std::isfinite(v)) throw std::invalid_argument(std::string(what) + ": a value is NaN or infinite");
    }
}

// Up to 20 values a side the largest count, C(40, 20) ~ 1.4e11, is an exact integer in a double
// and the table takes ~90,000 additions; past it the normal approximation is what compare.py
// and scipy use anyway.
constexpr std::size_t exact_limit = 20;

// P(U >= u_at_least) under the null, for U of a sample of n1 against one of n2 without ties.
// counts(m, n)[u]: the number of orderings of m values of the first sample and n of the second
// whose U is u. The largest of the m + n values is either the first sample's (it exceeds all n
// of the second: U gains n) or the second's (U gains nothing): Mann and Whitney's recurrence.
double exact_upper_tail(std::size_t n1, std::size_t n2, std::size_t u_at_least) {
    std::vector<std::vector<double>> counts((n1 + 1) * (n2 + 1));
    auto at = [&](std::size_t m, std::size_t n) -> std::vector<double>& { return counts[m * (n2 + 1) + n]; };
    for (std::size_t m = 0; m <= n1; ++m) {
        for (std::size_t n = 0; n <= n2; ++n) {
            std::vector<double>& here = at(m, n);
            here.assign(m * n + 1, 0.0);
            if (m == 0 || n == 0) {
                here[0] = 1;
                continue;
            }
            const std::vector<double>& first_largest = at(m - 1, n);  // U values shift by n
            const std::vector<double>& second_largest = at(m, n - 1);
            for (std::size_t u = 0; u < first_largest.size(); ++u) here[u + n] += first_largest[u];
            for (std::size_t u = 0; u < second_largest.size(); ++u) here[u] += second_largest[u];
        }
    }
    const std::vector<double>& all = at(n1, n2);
    double total = 0;
    double tail = 0;
    for (std::size_t u = 0; u < all.size(); ++u) {
        total += all[u];
        if (u >= u_at_least) tail += all[u];
    }
    return tail / total;
}

struct sample_moments {
    double mean;
    double variance;  // with n - 1: the unbiased estimate Welch's test is built on
};

sample_moments moments(std::span<const double> values) {
    const double n = static_cast<double>(values.size());
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
    double squares = 0;  // two passes: a one-pass sum of squares cancels badly for times near 1e9 ns
    for (const double v : values) squares += (v - mean) * (v - mean);
    return {mean, squares / (n - 1)};
}

// The continued fraction for I_x(a, b) by the modified Lentz method (Numerical Recipes in C,
// 2nd edition, section 6.4, betacf). Converges quickly for x < (a + 1) / (a + b + 2); the
// caller uses the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
double beta_continued_fraction(double x, double a, double b) {
    constexpr int max_iterations = 300;
    constexpr double epsilon = 1e-15;
    constexpr double tiny = 1e-300;
    const double qab = a + b;
    const double qap = a + 1;
    const double qam = a - 1;
    double c = 1;
    double d = 1 - qab * x / qap;
    if (std::fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= max_iterations; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        const double step = d * c;
        h *= step;
        if (std::fabs(step - 1) < epsilon) break;
    }
    return h;
}

}  // namespace

double regularized_incomplete_beta(double x, double a, double b) {
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1)) {
        throw std::invalid_argument("regularized_incomplete_beta: needs a, b > 0 and 0 <= x <= 1");
    }
    if (x == 0) return 0;
    if (x == 1) return 1;
    // x^a (1-x)^b / B(a, b), in logarithms so that large a and b do not overflow.
    const double front =
        std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(x, a, b) / a;
    return 1 - front * beta_continued_fraction(1 - x, b, a) / b;
}

double student_t_two_sided_p(double t, double df) {
    if (std::isnan(t) || !(df > 0)) throw std::invalid_argument("student_t_two_sided_p: needs a t and df > 0");
    if (std::isinf(t)) return 0;
    return std::clamp(regularized_incomplete_beta(df / (df + t * t), df / 2, 0.5), 0.0, 1.0);
}

u_test_result mann_whitney_u(std::span<const double> a, std::span<const double> b) {
    if (a.empty() || b.empty()) throw std::invalid_argument("mann_whitney_u: a sample is empty");
    require_finite(a, "mann_whitney_u");
    require_finite(b, "mann_whitney_u");
    const std::size_t n1 = a.size();
    const std::size_t n2 = b.size();
    const std::size_t total = n1 + n2;

    // Pool both samples (the first n1 entries are a's), sort, and give each tie group the mean
    // of the ranks it spans.
    std::vector<double> pooled(a.begin(), a.end());
    pooled.insert(pooled.end(), b.begin(), b.end());
    std::vector<std::size_t> order(total);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) { return pooled[l] < pooled[r]; });
    double rank_sum_a = 0;
    double tie_term = 0;  // sum of t^3 - t over tie groups of size t
    bool ties = false;
    for (std::size_t first = 0; first < total;) {
        std::size_t last = first + 1;
        while (last < total && pooled[order[last]] == pooled[order[first]]) ++last;
        const double group = static_cast<double>(last - first);
        const double midrank = (static_cast<double>(first + 1) + static_cast<double>(last)) / 2;
        for (std::size_t i = first; i < last; ++i) {
            if (order[i] < n1) rank_sum_a += midrank;
        }
        if (last - first > 1) {
            ties = true;
            tie_term += group * group * group - group;
        }
        first = last;
    }

    const double dn1 = static_cast<double>(n1);
    const double dn2 = static_cast<double>(n2);
    const double u1 = rank_sum_a - dn1 * (dn1 + 1) / 2;
    const double u_far = std::max(u1, dn1 * dn2 - u1);  // the side of the mean the tail starts on

    if (!ties && n1 <= exact_limit && n2 <= exact_limit) {
        // Without ties U is an integer; the distribution is symmetric, so P(U <= n1 n2 - u_far)
        // equals the upper tail and the two-sided p is twice it.
        const auto u_at_least = static_cast<std::size_t>(std::llround(u_far));
        return {u1, std::min(1.0, 2 * exact_upper_tail(n1, n2, u_at_least)), true};
    }

    const double dn = static_cast<double>(total);
    const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    if (!(variance > 0)) return {u1, 1.0, false};
    const double z = (u_far - dn1 * dn2 / 2 - 0.5) / std::sqrt(variance);
    // 2 * (1 - Phi(z)) = erfc(z / sqrt(2)); erfc keeps the precision of tiny tails.
    return {u1, std::min(1.0, std::erfc(z / std::sqrt(2.0))), false};
}

double geometric_mean(std::span<const double> positive_values) {
    if (positive_values.empty()) throw std::invalid_argument("geometric_mean: no values");
    double log_sum = 0;
    for (const double v : positive_values) {
        if (!(v > 0) || !std::isfinite(v)) {
            throw std::invalid_argument("geometric_mean: a value is not a positive finite number");
        }
        log_sum += std::log(v);
    }
    return std::exp(log_sum / static_cast<double>(positive_values.size()));
}

welch_result welch_t_test(std::span<const double> a, std::span<const double> b) {
    if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("welch_t_test: each side needs at least 2 values");
    require_finite(a, "welch_t_test");
    require_finite(b, "welch_t_test");
    const double na = static_cast<double>(a.size());
    const double nb = static_cast<double>(b.size());
    const sample_moments ma = moments(a);
    const sample_moments mb = moments(b);
    const double sa = ma.variance / na;  // squared standard errors of the two means
    const double sb = mb.variance / nb;
    const double se2 = sa + sb;
    if (!(se2 > 0)) {
        const double df = na + nb - 2;
        if (ma.mean == mb.mean) return {0.0, df, 1.0};
        const double inf = std::numeric_limits<double>::infinity();
        return {ma.mean > mb.mean ? inf : -inf, df, 0.0};
    }
    const double t = (ma.mean - mb.mean) / std::sqrt(se2);
    const double df = se2 * se2 / (sa * sa / (na - 1) + sb * sb / (nb - 1));
    return {t, df, student_t_two_sided_p(t, df)};
}

}  // namespace contend::lab
