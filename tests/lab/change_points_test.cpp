#include "analyze/change_points.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace lab = contend::lab;

namespace {

// Levels with multiplicative noise of up to +-spread, from a fixed generator: std::mt19937's
// output sequence is fixed by the standard (unlike std::uniform_real_distribution's), so every
// platform sees the same series.
class noisy_series {
public:
    explicit noisy_series(double spread, std::uint32_t start = 20240617) : spread_(spread), generator_(start) {}

    noisy_series& level(double value, int points) {
        for (int i = 0; i < points; ++i) {
            const double unit = static_cast<double>(generator_()) / 4294967296.0;  // [0, 1)
            values_.push_back(value * (1 + spread_ * (2 * unit - 1)));
        }
        return *this;
    }
    const std::vector<double>& values() const { return values_; }

private:
    double spread_;
    std::mt19937 generator_;
    std::vector<double> values_;
};

std::vector<double> levels(std::initializer_list<std::pair<double, int>> parts) {
    std::vector<double> out;
    for (const auto& [value, points] : parts) out.insert(out.end(), static_cast<std::size_t>(points), value);
    return out;
}

// Independent references for the statistic and the p-value, written from the published
// formulas, sharing nothing with lab/analyze (no incremental sums, no Boost):
//
// Q-hat with alpha = 1 (Matteson and James 2014; the same normalisation as Otava's
// PairDistanceCalculator), every pair summed afresh:
//   Q(x, y) = m n / (m + n) * ( 2/(m n) sum_i sum_j |x_i - y_j|
//                               - 1/C(m,2) sum_{i<k} |x_i - x_k| - 1/C(n,2) sum_{j<k} |y_j - y_k| )
double reference_q(std::span<const double> x, std::span<const double> y) {
    const double m = static_cast<double>(x.size());
    const double n = static_cast<double>(y.size());
    double between = 0;
    for (const double a : x)
        for (const double b : y) between += std::fabs(a - b);
    auto within = [](std::span<const double> v) {
        double sum = 0;
        for (std::size_t i = 0; i < v.size(); ++i)
            for (std::size_t k = i + 1; k < v.size(); ++k) sum += std::fabs(v[i] - v[k]);
        const double count = static_cast<double>(v.size());
        return sum / (count * (count - 1) / 2);
    };
    return m * n / (m + n) * (2 * between / (m * n) - within(x) - within(y));
}

// The split of `series` where reference_q is largest, over the splits leaving min_segment
// points a side, and the runner-up's value: a test on it needs a clear winner, or rounding
// alone could pick either.
struct reference_split {
    std::size_t index;
    double q;
    double runner_up_q;
};
reference_split reference_best_split(std::span<const double> series, std::size_t min_segment) {
    reference_split best{0, -std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    for (std::size_t tau = min_segment; tau + min_segment <= series.size(); ++tau) {
        const double q = reference_q(series.first(tau), series.subspan(tau));
        if (q > best.q) {
            best = {tau, q, best.q};
        } else if (q > best.runner_up_q) {
            best.runner_up_q = q;
        }
    }
    return best;
}

// P(|T| >= |t|) for Student's t with an even number of degrees of freedom, in closed form
// (Abramowitz and Stegun 26.7.3): with x = |t| / sqrt(df + t^2),
//   P(|T| < |t|) = x * (1 + 1/2 (1 - x^2) + 3/8 (1 - x^2)^2 + ... + C(2k,k)/4^k (1 - x^2)^k),
// k up to df/2 - 1. The pooled t-test's df, m + n - 2, is even when m + n is, as for the
// 8-point series below.
double student_t_two_sided_p_even_df(double t, int df) {
    const double x = std::fabs(t) / std::sqrt(df + t * t);
    double term = 1;  // C(2k,k)/4^k (1 - x^2)^k
    double sum = 0;
    for (int k = 0; k < df / 2; ++k) {
        sum += term;
        term *= (2.0 * k + 1) / (2.0 * k + 2) * (1 - x * x);
    }
    return 1 - x * sum;
}

}  // namespace

TEST(ChangePoints, CleanStepIsFoundAtItsFirstNewPoint) {
    const std::vector<double> series = levels({{100, 10}, {120, 10}});
    const std::vector<lab::change_point> changes = lab::find_change_points(series);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 10u);
    EXPECT_DOUBLE_EQ(changes[0].before_mean, 100);
    EXPECT_DOUBLE_EQ(changes[0].after_mean, 120);
    EXPECT_LT(changes[0].p_value, 0.001);
}

