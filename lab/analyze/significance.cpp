#include "analyze/significance.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/math/distributions/students_t.hpp>
#include <boost/math/policies/policy.hpp>
#include <boost/math/special_functions/beta.hpp>

namespace contend::lab {
namespace {

void require_finite(std::span<const double> values, const char* what) {
    for (const double v : values) {
        if (!std::isfinite(v)) throw std::invalid_argument(std::string(what) + ": a value is NaN or infinite");
    }
}

// Up to 50 values in all every count of the null distribution, at most C(50, 25) ~ 1.3e14, is an
// exact integer in a double, and the table takes at most a few million additions; past it the
// normal approximation is what compare.py and scipy use anyway.
constexpr std::size_t exact_limit = 50;

// A tie group of the pooled samples: how many values it holds and twice their midrank (an
// integer: a midrank is a whole or a half number).
struct tie_group {
    std::size_t size;
    std::size_t twice_midrank;
};

// The exact two-sided p of the rank-sum test, ties included: of the C(N, m) ways to choose
// which m of the N pooled values are the first sample's (all equally likely under the null,
// the tie groups as observed), the share whose doubled rank sum lies at least as far from its
// mean, m (N + 1), as the observed one does. counts[k][s]: the ways to choose k values among
// the groups seen so far with doubled rank sum s; a group of t values adds j of them (C(t, j)
// ways) and j times its doubled midrank. Without ties this is Mann and Whitney's distribution.
double exact_two_sided_p(const std::vector<tie_group>& groups, std::size_t m, std::size_t observed_twice_sum) {
    std::size_t n_total = 0;
    for (const auto& g : groups) n_total += g.size;
    const std::size_t max_sum = m * (2 * n_total - m + 1);  // twice the sum of the m largest ranks
    std::vector<std::vector<double>> counts(m + 1, std::vector<double>(max_sum + 1, 0.0));
    counts[0][0] = 1;
    std::size_t seen = 0;
    for (const auto& g : groups) {
        std::vector<double> choose(g.size + 1, 1.0);  // C(t, j)
        for (std::size_t j = 1; j <= g.size; ++j)
            choose[j] = choose[j - 1] * static_cast<double>(g.size - j + 1) / static_cast<double>(j);
        seen += g.size;
        // Downwards in k, so that counts[k - j] still holds the groups before this one.
        for (std::size_t k = std::min(m, seen); k >= 1; --k) {
            for (std::size_t j = 1; j <= std::min(k, g.size); ++j) {
                const std::size_t shift = j * g.twice_midrank;
                const std::vector<double>& from = counts[k - j];
                std::vector<double>& to = counts[k];
                for (std::size_t s = 0; s + shift <= max_sum; ++s)
                    if (from[s] != 0) to[s + shift] += choose[j] * from[s];
            }
        }
    }
    const auto centre = static_cast<long long>(m * (n_total + 1));
    const long long observed = std::llabs(static_cast<long long>(observed_twice_sum) - centre);
    double total = 0, tail = 0;
    for (std::size_t s = 0; s <= max_sum; ++s) {
        const double c = counts[m][s];
        if (c == 0) continue;
        total += c;
        if (std::llabs(static_cast<long long>(s) - centre) >= observed) tail += c;
    }
    return std::min(1.0, tail / total);
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

// Boost.Math's error handling for the two functions below: on an argument it cannot take, or a
// result it cannot give, it returns NaN (and sets errno) rather than throwing its own
// exceptions. The callers check their arguments first and throw std::invalid_argument, as they
// always have; this keeps anything left over from escaping as boost's domain_error.
using no_throw_policy =
    boost::math::policies::policy<boost::math::policies::domain_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::pole_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::overflow_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::evaluation_error<boost::math::policies::errno_on_error>>;

}  // namespace

double regularized_incomplete_beta(double x, double a, double b) {
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1)) {
        throw std::invalid_argument("regularized_incomplete_beta: needs a, b > 0 and 0 <= x <= 1");
    }
    return boost::math::ibeta(a, b, x, no_throw_policy());
}

double student_t_two_sided_p(double t, double df) {
    if (std::isnan(t) || !(df > 0)) throw std::invalid_argument("student_t_two_sided_p: needs a t and df > 0");
    if (std::isinf(t)) return 0;
    // The upper tail from the complement, not 1 - cdf: tiny p-values keep their digits.
    const boost::math::students_t_distribution<double, no_throw_policy> student(df);
    return std::clamp(2 * boost::math::cdf(boost::math::complement(student, std::fabs(t))), 0.0, 1.0);
}

