#include "analyze/significance.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace lab = contend::lab;

namespace {

struct sample_pair {
    std::vector<double> a;
    std::vector<double> b;
};

// The samples of tests/lab/reference/mann_whitney_reference.py, under the same names.
sample_pair reference_samples(const std::string& name) {
    if (name == "seven_vs_nine") {
        return {{10.94, 11.457, 10.608, 11.775, 10.82, 11.433, 10.53},
                {10.99, 12.125, 11.497, 11.332, 11.956, 12.426, 11.119, 11.908, 11.539}};
    }
    if (name == "ten_vs_twelve") {
        return {{107.314, 109.997, 102.064, 107.526, 104.685, 107.09, 108.719, 101.484, 102.126, 104.119},
                {102.585, 105.494, 106.166, 103.242, 109.435, 109.628, 105.903, 105.453, 104.011, 106.268, 105.165,
                 104.141}};
    }
    if (name == "twenty_vs_twenty") {
        return {{58.678, 52.291, 50.405, 52.252, 50.194, 58.654, 58.44,  53.192, 59.603, 58.044,
                 54.21,  51.12,  58.513, 56.067, 52.306, 59.951, 53.657, 52.031, 54.933, 58.365},
                {52.414, 54.873, 54.373, 60.401, 60.992, 55.65,  52.698, 57.956, 59.612, 54.318,
                 53.069, 57.866, 51.98,  59.436, 51.043, 52.507, 58.038, 54.503, 51.814, 59.03}};
    }
    if (name == "twenty_five_vs_thirty_with_ties") {
        return {
            {1.239, 1.461, 1.264, 1.524, 1.436, 1.972, 1.201, 1.071, 1.303, 1.136, 1.662, 1.25, 1.101,
             1.219, 1.195, 1.389, 1.515, 1.223, 1.355, 1.703, 1.8,   1.579, 1.932, 1.544, 1.936},
            {1.82,  1.733, 1.219, 1.156, 1.225, 1.93,  2.007, 1.715, 1.188, 1.604, 1.336, 1.684, 1.832, 1.262, 1.225,
             1.204, 2.044, 1.662, 2.095, 1.732, 1.695, 1.66,  1.644, 1.415, 1.223, 1.129, 1.161, 1.735, 1.725, 1.72}};
    }
    if (name == "many_ties") {
        return {{6, 6, 6, 8, 6, 8, 7, 7, 8, 8, 6, 8}, {9, 9, 7, 7, 7, 8, 9, 7, 7, 8, 9, 6, 6, 8}};
    }
    if (name == "separated_three_vs_three") return {{1, 2, 3}, {4, 5, 6}};
    if (name == "tied_three_vs_tied_three") return {{10, 10, 10}, {20, 20, 20}};
    if (name == "tied_five_vs_tied_five") return {{7, 7, 7, 7, 7}, {9, 9, 9, 9, 9}};
    if (name == "ties_across_both") return {{1, 2, 2, 3, 3, 3}, {3, 4, 4, 5, 2}};
    if (name == "one_vs_one") return {{1.5}, {2.5}};
    if (name == "r_t_test_help_example") {
        sample_pair pair;
        for (int i = 1; i <= 10; ++i) pair.a.push_back(i);
        for (int i = 7; i <= 20; ++i) pair.b.push_back(i);
        pair.b.push_back(200);
        return pair;
    }
    if (name == "unequal_spread") return {{100.0, 100.5, 99.5, 100.2}, {103.0, 110.0, 96.0, 108.0, 101.0, 99.0}};
    throw std::logic_error("no reference samples named " + name);
}

struct u_reference {
    const char* name;
    double u;
    double p_value;
    bool exact;
};

// Source: tests/lab/reference/mann_whitney_reference.py (standard library Python: exact p by
// enumerating every rank assignment, or by the Gaussian binomial coefficient for 20 vs 20;
// asymptotic p by the tie-corrected normal approximation with continuity correction, as
// scipy.stats.mannwhitneyu computes it; exact with ties by enumerating the assignments of the
// pooled midranks), run as
//   python3 tests/lab/reference/mann_whitney_reference.py
constexpr u_reference u_table[] = {
    {"seven_vs_nine", 11.0, 0.031118881118881118, true},
    {"ten_vs_twelve", 59.0, 0.9742362900257637, true},
    {"twenty_vs_twenty", 182.0, 0.639513882406952, true},
    {"twenty_five_vs_thirty_with_ties", 291.5, 0.160599753695362, false},
    {"many_ties", 56.5, 0.15669911055427277, true},
    {"separated_three_vs_three", 0.0, 0.1, true},
    {"tied_three_vs_tied_three", 0.0, 0.1, true},
    {"tied_five_vs_tied_five", 0.0, 0.007936507936507936, true},
    {"ties_across_both", 5.5, 0.10822510822510822, true},
    {"one_vs_one", 0.0, 1.0, true},
};

struct welch_reference {
    const char* name;
    double t;
    double df;
    double p_value;
};

// Source: the same script, Welch's t and df from their definitions and p by Simpson's rule
// over Student's t density (200,000 intervals).
constexpr welch_reference welch_table[] = {
    {"r_t_test_help_example", -1.6329026332012053, 14.164598953012472, 0.12451349808974033},
    {"seven_vs_nine", -2.3839662579838983, 13.090491480134718, 0.03294226381427767},
    {"ten_vs_twelve", -0.09793997804490838, 15.917163710319588, 0.9232026793079249},
    {"unequal_spread", -1.269714185992517, 5.092465351482591, 0.259113801927783},
};

}  // namespace

