#include "analyze/change_points.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
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