TEST(ChangePoints, NoisyStepIsFoundAtItsFirstNewPoint) {
    const std::vector<double> series = noisy_series(0.02).level(100, 15).level(112, 15).values();
    const std::vector<lab::change_point> changes = lab::find_change_points(series);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 15u);
    EXPECT_NEAR(changes[0].before_mean, 100, 1.5);
    EXPECT_NEAR(changes[0].after_mean, 112, 1.5);
    EXPECT_LT(changes[0].p_value, 0.001);
}

TEST(ChangePoints, SingleSpikeIsNotAChange) {
    std::vector<double> flat = levels({{100, 20}});
    flat[10] = 500;
    EXPECT_TRUE(lab::find_change_points(flat).empty());

    std::vector<double> noisy = noisy_series(0.02).level(100, 30).values();
    noisy[17] *= 5;
    EXPECT_TRUE(lab::find_change_points(noisy).empty());
    // Not even when any magnitude would do: the spike inflates its side's variance.
    EXPECT_TRUE(lab::find_change_points(noisy, {.p = 0.001, .min_segment = 3, .min_magnitude = 0}).empty());
}

TEST(ChangePoints, SpikeAtTheEndIsNotAChange) {
    std::vector<double> series = noisy_series(0.02).level(100, 20).values();
    series.back() = 300;
    EXPECT_TRUE(lab::find_change_points(series).empty());
}

TEST(ChangePoints, NoisyFlatSeriesHasNone) {
    // Twenty series of 60 points with +-5 % noise, each from its own generator state.
    for (std::uint32_t start = 1; start <= 20; ++start) {
        SCOPED_TRACE(start);
        const std::vector<double> series = noisy_series(0.05, start).level(100, 60).values();
        EXPECT_TRUE(lab::find_change_points(series).empty());
    }
}

// The false-positive rate, calibrated: a thousand series of 40 runs of i.i.d. noise, each
// from its own generator state, with no change in any of them. At the default p = 0.001 a
// series should show a change about once in a thousand. Before the correction for the choice
// of the split (and with Welch's t-test, which trusts a 3-point side's small spread) 99 of the
// uniform series and 103 of the skewed ones had a change "at p < 0.001"; now none do (over
// 10,000 series: 13 uniform, 11 skewed, docs/lab.md). The bound leaves room for a platform's
// last bit of log() without letting a miscalibration through.
TEST(ChangePoints, IidNoiseGivesAChangeInAtMostFiveSeriesOfAThousand) {
    constexpr std::uint32_t series_count = 1000;
    constexpr int points = 40;
    int uniform_with_change = 0, skewed_with_change = 0;
    for (std::uint32_t start = 1; start <= series_count; ++start) {
        // +-10 % uniform noise.
        const std::vector<double> uniform = noisy_series(0.1, start).level(100, points).values();
        uniform_with_change += !lab::find_change_points(uniform).empty();
        // Skewed as benchmark times are: a floor and an exponential tail of slow runs (mean +10 %).
        std::mt19937 generator(start);
        std::vector<double> skewed;
        for (int i = 0; i < points; ++i) {
            const double unit = static_cast<double>(generator()) / 4294967296.0;  // [0, 1)
            skewed.push_back(100 * (1 - 0.1 * std::log(1 - unit)));
        }
        skewed_with_change += !lab::find_change_points(skewed).empty();
    }
    EXPECT_LE(uniform_with_change, 5) << "of " << series_count << " series of uniform noise";
    EXPECT_LE(skewed_with_change, 5) << "of " << series_count << " series of skewed noise";
}

TEST(ChangePoints, TwoStepsAreBothFound) {
    const std::vector<double> series = noisy_series(0.02).level(100, 12).level(130, 12).level(90, 12).values();
    const std::vector<lab::change_point> changes = lab::find_change_points(series);
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].index, 12u);
    EXPECT_EQ(changes[1].index, 24u);
    // Each change's means are those of its neighbouring segments, not of the whole series.
    EXPECT_NEAR(changes[0].before_mean, 100, 1.5);
    EXPECT_NEAR(changes[0].after_mean, 130, 1.5);
    EXPECT_NEAR(changes[1].before_mean, 130, 1.5);
    EXPECT_NEAR(changes[1].after_mean, 90, 1.5);
}