TEST(MannWhitneyU, MatchesTheIndependentReferenceTable) {
    for (const u_reference& row : u_table) {
        SCOPED_TRACE(row.name);
        const sample_pair samples = reference_samples(row.name);
        const lab::u_test_result result = lab::mann_whitney_u(samples.a, samples.b);
        EXPECT_DOUBLE_EQ(result.u, row.u);
        EXPECT_NEAR(result.p_value, row.p_value, 1e-12);
        EXPECT_EQ(result.exact, row.exact);
    }
}

// Source: the Examples section of scipy.stats.mannwhitneyu's documentation (SciPy 1.7 and
// later), which follows Rosie Shier, "Statistics: 2.3 The Mann-Whitney U Test", Mathematics
// Learning Support Centre, 2004: diagnosis ages of five males and four females.
TEST(MannWhitneyU, MatchesScipyDocumentationExample) {
    const std::vector<double> males = {19, 22, 16, 29, 24};
    const std::vector<double> females = {20, 11, 17, 12};
    const lab::u_test_result result = lab::mann_whitney_u(males, females);
    EXPECT_DOUBLE_EQ(result.u, 17.0);  // "print(U1)  17.0"
    EXPECT_NEAR(result.p_value, 0.1111111111111111, 1e-15);  // method="exact"
    EXPECT_TRUE(result.exact);
    const lab::u_test_result swapped = lab::mann_whitney_u(females, males);
    EXPECT_DOUBLE_EQ(swapped.u, 3.0);  // "U2 = nx*ny - U1 ... 3.0"
    EXPECT_NEAR(swapped.p_value, result.p_value, 1e-15);
}

// Source: the example program of NAG's nag_mann_whitney (g08amc), NAG C Library Mark 26.2
// (support.nag.com, g08amce.d and g08amce.r): 16 against 23 values with many ties. NAG prints
// U = 86, normal statistic -2.8039 (tie-corrected, with continuity correction) and a one-tailed
// approximate probability of 0.0025, so two-sided 0.0050 to the digits printed.
TEST(MannWhitneyU, MatchesNagExampleWithTies) {
    const std::vector<double> group1 = {13, 6, 12, 7, 12, 7, 10, 7, 10, 7, 16, 7, 10, 8, 9, 8};
    const std::vector<double> group2 = {17, 6,  10, 8,  15, 8,  15, 10, 15, 10, 14, 10,
                                        14, 11, 14, 11, 13, 12, 13, 12, 13, 12, 12};
    // 39 values in all: the exact p is the default; NAG's figure is the approximation's.
    EXPECT_TRUE(lab::mann_whitney_u(group1, group2).exact);
    const lab::u_test_result result = lab::mann_whitney_u(group1, group2, lab::u_method::asymptotic);
    EXPECT_DOUBLE_EQ(result.u, 86.0);
    EXPECT_FALSE(result.exact);
    EXPECT_NEAR(result.p_value, 2 * 0.0025, 1e-4);
    // The reference script gives the unrounded value.
    EXPECT_NEAR(result.p_value, 0.005048845813774749, 1e-12);
}

