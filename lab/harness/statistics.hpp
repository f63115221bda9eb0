// Order statistics for repetition samples. The lab reports medians and quartiles, never
// means: one descheduled repetition on a shared machine moves a mean, not a median.
#pragma once

#include <vector>

namespace contend::lab {

// The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks (the
// "type 7" definition of R and NumPy's default). Empty input gives 0.
double quantile(std::vector<double> samples, double q);

inline double median(const std::vector<double>& samples) { return quantile(samples, 0.5); }

}  // namespace contend::lab
