#include "results/statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

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

// --- Separate modes (find_modes) --------------------------------------------------------------

TEST(Modes, ThePipesOneAndEightGigabytesASecondAreTwoModes) {
    // 4 KiB chunks: 4,096 ns each at 1 GB/s, 512 ns at 8 GB/s, with a little noise on each.
    const auto m = lab::find_modes({512, 4096, 530, 4200, 3900});
    ASSERT_TRUE(m.modal);
    EXPECT_EQ(m.low_count, 2u);
    EXPECT_EQ(m.high_count, 3u);
    EXPECT_DOUBLE_EQ(m.low_median, 521);
    EXPECT_DOUBLE_EQ(m.high_median, 4096);
    EXPECT_EQ(lab::describe_modes(m), "2 repetitions near 521 ns, 3 near 4096 ns");
}

TEST(Modes, SeparateModesAreFoundWhateverTheirNoiseAndSizes) {
    EXPECT_TRUE(lab::find_modes({500, 700, 3500, 4500, 5000}).modal) << "noisy groups, far apart";
    EXPECT_TRUE(lab::find_modes({10, 10.1, 10.2, 25, 26}).modal) << "two slow repetitions of five";
    EXPECT_TRUE(lab::find_modes({1, 1, 2, 2}).modal) << "the fewest repetitions that can show two modes";
    EXPECT_TRUE(lab::find_modes({10, 10.5, 15, 15.5, 16}).modal);
    std::vector<double> many;
    for (int i = 0; i < 20; ++i) many.push_back(i % 2 ? 100 + i * 0.1 : 300 + i * 0.2);
    EXPECT_TRUE(lab::find_modes(many).modal);
    // Three modes are at least two when one gap is wider than the groups on either side of it.
    const auto three = lab::find_modes({10, 10.2, 40, 41, 400, 410});
    ASSERT_TRUE(three.modal);
    EXPECT_EQ(three.low_count, 4u) << "split at the widest gap";
}

TEST(Modes, OrdinaryNoiseIsOneFigure) {
    EXPECT_FALSE(lab::find_modes({10, 11, 13, 16, 17}).modal) << "a wide spread, but no gap wider than it";
    EXPECT_FALSE(lab::find_modes({10, 10.2, 10.5, 11, 12.5}).modal);
    EXPECT_FALSE(lab::find_modes({10, 10.1, 10.2, 10.3, 25}).modal) << "one outlier is not a mode";
    EXPECT_FALSE(lab::find_modes({10, 10.2, 14.9, 15.2}).modal) << "1.49 apart: under the 1.5 that counts";
    EXPECT_FALSE(lab::find_modes({10, 11, 15, 16.5, 30}).modal) << "the slow group spreads wider than the gap";
    EXPECT_FALSE(lab::find_modes({1, 1, 10}).modal) << "three repetitions cannot hold two groups of two";
    EXPECT_FALSE(lab::find_modes({}).modal);
    // A thousand repetitions of log-normal noise (a deterministic generator): no gap stands out.
    std::vector<double> noise;
    std::uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 1000; ++i) {
        double sum = 0;
        for (int k = 0; k < 12; ++k) {  // about normal: a sum of 12 uniforms
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sum += static_cast<double>(x >> 11) / 9007199254740992.0;
        }
        noise.push_back(100 * std::exp(0.15 * (sum - 6)));
    }
    EXPECT_FALSE(lab::find_modes(noise).modal);
    EXPECT_EQ(lab::describe_modes(lab::find_modes(noise)), "");
}

TEST(Modes, SamplesThatAreNotPositiveNumbersAreNeverModal) {
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    EXPECT_FALSE(lab::find_modes({512, 530, 4096, 4200, nan}).modal);
    EXPECT_FALSE(lab::find_modes({512, 530, 4096, 4200, inf}).modal);
    EXPECT_FALSE(lab::find_modes({0, 0, 4096, 4200}).modal);
    EXPECT_FALSE(lab::find_modes({-4096, -4200, 512, 530}).modal);
}