TEST(MannWhitneyU, AllValuesEqualIsNoEvidence) {
    const std::vector<double> same = {5, 5, 5, 5};
    const lab::u_test_result result = lab::mann_whitney_u(same, same);
    EXPECT_DOUBLE_EQ(result.u, 8.0);
    EXPECT_DOUBLE_EQ(result.p_value, 1.0);
    EXPECT_TRUE(result.exact);
    const lab::u_test_result approximate = lab::mann_whitney_u(same, same, lab::u_method::asymptotic);
    EXPECT_DOUBLE_EQ(approximate.p_value, 1.0);
    EXPECT_FALSE(approximate.exact);
}

// The normal approximation calls three tied values against three significant (p 0.046 < 0.05);
// of the 20 ways to split the six values only the 2 fully separated ones are that extreme.
TEST(MannWhitneyU, ThreeTiedAgainstThreeTiedIsExactlyOneInTenNotSignificant) {
    const lab::u_test_result result =
        lab::mann_whitney_u(std::vector<double>{10, 10, 10}, std::vector<double>{20, 20, 20});
    EXPECT_TRUE(result.exact);
    EXPECT_NEAR(result.p_value, 0.1, 1e-15);
    EXPECT_GT(result.p_value, 0.05);
    const std::vector<double> five_low(5, 7.0), five_high(5, 9.0);
    EXPECT_NEAR(lab::mann_whitney_u(five_low, five_high).p_value, 2.0 / 252, 1e-15);
    EXPECT_NEAR(lab::mann_whitney_u(five_high, five_low).p_value, 2.0 / 252, 1e-15);
}

// The permutation distribution with ties is not symmetric: the two-sided p counts both tails
// by their distance from the mean, not twice one of them.
TEST(MannWhitneyU, ExactPWithTiesIsTheSameWhicheverSideComesFirst) {
    const sample_pair samples = reference_samples("ties_across_both");
    EXPECT_DOUBLE_EQ(lab::mann_whitney_u(samples.a, samples.b).p_value,
                     lab::mann_whitney_u(samples.b, samples.a).p_value);
}

TEST(MannWhitneyU, ExactPAtTheCentreIsClippedToOne) {
    // U = n1 n2 / 2: the upper tail includes the centre, so twice it exceeds 1.
    const lab::u_test_result result = lab::mann_whitney_u(std::vector<double>{1, 4}, std::vector<double>{2, 3});
    EXPECT_DOUBLE_EQ(result.u, 2.0);
    EXPECT_DOUBLE_EQ(result.p_value, 1.0);
}

TEST(MannWhitneyU, MoreThanFiftyValuesInAllUseTheApproximation) {
    std::vector<double> a;
    std::vector<double> b;
    for (int i = 0; i < 26; ++i) {
        a.push_back(i % 5);  // ties too
        b.push_back(i + 0.5);
    }
    EXPECT_FALSE(lab::mann_whitney_u(a, b).exact);
    b.pop_back();
    EXPECT_FALSE(lab::mann_whitney_u(a, b).exact);  // 51
    a.pop_back();
    const lab::u_test_result exact = lab::mann_whitney_u(a, b);  // 50
    EXPECT_TRUE(exact.exact);
    EXPECT_GT(exact.p_value, 0.0);
    EXPECT_LE(exact.p_value, 1.0);
}

TEST(MannWhitneyU, RejectsEmptyAndNonFiniteSamples) {
    const std::vector<double> some = {1, 2, 3};
    const std::vector<double> none;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_THROW(lab::mann_whitney_u(none, some), std::invalid_argument);
    EXPECT_THROW(lab::mann_whitney_u(some, none), std::invalid_argument);
    EXPECT_THROW(lab::mann_whitney_u(std::vector<double>{1, nan}, some), std::invalid_argument);
    EXPECT_THROW(lab::mann_whitney_u(some, std::vector<double>{inf, 2}), std::invalid_argument);
}