TEST(ChangePoints, StepThatReturnsIsTwoChanges) {
    // A slowdown that was later fixed: 100 -> 120 -> 100.
    const std::vector<double> series = levels({{100, 8}, {120, 8}, {100, 8}});
    const std::vector<lab::change_point> changes = lab::find_change_points(series);
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].index, 8u);
    EXPECT_EQ(changes[1].index, 16u);
}

TEST(ChangePoints, StepBelowMinMagnitudeIsNotReported) {
    const std::vector<double> series = levels({{100, 10}, {103, 10}});  // 3 %, below the default 5 %
    EXPECT_TRUE(lab::find_change_points(series).empty());
    const std::vector<lab::change_point> changes =
        lab::find_change_points(series, {.p = 0.001, .min_segment = 3, .min_magnitude = 0.02});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 10u);
}

TEST(ChangePoints, ShortSeriesHasNone) {
    // Fewer than 2 * min_segment points: no split leaves min_segment a side.
    EXPECT_TRUE(lab::find_change_points(levels({{100, 2}, {200, 3}})).empty());
    EXPECT_TRUE(lab::find_change_points(std::vector<double>{}).empty());
    EXPECT_TRUE(lab::find_change_points(std::vector<double>{100}).empty());
    // Exactly 2 * min_segment is enough.
    const std::vector<lab::change_point> changes = lab::find_change_points(levels({{100, 3}, {200, 3}}));
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 3u);
}

TEST(ChangePoints, ShortRunOfNewValuesBelowMinSegmentIsNotAChange) {
    // Two slow runs at the end: not yet a new level.
    EXPECT_TRUE(lab::find_change_points(levels({{100, 12}, {150, 2}})).empty());
    const std::vector<lab::change_point> changes = lab::find_change_points(levels({{100, 12}, {150, 3}}));
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 12u);
}

TEST(ChangePoints, SameSeriesGivesSameAnswer) {
    const std::vector<double> series = noisy_series(0.03).level(50, 20).level(60, 20).level(55, 20).values();
    const std::vector<lab::change_point> first = lab::find_change_points(series);
    const std::vector<lab::change_point> second = lab::find_change_points(series);
    ASSERT_EQ(first.size(), second.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
        EXPECT_EQ(first[i].index, second[i].index);
        EXPECT_EQ(first[i].p_value, second[i].p_value);
    }
}

TEST(ChangePoints, RejectsNaN) {
    std::vector<double> series = levels({{100, 10}});
    series[4] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THROW(lab::find_change_points(series), std::invalid_argument);
}

// --- The statistic and the p-value against the references above -------------------------

