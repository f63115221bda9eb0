// Order statistics for repetition samples. The lab reports medians and quartiles, never
// means: one descheduled repetition on a shared machine moves a mean, not a median.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace contend::lab {

// The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks (the
// "type 7" definition of R and NumPy's default). Empty input gives 0.
double quantile(std::vector<double> samples, double q);

inline double median(const std::vector<double>& samples) { return quantile(samples, 0.5); }

// The harness's rule for enough repetitions: the samples' interquartile range is at most
// `spread` times their median (and the median is positive).
inline bool settled(const std::vector<double>& samples, double spread) {
    const double mid = median(samples);
    return mid > 0 && quantile(samples, 0.75) - quantile(samples, 0.25) <= spread * mid;
}

// Separate modes: a cell whose repetitions fall into groups far apart (the pipe suite's mutex
// ring at 1 and at 8 GB/s, from run to run and within one) has a median that is one group's,
// or between them: not one figure. The rule, on the sorted repetitions: some split into a
// faster group L and a slower group H, each of at least 2 repetitions, such that
//  - median(H) >= 1.5 x median(L): further apart than the drift of a shared VM within a
//    run (its speed states moved a server's requests per second by a quarter: docs/lab.md);
//  - min(H) / max(L) >= max(L) / min(L) and >= max(H) / min(H): the gap between the groups
//    is at least as wide, as a ratio, as the spread within either, so the two are clusters
//    and not the ends of one wide spread.
// Ratios, not differences: times spread in proportion to their size. Fewer than 4
// repetitions, or any that is not a positive finite number, are never modal. The rule looks
// for two groups: three or more are found when one of their gaps is wider than the groups on
// either side of it (10, 40 and 400 ns are; 10, 40 and 160 ns, evenly spaced, read as one
// spread). Three groups of two need six repetitions, more than the default run takes.
struct modes {
    bool modal = false;
    std::size_t low_count = 0, high_count = 0;  // repetitions in the faster and the slower group
    double low_median = 0, high_median = 0;  // each group's median
};
inline constexpr double modes_min_ratio = 1.5;
inline constexpr std::size_t modes_min_group = 2;
// Of the splits that pass, the one with the widest gap.
modes find_modes(std::vector<double> samples);
// "2 repetitions near 512 ns, 3 near 4096 ns"; "" when not modal.
std::string describe_modes(const modes& m);

}  // namespace contend::lab