// Source: the binomial distribution by hand. 9 of 10 one way: 2 (C(10, 9) + C(10, 10)) / 2^10.
TEST(SignTest, MatchesTheBinomialTailsAndIsSymmetric) {
    EXPECT_NEAR(lab::sign_test(9, 1).p_value, 2.0 * 11 / 1024, 1e-15);
    EXPECT_NEAR(lab::sign_test(1, 9).p_value, 2.0 * 11 / 1024, 1e-15);
    EXPECT_DOUBLE_EQ(lab::sign_test(5, 5).p_value, 1.0);
    EXPECT_DOUBLE_EQ(lab::sign_test(0, 0).p_value, 1.0);
    EXPECT_NEAR(lab::sign_test(5, 0).p_value, 2.0 / 32, 1e-15);  // five benchmarks can never reach 0.05
    // 60,000 all one way: far below any alpha, without underflowing to NaN.
    const double p = lab::sign_test(60000, 0).p_value;
    EXPECT_GE(p, 0.0);
    EXPECT_LT(p, 1e-300);
    // 10,100 against 9,900: z ~ 1.41, p ~ 0.16 by the normal approximation.
    EXPECT_NEAR(lab::sign_test(10100, 9900).p_value, 0.159, 0.005);
}

TEST(GeometricMean, OfRatiosTreatsHalfAndDoubleAsOpposites) {
    EXPECT_NEAR(lab::geometric_mean(std::vector<double>{2.0, 0.5}), 1.0, 1e-15);
    EXPECT_NEAR(lab::geometric_mean(std::vector<double>{1, 10, 100}), 10.0, 1e-12);
    EXPECT_DOUBLE_EQ(lab::geometric_mean(std::vector<double>{1.07}), 1.07);
}

TEST(GeometricMean, RejectsEmptyZeroNegativeAndNaN) {
    EXPECT_THROW(lab::geometric_mean(std::vector<double>{}), std::invalid_argument);
    EXPECT_THROW(lab::geometric_mean(std::vector<double>{1, 0}), std::invalid_argument);
    EXPECT_THROW(lab::geometric_mean(std::vector<double>{1, -2}), std::invalid_argument);
    EXPECT_THROW(lab::geometric_mean(std::vector<double>{std::numeric_limits<double>::quiet_NaN()}),
                 std::invalid_argument);
}

TEST(WelchTTest, MatchesTheIndependentReferenceTable) {
    for (const welch_reference& row : welch_table) {
        SCOPED_TRACE(row.name);
        const sample_pair samples = reference_samples(row.name);
        const lab::welch_result result = lab::welch_t_test(samples.a, samples.b);
        EXPECT_NEAR(result.t, row.t, 1e-12);
        EXPECT_NEAR(result.df, row.df, 1e-10);
        EXPECT_NEAR(result.p_value, row.p_value, 1e-9);
    }
}

// Source: the example of R's t.test help page (package stats), t.test(1:10, y = c(7:20, 200)),
// printed by R as "Welch Two Sample t-test ... t = -1.6329, df = 14.165, p-value = 0.1245".
TEST(WelchTTest, MatchesRHelpPageExample) {
    const sample_pair samples = reference_samples("r_t_test_help_example");
    const lab::welch_result result = lab::welch_t_test(samples.a, samples.b);
    EXPECT_NEAR(result.t, -1.6329, 5e-5);
    EXPECT_NEAR(result.df, 14.165, 5e-4);
    EXPECT_NEAR(result.p_value, 0.1245, 5e-5);
}

TEST(WelchTTest, IsSymmetricInItsSides) {
    const sample_pair samples = reference_samples("unequal_spread");
    const lab::welch_result forward = lab::welch_t_test(samples.a, samples.b);
    const lab::welch_result backward = lab::welch_t_test(samples.b, samples.a);
    EXPECT_DOUBLE_EQ(forward.t, -backward.t);
    EXPECT_DOUBLE_EQ(forward.df, backward.df);
    EXPECT_DOUBLE_EQ(forward.p_value, backward.p_value);
}

TEST(WelchTTest, NoiselessSidesAreCertainWhenTheyDifferAndNothingWhenEqual) {
    const std::vector<double> low = {10, 10, 10};
    const std::vector<double> high = {12, 12, 12, 12};
    const lab::welch_result step = lab::welch_t_test(low, high);
    EXPECT_TRUE(std::isinf(step.t) && step.t < 0);
    EXPECT_DOUBLE_EQ(step.p_value, 0.0);
    EXPECT_DOUBLE_EQ(step.df, 5.0);
    const lab::welch_result flat = lab::welch_t_test(low, low);
    EXPECT_DOUBLE_EQ(flat.t, 0.0);
    EXPECT_DOUBLE_EQ(flat.p_value, 1.0);
}