// p = 0.99 and min_magnitude = 0 keep every split whose corrected p is below 0.99 (the first
// pass uses options.p itself from 0.5 on), and 8 points with min_segment 3 leave no segment long
// enough to split again: the one change reported is the split Q-hat chose, tau in {3, 4, 5}.
// The series is steady, then erratic with a similar mean. Q-hat with alpha = 1 compares
// distributions, so it splits where the spread changes (tau = 3); statistics of the means
// (alpha = 2, which is 2 m n / (m + n) ((mean_x - mean_y)^2 - s_x^2/m - s_y^2/n); Welch's t) and
// the V-statistic normalisation 1/m^2 of the within-sums all choose tau = 4 instead.
// By hand, series 4 4 4 1 10 0 5 12:
//   tau = 3: x = {4,4,4}, y = {1,10,0,5,12}
//     between: each 4 against y: 3+6+4+1+8 = 22, times 3 = 66
//     within x: 0; within y: 9+1+4+11 + 10+5+2 + 5+12 + 7 = 66, over C(5,2) = 10
//     Q = 15/8 * (2*66/15 - 0 - 66/10) = 15/8 * 11/5 = 33/8 = 4.125
//   tau = 4: x = {4,4,4,1}, y = {10,0,5,12}
//     between: 19 * 3 (the 4s: 6+4+1+8) + 25 (the 1: 9+1+4+11) = 82
//     within x: 3+3+3 = 9, over 6; within y: 10+5+2+5+12+7 = 41, over 6
//     Q = 16/8 * (2*82/16 - 9/6 - 41/6) = 2 * 23/12 = 23/6 = 3.8333...
//   tau = 5: x = {4,4,4,1,10}, y = {0,5,12}
//     between: 13 * 3 (the 4s: 4+1+8) + 16 (the 1) + 17 (the 10) = 72
//     within x: 3*3 + 6*3 + 9 = 36, over 10; within y: 5+12+7 = 24, over 3
//     Q = 15/8 * (2*72/15 - 36/10 - 8) = 15/8 * -2 = -15/4
// The pooled t-test at tau = 3: df = 8 - 2 = 6; mean y = 5.6, squared deviations 0 (x) and
// 4.6^2 + 4.4^2 + 5.6^2 + 0.6^2 + 6.4^2 = 113.2 (y), s2 = 113.2/6, t^2 = 1.6^2 / (s2 (1/3 + 1/5))
// = 72/283, x^2 = t^2 / (6 + t^2) = 12/295, p = 1 - x (1 + 1/2 (283/295) + 3/8 (283/295)^2)
// = 0.63196554891..., corrected for the 3 splits it was chosen among: 1 - (1 - p)^3 =
// 0.95014997018... (both in 30-digit arithmetic too). Welch's test, which the first pass uses
// to find candidates, gives 0.538 there.
TEST(ChangePoints, SplitIsWhereQHatWithAlphaOneIsLargestAndItsPIsTheCorrectedPooledTTest) {
    const std::vector<double> series{4, 4, 4, 1, 10, 0, 5, 12};
    const std::span<const double> all(series);
    EXPECT_NEAR(reference_q(all.first(3), all.subspan(3)), 33.0 / 8, 1e-9);
    EXPECT_NEAR(reference_q(all.first(4), all.subspan(4)), 23.0 / 6, 1e-9);
    EXPECT_NEAR(reference_q(all.first(5), all.subspan(5)), -15.0 / 4, 1e-9);
    const double t = -std::sqrt(72.0 / 283);
    const double one_minus_x2 = 283.0 / 295;
    const double p = 1 - std::sqrt(12.0 / 295) * (1 + one_minus_x2 / 2 + 3.0 / 8 * one_minus_x2 * one_minus_x2);
    EXPECT_NEAR(student_t_two_sided_p_even_df(t, 6), p, 1e-12);
    EXPECT_NEAR(p, 0.63196554891, 1e-9);
    const double corrected = 1 - std::pow(1 - p, 3);

    const std::vector<lab::change_point> changes =
        lab::find_change_points(series, {.p = 0.99, .min_segment = 3, .min_magnitude = 0});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 3u);
    EXPECT_DOUBLE_EQ(changes[0].before_mean, 4);
    EXPECT_DOUBLE_EQ(changes[0].after_mean, 5.6);
    EXPECT_NEAR(changes[0].p_value, 0.95014997018, 1e-9);
    EXPECT_NEAR(changes[0].p_value, corrected, 1e-9);
    // Uncorrected, 0.63 would pass p = 0.9; corrected, it does not.
    EXPECT_TRUE(lab::find_change_points(series, {.p = 0.9, .min_segment = 3, .min_magnitude = 0}).empty());
}

// The p-value is not a permutation test's (the header says why: a t-test instead, as Hunter's
// and Otava's, so there is no seed to fix); this pins it to its value and shows it judged
// against options.p. By hand, series 10 12 10 12 14 16 14 16:
//   Q-hat: tau = 3 and 5 give 31/4 (by the reference), tau = 4 gives
//     2 * (2*64/16 - 8/6 - 8/6) = 2 * 16/3 = 32/3 (between: 2*(4+6+4+6) + 2*(2+4+2+4) = 64)
//   the pooled t-test at tau = 4: means 11 and 15, both variances 4/3, df = 8 - 2 = 6;
//     t = 4 / sqrt(4/3 (1/4 + 1/4)) = 4 / sqrt(2/3), t^2 = 24, x^2 = 24/30 = 0.8,
//     p = 1 - sqrt(0.8) * (1 + 0.2/2 + 3/8 * 0.04) = 1 - 1.115 sqrt(0.8) = 0.0027136820...,
//     corrected for the 3 splits: 1 - (1 - p)^3 = 0.0081189738784...
TEST(ChangePoints, StepsPValueIsTheCorrectedPooledTTestBetweenItsSidesJudgedAgainstOptionsP) {
    const std::vector<double> series{10, 12, 10, 12, 14, 16, 14, 16};
    const std::span<const double> all(series);
    EXPECT_NEAR(reference_q(all.first(3), all.subspan(3)), 31.0 / 4, 1e-9);
    EXPECT_NEAR(reference_q(all.first(4), all.subspan(4)), 32.0 / 3, 1e-9);
    EXPECT_NEAR(reference_q(all.first(5), all.subspan(5)), 31.0 / 4, 1e-9);
    const double p = 1 - 1.115 * std::sqrt(0.8);
    EXPECT_NEAR(student_t_two_sided_p_even_df(4 / std::sqrt(2.0 / 3), 6), p, 1e-12);

    const std::vector<lab::change_point> changes =
        lab::find_change_points(series, {.p = 0.01, .min_segment = 3, .min_magnitude = 0.05});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 4u);
    EXPECT_DOUBLE_EQ(changes[0].before_mean, 11);
    EXPECT_DOUBLE_EQ(changes[0].after_mean, 15);
    EXPECT_NEAR(changes[0].p_value, 0.0081189738785, 1e-9);
    EXPECT_NEAR(changes[0].p_value, 1 - std::pow(1 - p, 3), 1e-9);
    // 0.0081 is not below the default 0.001: the same step is then no change.
    EXPECT_TRUE(lab::find_change_points(series).empty());
}

