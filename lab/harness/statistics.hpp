// Order statistics for repetition samples. The lab reports medians and quartiles, never
// means: one descheduled repetition on a shared machine moves a mean, not a median.
#pragma once

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

}  // namespace contend::lab
