#include "harness/statistics.hpp"

#include <gtest/gtest.h>

namespace lab = contend::lab;

TEST(Statistics, MedianOfOddAndEvenSamples) {
    EXPECT_DOUBLE_EQ(lab::median({5, 1, 3}), 3);
    EXPECT_DOUBLE_EQ(lab::median({4, 1, 3, 2}), 2.5);
    EXPECT_DOUBLE_EQ(lab::median({7}), 7);
    EXPECT_DOUBLE_EQ(lab::median({}), 0);
}

TEST(Statistics, QuartilesInterpolateBetweenClosestRanks) {
    // Type 7 (R's and NumPy's default): position q*(n-1).
    const std::vector<double> s = {10, 20, 30, 40, 50};
    EXPECT_DOUBLE_EQ(lab::quantile(s, 0.25), 20);
    EXPECT_DOUBLE_EQ(lab::quantile(s, 0.75), 40);
    const std::vector<double> t = {1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(lab::quantile(t, 0.25), 1.75);
    EXPECT_DOUBLE_EQ(lab::quantile(t, 0.75), 3.25);
    EXPECT_DOUBLE_EQ(lab::quantile(t, 0), 1);
    EXPECT_DOUBLE_EQ(lab::quantile(t, 1), 4);
}

TEST(Statistics, OneOutlierMovesNeitherMedianNorQuartiles) {
    EXPECT_DOUBLE_EQ(lab::median({5, 5, 5, 5, 5000}), 5);
    EXPECT_DOUBLE_EQ(lab::quantile({5, 5, 5, 5, 5000}, 0.75), 5);
}

TEST(Statistics, SettledMeansTheQuartilesLieWithinTheSpreadOfTheMedian) {
    EXPECT_TRUE(lab::settled({100, 100, 101, 100}, 0.02));
    EXPECT_FALSE(lab::settled({100, 110, 120, 130}, 0.02));  // IQR 15 > 2.3
    EXPECT_TRUE(lab::settled({100, 110, 120, 130}, 0.2));
    EXPECT_FALSE(lab::settled({}, 0.02));  // no samples: never settled
    EXPECT_FALSE(lab::settled({0, 0}, 1));  // a zero median is not a measurement
}