u_test_result mann_whitney_u(std::span<const double> a, std::span<const double> b, u_method method) {
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
    std::size_t twice_rank_sum_a = 0;  // midranks doubled: whole numbers
    double tie_term = 0;  // sum of t^3 - t over tie groups of size t
    std::vector<tie_group> groups;
    for (std::size_t first = 0; first < total;) {
        std::size_t last = first + 1;
        while (last < total && pooled[order[last]] == pooled[order[first]]) ++last;
        const double group = static_cast<double>(last - first);
        const std::size_t twice_midrank = first + 1 + last;
        for (std::size_t i = first; i < last; ++i) {
            if (order[i] < n1) twice_rank_sum_a += twice_midrank;
        }
        if (last - first > 1) tie_term += group * group * group - group;
        groups.push_back({last - first, twice_midrank});
        first = last;
    }

    const double dn1 = static_cast<double>(n1);
    const double dn2 = static_cast<double>(n2);
    const double u1 = static_cast<double>(twice_rank_sum_a) / 2 - dn1 * (dn1 + 1) / 2;

    if (method == u_method::automatic && total <= exact_limit)
        return {u1, exact_two_sided_p(groups, n1, twice_rank_sum_a), true};

    const double u_far = std::max(u1, dn1 * dn2 - u1);  // the side of the mean the tail starts on
    const double dn = static_cast<double>(total);
    const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    if (!(variance > 0)) return {u1, 1.0, false};
    const double z = (u_far - dn1 * dn2 / 2 - 0.5) / std::sqrt(variance);
    // 2 * (1 - Phi(z)) = erfc(z / sqrt(2)); erfc keeps the precision of tiny tails.
    return {u1, std::min(1.0, std::erfc(z / std::sqrt(2.0))), false};
}

double u_test_smallest_p(std::size_t n1, std::size_t n2) {
    if (n1 == 0 || n2 == 0) return 1.0;
    const std::size_t n = n1 + n2, k = std::min(n1, n2);
    if (n <= 60) {
        // C(n, k) in whole numbers, so that 3 against 3 give exactly 0.1 (a p compared with an
        // alpha of 0.1 must not be 0.0999...): c * (n - k + i) stays below 2^64 up to C(60, 30).
        std::uint64_t c = 1;
        for (std::size_t i = 1; i <= k; ++i) c = c * (n - k + i) / i;
        return std::min(1.0, 2 / static_cast<double>(c));
    }
    // Beyond, by lgamma: C(100, 50) ~ 1e29 is past any integer type, and p is below 1e-16.
    const double a = static_cast<double>(n1), b = static_cast<double>(n2);
    const double log_choose = std::lgamma(a + b + 1) - std::lgamma(a + 1) - std::lgamma(b + 1);
    return std::min(1.0, 2 * std::exp(-log_choose));
}

std::size_t u_test_min_repetitions(double alpha) {
    if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument("u_test_min_repetitions: alpha must lie in (0, 1)");
    std::size_t n = 1;
    while (!(u_test_smallest_p(n, n) < alpha)) ++n;  // 2 / C(2n, n) falls about 4x a step
    return n;
}

sign_test_result sign_test(std::size_t above, std::size_t below) {
    const std::size_t n = above + below;
    if (n == 0) return {above, below, 1.0};
    // P(X >= k) for X ~ Binomial(n, 1/2), k the larger count, summed from the far end in
    // logarithms: C(n, i) / 2^n underflows a double past n ~ 1075, its logarithm does not.
    const std::size_t k = std::max(above, below);
    const double dn = static_cast<double>(n);
    const double log_half_n = dn * std::log(0.5);
    double tail = 0;
    for (std::size_t i = k; i <= n; ++i) {  // the terms shrink away from the middle
        const double di = static_cast<double>(i);
        const double term = std::exp(std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) + log_half_n);
        tail += term;
        if (term < tail * 1e-17) break;
    }
    return {above, below, std::min(1.0, 2 * tail)};
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

namespace {

// The end both t-tests share: t from the difference of the means and its squared standard
// error `se2`, and its two-sided p on `df` degrees of freedom. Without spread (se2 0) there is
// no noise to weigh the difference against: t 0 and p 1 when the means are equal, t +-infinity
// and p 0 when they differ (as significance.hpp says of both).
t_test_result t_and_p(const sample_moments& a, const sample_moments& b, double se2, double df) {
    if (!(se2 > 0)) {
        if (a.mean == b.mean) return {0.0, df, 1.0};
        const double inf = std::numeric_limits<double>::infinity();
        return {a.mean > b.mean ? inf : -inf, df, 0.0};
    }
    const double t = (a.mean - b.mean) / std::sqrt(se2);
    return {t, df, student_t_two_sided_p(t, df)};
}

}  // namespace

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
    // Welch-Satterthwaite; without spread it is 0/0, and the pooled test's df stands in.
    const double df = se2 > 0 ? se2 * se2 / (sa * sa / (na - 1) + sb * sb / (nb - 1)) : na + nb - 2;
    return t_and_p(ma, mb, se2, df);
}

t_test_result student_t_test(std::span<const double> a, std::span<const double> b) {
    if (a.empty() || b.empty() || a.size() + b.size() < 3)
        throw std::invalid_argument("student_t_test: each side needs a value, and both at least 3 in all");
    require_finite(a, "student_t_test");
    require_finite(b, "student_t_test");
    const double na = static_cast<double>(a.size());
    const double nb = static_cast<double>(b.size());
    const sample_moments ma = moments(a);
    const sample_moments mb = moments(b);
    const double df = na + nb - 2;
    // moments() gives the n - 1 variance; a one-value side has no deviation to add.
    const double squares = (na > 1 ? ma.variance * (na - 1) : 0.0) + (nb > 1 ? mb.variance * (nb - 1) : 0.0);
    return t_and_p(ma, mb, squares / df * (1 / na + 1 / nb), df);
}

}  // namespace contend::lab