TEST(WelchTTest, RejectsFewerThanTwoValuesASideAndNonFiniteValues) {
    const std::vector<double> two = {1, 2};
    EXPECT_THROW(lab::welch_t_test(std::vector<double>{1}, two), std::invalid_argument);
    EXPECT_THROW(lab::welch_t_test(two, std::vector<double>{}), std::invalid_argument);
    EXPECT_THROW(lab::welch_t_test(two, std::vector<double>{1, std::numeric_limits<double>::quiet_NaN()}),
                 std::invalid_argument);
}

// The pooled (equal-variance) t-test, against values computed from its formula in 30-digit
// arithmetic (mpmath: t from the pooled variance, p = I_{df/(df+t^2)}(df/2, 1/2)). By hand,
// 1:10 against 7:20: means 5.5 and 13.5, squared deviations 82.5 and 227.5, s2 = 310/22,
// t = -8 / sqrt(310/22 * (1/10 + 1/14)) = -5.1473, df = 22.
TEST(StudentTTest, MatchesThePooledFormula) {
    std::vector<double> ten, fourteen;
    for (int i = 1; i <= 10; ++i) ten.push_back(i);
    for (int i = 7; i <= 20; ++i) fourteen.push_back(i);
    const lab::t_test_result r = lab::student_t_test(ten, fourteen);
    EXPECT_NEAR(r.t, -5.147292847304686, 1e-12);
    EXPECT_DOUBLE_EQ(r.df, 22);
    EXPECT_NEAR(r.p_value, 3.690577215911942e-05, 1e-15);

    const sample_pair samples = reference_samples("seven_vs_nine");
    const lab::t_test_result seven = lab::student_t_test(samples.a, samples.b);
    EXPECT_NEAR(seven.t, -2.381707844218076, 1e-12);
    EXPECT_DOUBLE_EQ(seven.df, 14);
    EXPECT_NEAR(seven.p_value, 0.03196860134703705, 1e-12);
    // Welch's form on the same samples differs (its df is 13.09): the two are not one test.
    EXPECT_GT(std::fabs(lab::welch_t_test(samples.a, samples.b).p_value - seven.p_value), 5e-4);

    // One value on a side: its mean is tested against the other side's spread alone.
    const lab::t_test_result one = lab::student_t_test(std::vector<double>{7}, std::vector<double>{1, 2, 3});
    EXPECT_NEAR(one.t, 4.330127018922193, 1e-12);
    EXPECT_DOUBLE_EQ(one.df, 2);
    EXPECT_NEAR(one.p_value, 0.04941362421328313, 1e-12);
}

TEST(StudentTTest, NoiselessSidesAreCertainWhenTheyDifferAndNothingWhenEqual) {
    const std::vector<double> low = {10, 10, 10};
    const std::vector<double> high = {12, 12, 12, 12};
    const lab::t_test_result step = lab::student_t_test(low, high);
    EXPECT_TRUE(std::isinf(step.t) && step.t < 0);
    EXPECT_DOUBLE_EQ(step.p_value, 0.0);
    EXPECT_DOUBLE_EQ(step.df, 5.0);
    EXPECT_DOUBLE_EQ(lab::student_t_test(low, low).p_value, 1.0);
}

TEST(StudentTTest, RejectsAnEmptySideTooFewValuesAndNonFiniteValues) {
    const std::vector<double> two = {1, 2};
    EXPECT_THROW(lab::student_t_test(std::vector<double>{}, two), std::invalid_argument);
    EXPECT_THROW(lab::student_t_test(std::vector<double>{1}, std::vector<double>{2}), std::invalid_argument);
    EXPECT_THROW(lab::student_t_test(two, std::vector<double>{1, std::numeric_limits<double>::infinity()}),
                 std::invalid_argument);
}

