// Significance tests for comparing two sets of benchmark repetitions: is the difference
// between a baseline and a test run larger than the noise? Pure functions over samples; the
// callers (`contend compare`, change points over a history) decide what to do with a p-value.
//
// Three tests, for three questions:
// - mann_whitney_u: rank-based, no assumption on the shape of the distribution. Benchmark
//   times are skewed (a floor, and a tail of descheduled repetitions), so this is the test for
//   two runs' repetitions, as Google Benchmark's tools/compare.py uses it.
// - welch_t_test: a test of means with unequal variances, the test the .NET performance lab
//   uses to confirm a regression (see docs/references.md, dotnet-perf-report).
// - student_t_test: a test of means with one pooled variance, the one E-divisive change points
//   use to accept a split (see lab/analyze/change_points.hpp): there the question is whether
//   one noisy series is the same on both sides, and a side may hold 3 points, whose own
//   variance Welch's form would trust.
#pragma once

#include <cstddef>
#include <span>

namespace contend::lab {

// The two-sided Mann-Whitney U test (Wilcoxon rank-sum test).
//   u        U of the first sample: the number of pairs (a_i, b_j) with a_i > b_j, ties
//            counting one half; R1 - n1 (n1 + 1) / 2 with R1 the sum of a's midranks. As
//            scipy.stats.mannwhitneyu reports it, so the two can be compared.
//   p_value  the probability, were both samples drawn from one distribution, of a U at least
//            as far from n1 n2 / 2 as this one, in either direction; clipped to 1.
//   exact    true when p_value comes from the exact null distribution of U.
//
// Exact whenever both samples hold at most 50 values in all, ties or not: the p-value is then
// the share of the C(N, n1) ways of splitting the pooled values into the two samples (all
// equally likely were there no difference, the tie groups as observed) whose U is at least as
// far from n1 n2 / 2 as the observed one: the permutation distribution of U, counted by dynamic
// programming over the tie groups (without ties, the distribution of Mann and Whitney, 1947;
// see docs/references.md, mann-whitney-u). C(50, 25) ~ 1.3e14 is the largest count, an exact
// integer in a double. Three tied values against three: p = 2 / C(6, 3) = 0.1, where the normal
// approximation says 0.046. scipy's "auto" picks exact only up to 8 values per side, and not
// with ties; we go further because the count is cheap and an exact p is never worse than its
// approximation.
//
// Otherwise (or with u_method::asymptotic) the normal approximation, as
// scipy.stats.mannwhitneyu's method="asymptotic" with use_continuity=True: variance
// n1 n2 / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))) over the tie groups t, and the distance of
// U from its mean shortened by one half. When every value is equal the variance is 0 and
// nothing can be told apart: p_value is 1 (the exact distribution says so too).
//
// Cost: O(N log N) for the ranks; the exact case adds at most a few million additions
// (n1 * N * n1 (2N - n1)).
// Throws std::invalid_argument when a sample is empty or holds a NaN or an infinity.
enum class u_method { automatic, asymptotic };
struct u_test_result {
    double u;
    double p_value;
    bool exact;
};
u_test_result mann_whitney_u(std::span<const double> a, std::span<const double> b,
                             u_method method = u_method::automatic);

// The smallest two-sided p the exact U test can give samples of n1 and n2 values: that of two
// samples that do not overlap at all, 2 / C(n1 + n2, n1), clipped to 1 (0.1 for 3 against 3,
// 0.0079 for 5 against 5). When it is not below a significance level, no samples of these
// sizes can be significant, however far apart. 1 when a side is empty.
double u_test_smallest_p(std::size_t n1, std::size_t n2);
// The fewest repetitions a side (n against n) whose smallest p is below alpha: 4 for 0.05, 5
// for 0.01, 7 for 0.001. alpha must lie in (0, 1).
std::size_t u_test_min_repetitions(double alpha);

// The two-sided sign test: of n = above + below signs (ties left out before), is either kind
// more frequent than a fair coin would make it? p_value = min(1, 2 P(X >= max(above, below)))
// for X ~ Binomial(n, 1/2), exact for any n (summed in logarithms). n = 0 gives 1.
// contend compare uses it across benchmarks: how many got slower against how many got faster.
struct sign_test_result {
    std::size_t above, below;
    double p_value;
};
sign_test_result sign_test(std::size_t above, std::size_t below);

// exp(mean(log x)): the mean of ratios that treats 2x and 0.5x as equal and opposite, so the
// summary "test/base" over many benchmarks is not pulled up by the slowdowns alone.
// Throws std::invalid_argument when empty, or when a value is <= 0, NaN or infinite.
double geometric_mean(std::span<const double> positive_values);

// Welch's two-sided t-test (unequal variances): t = (mean(a) - mean(b)) / sqrt(va/na + vb/nb),
// df by the Welch-Satterthwaite equation, p_value = P(|T_df| >= |t|) from Student's t
// distribution, from Boost.Math (students_t_distribution, the upper tail by its complement;
// see docs/references.md, welch-t-test).
//
// Both variances zero (a noiseless step, as synthetic series have): no noise to weigh the
// difference against, so t = 0 and p_value = 1 when the means are equal, t = +-infinity and
// p_value = 0 when they differ; df is then na + nb - 2 (Welch's df is 0/0 there).
//
// Throws std::invalid_argument when a side has fewer than 2 values (no variance), or holds a
// NaN or an infinity.
struct t_test_result {
    double t;
    double df;
    double p_value;
};
using welch_result = t_test_result;
welch_result welch_t_test(std::span<const double> a, std::span<const double> b);

// Student's two-sided t-test with a pooled variance: t = (mean(a) - mean(b)) / sqrt(s2 (1/na +
// 1/nb)), s2 = (sum of squared deviations of both sides from their own means) / (na + nb - 2),
// df = na + nb - 2, p_value = P(|T_df| >= |t|). Exact when both sides are drawn from one normal
// distribution, which is the null hypothesis of a change point. Welch's form, on a side of 3
// points whose spread happens to be small, divides by that small spread and calls noise
// significant: on i.i.d. normal noise 3 points against 37 give p < 0.001 in 1.4 % of splits
// (14 times the nominal rate), the pooled form in 0.1 %.
//
// Both sides noiseless: as welch_t_test (p_value 1 when the means are equal, 0 otherwise).
// Throws std::invalid_argument when a side is empty, when both hold 2 values in all (no
// degree of freedom left), or when a value is NaN or infinite.
t_test_result student_t_test(std::span<const double> a, std::span<const double> b);

// P(|T| >= |t|) for Student's t with df > 0 degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2).
// Exposed for the tests and for callers that already hold a t and a df. Throws
// std::invalid_argument when t is NaN or df is not > 0; t = +-infinity gives 0.
double student_t_two_sided_p(double t, double df);

// The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1: Boost.Math's
// ibeta, behind the argument check above (std::invalid_argument, never boost's own errors).
double regularized_incomplete_beta(double x, double a, double b);

}  // namespace contend::lab