// Otava's numpy argmax takes the first of equal maxima, and so does the header. A palindrome
// ties its mirrored splits exactly (every sum an integer); by hand, series 1 1 1 5 5 1 1 1:
//   tau = 3: between 3 * 8 = 24, within x 0, within y 6 * 4 = 24 over 10:
//     Q = 15/8 * (2*24/15 - 0 - 2.4) = 15/8 * 0.8 = 1.5; tau = 5 mirrors it, also 1.5
//   tau = 4: between 12 + 12 = 24, within x and y 3 * 4 = 12 over 6 each:
//     Q = 16/8 * (2*24/16 - 2 - 2) = -2
TEST(ChangePoints, OfEqualLargestQHatsTheFirstSplitWins) {
    const std::vector<double> series{1, 1, 1, 5, 5, 1, 1, 1};
    const std::span<const double> all(series);
    EXPECT_NEAR(reference_q(all.first(3), all.subspan(3)), 1.5, 1e-9);
    EXPECT_NEAR(reference_q(all.first(4), all.subspan(4)), -2, 1e-9);
    EXPECT_NEAR(reference_q(all.first(5), all.subspan(5)), 1.5, 1e-9);

    const std::vector<lab::change_point> changes =
        lab::find_change_points(series, {.p = 0.9, .min_segment = 3, .min_magnitude = 0});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].index, 3u);
}

// On many series the library's split is the reference's. Every shape has fewer than
// 3 * min_segment points, so no side of the first split can be split again, and p = 1 with
// min_magnitude = 0 keeps any split whose sides' means differ (always, for these values): the
// one change reported is the first split. The first hand example cannot tell Q-hat from the
// same sums without the m n / (m + n) factor (that peaks at tau = 3 too); these series can,
// and from the other variants named there (each, put into the library, fails here).
TEST(ChangePoints, SplitMatchesTheReferenceQHatsLargestOnSeededSeries) {
    struct shape {
        std::size_t points, min_segment;
    };
    int differs_from_middle = 0;
    for (const shape s : {shape{8, 3}, shape{11, 4}, shape{14, 5}}) {
        for (std::uint32_t start = 1; start <= 100; ++start) {
            SCOPED_TRACE(testing::Message() << s.points << " points, generator " << start);
            // A level shift of up to +-30 % at a random point, under +-10 % noise.
            std::mt19937 generator(start);
            auto unit = [&generator] { return static_cast<double>(generator()) / 4294967296.0; };
            const std::size_t step = 1 + generator() % (s.points - 1);
            const double shift = 0.6 * unit() - 0.3;
            std::vector<double> series;
            for (std::size_t i = 0; i < s.points; ++i)
                series.push_back(100 * (1 + (i >= step ? shift : 0)) * (1 + 0.1 * (2 * unit() - 1)));

            const reference_split expected = reference_best_split(series, s.min_segment);
            ASSERT_GT(expected.q - expected.runner_up_q, 1e-9 * std::fabs(expected.q)) << "no clear winner";
            const std::vector<lab::change_point> changes =
                lab::find_change_points(series, {.p = 1, .min_segment = s.min_segment, .min_magnitude = 0});
            ASSERT_EQ(changes.size(), 1u);
            EXPECT_EQ(changes[0].index, expected.index);
            differs_from_middle += expected.index != s.points / 2;
        }
    }
    // The seeds exercise more than one split position: a library that always split in the
    // middle would fail.
    EXPECT_GT(differs_from_middle, 100);
}