TEST(MannWhitneyU, TheSmallestPIsThatOfSamplesThatDoNotOverlapAndSetsTheFewestRepetitions) {
    EXPECT_EQ(lab::u_test_smallest_p(3, 3), 0.1);  // exactly: an alpha of 0.1 is not reached
    EXPECT_NEAR(lab::u_test_smallest_p(30, 31), 2 / 2.3271417662763054e17, 1e-28);  // C(61, 30), by lgamma
    EXPECT_NEAR(lab::u_test_smallest_p(4, 4), 2.0 / 70, 1e-12);
    EXPECT_NEAR(lab::u_test_smallest_p(5, 5), 2.0 / 252, 1e-12);
    EXPECT_NEAR(lab::u_test_smallest_p(3, 4), 2.0 / 35, 1e-12);
    EXPECT_DOUBLE_EQ(lab::u_test_smallest_p(1, 1), 1.0);
    EXPECT_DOUBLE_EQ(lab::u_test_smallest_p(0, 5), 1.0);
    // The exact test agrees on samples that do not overlap.
    EXPECT_NEAR(lab::mann_whitney_u(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}).p_value,
                lab::u_test_smallest_p(3, 3), 1e-12);
    EXPECT_NEAR(lab::mann_whitney_u(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10}).p_value,
                lab::u_test_smallest_p(5, 5), 1e-12);
    EXPECT_EQ(lab::u_test_min_repetitions(0.05), 4u);
    EXPECT_EQ(lab::u_test_min_repetitions(0.01), 5u);
    EXPECT_EQ(lab::u_test_min_repetitions(0.001), 7u);
    EXPECT_EQ(lab::u_test_min_repetitions(0.1), 4u);  // 3 a side give exactly 0.1, not below it
    EXPECT_THROW(lab::u_test_min_repetitions(0), std::invalid_argument);
}

TEST(StudentT, KnownTailsAndLimits) {
    // With one degree of freedom Student's t is Cauchy: P(|T| >= 1) = 1/2 exactly.
    EXPECT_NEAR(lab::student_t_two_sided_p(1.0, 1.0), 0.5, 1e-14);
    // With two, P(|T| >= t) = 1 - t / sqrt(2 + t^2) in closed form.
    EXPECT_NEAR(lab::student_t_two_sided_p(3.0, 2.0), 1 - 3 / std::sqrt(11.0), 1e-14);
    // The textbook critical value t(0.975, 10) = 2.228 (two-sided 5 %), to the table's digits.
    EXPECT_NEAR(lab::student_t_two_sided_p(2.228138851986, 10.0), 0.05, 1e-9);
    EXPECT_DOUBLE_EQ(lab::student_t_two_sided_p(0.0, 7.0), 1.0);
    EXPECT_DOUBLE_EQ(lab::student_t_two_sided_p(std::numeric_limits<double>::infinity(), 7.0), 0.0);
}

// Past any table, Student's t is the normal distribution: P(|Z| >= 1) = erfc(1 / sqrt(2)).
// The hand-written continued fraction said 1 at df = 1e300 and threw at an infinite df.
TEST(StudentT, AHugeOrInfiniteDfGivesTheNormalTail) {
    const double normal = std::erfc(1 / std::sqrt(2.0));
    EXPECT_NEAR(lab::student_t_two_sided_p(1.0, 1e300), normal, 1e-14);
    EXPECT_NEAR(lab::student_t_two_sided_p(1.0, std::numeric_limits<double>::infinity()), normal, 1e-14);
    EXPECT_THROW(lab::student_t_two_sided_p(1.0, 0.0), std::invalid_argument);
    EXPECT_THROW(lab::student_t_two_sided_p(std::numeric_limits<double>::quiet_NaN(), 3.0), std::invalid_argument);
}

TEST(RegularizedIncompleteBeta, KnownValues) {
    // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; I_{1/2}(a, a) = 1/2.
    EXPECT_NEAR(lab::regularized_incomplete_beta(0.3, 1, 1), 0.3, 1e-15);
    EXPECT_NEAR(lab::regularized_incomplete_beta(0.6, 3, 1), 0.216, 1e-14);
    EXPECT_NEAR(lab::regularized_incomplete_beta(0.2, 1, 4), 1 - std::pow(0.8, 4), 1e-14);
    EXPECT_NEAR(lab::regularized_incomplete_beta(0.5, 40.5, 40.5), 0.5, 1e-13);
    EXPECT_DOUBLE_EQ(lab::regularized_incomplete_beta(0, 2, 3), 0.0);
    EXPECT_DOUBLE_EQ(lab::regularized_incomplete_beta(1, 2, 3), 1.0);
    EXPECT_THROW(lab::regularized_incomplete_beta(1.5, 2, 3), std::invalid_argument);
}
