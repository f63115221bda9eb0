// Change points in a benchmark's history: the runs after which its time moved to a new level
// and stayed there. `contend history --changes` prints them between the labels that bracket
// them; the report marks them on each benchmark's chart.
//
// The method is E-divisive means (Matteson and James, 2014; see docs/references.md,
// e-divisive-means) as Hunter, now Apache Otava, adapted it for performance histories (see
// docs/references.md, hunter-change-points):
//   1. Over a segment [lo, hi), find the split tau maximizing the E-divisive statistic with
//      alpha = 1, the energy distance between the two sides scaled by their sizes:
//        Q(tau) = m n / (m + n) * ( 2/(m n) sum |x_i - y_j|
//                                   - 1/C(m,2) sum_{i<k} |x_i - x_k| - 1/C(n,2) sum_{j<k} |y_j - y_k| )
//      over the m points x before tau and the n points y from tau on. Only splits that leave
//      both sides at least min_segment points are candidates; the first maximum wins.
//   2. Keep the split as a candidate when Welch's t-test between the two sides gives a p below
//      a looser first-pass threshold: 10 * options.p (2 * options.p from 0.05, options.p from
//      0.5), Otava's values. This pass only finds candidates; step 4 judges them.
//   3. If kept, repeat on [lo, tau) and [tau, hi); if not, the segment has no change.
//   4. Otava's merge step: judge each candidate again against its neighbours in the final
//      segmentation (the points between the candidates either side of it). A change must have
//      p < options.p and a relative change of means |after - before| / before >=
//      options.min_magnitude, where p is Student's pooled t-test between the two sides,
//      corrected for the choice of the split among the k = L - 2 min_segment + 1 splits of
//      that window of L points (Sidak: 1 - (1 - p_t)^k). The last two sections say why. While one fails, drop the
//      candidate with the largest p if that p is not below options.p, else the one with the smallest relative change,
//      and judge the rest again.
// Why two thresholds: a split judged against a whole segment mixes the levels on its far side.
// In 100 -> 120 -> 100 (8 points each), the first split at 8 compares 100 with the mean of
// 120s and 100s, p ~ 0.0015, and a strict first pass would stop there and find nothing; the
// looser pass keeps it, the split at 16 follows, and against its true neighbours the split at
// 8 has p ~ 0. This is the tweak the Hunter paper describes for nearby changes. The merge
// also makes the means a reader sees as `old -> new` those of the adjacent segments.
// Otava also slides a 50-point window over long series before merging; histories here are
// short enough to split whole.
// The result is every split that survives, sorted by index.
//
// Why deterministic. Matteson and James judge a split by a permutation test: shuffle the
// segment many times and see how often a shuffle scores as high. Hunter's authors found the
// random test gave different change points on the same history from one run to the next
// unless it ran impractically many shuffles; they replaced it with a Student's t-test between
// the two sides, and we do the same (the pooled form, below). The same history then always
// gives the same answer, which a CI gate and a reader comparing two reports both need.
//
// Why a single spike is not a change. One descheduled run produces one outlier: that is noise,
// not a new level, and Otava's users asked that it not be reported. min_segment (default 3)
// keeps any split, in either pass, from isolating fewer than 3 points, so a spike can only sit
// inside a longer side, where it inflates that side's variance and so raises the t-test's p
// rather than lowering it. Likewise a short series (fewer than 2 * min_segment points) has no candidate
// split and so no change.
//
// Why the correction, and why the pooled t-test. A t-test's p is that of one split fixed in
// advance, but the split tested is the best of k; in pure noise the best of many is often
// "significant". And Welch's t-test (which judged splits here before) divides by each side's own spread: a
// side of 3 points that happen to lie close together makes any difference look large (on
// i.i.d. normal noise, 3 points against 37 give Welch's p < 0.001 in 1.4 % of splits). Both
// together made 964 of 10,000 series of 40 runs of i.i.d. +-10 % uniform noise show a change
// "at p < 0.001". The pooled variance weighs a side by its points, and the Sidak factor pays for
// the choice of the split, so p is again about what it says: with the defaults, 13 of those
// 10,000 series show a change (0.13 %), 4 of 10,000 with normal noise, 11 with a skewed noise
// (a floor and an exponential tail), 27 of 10,000 series of 10 runs (docs/lab.md; the test
// IidNoiseGivesAChangeInAtMostFiveSeriesOfAThousand bounds it). The price: a step must be
// clearer to be found in a long window (a 3-point new level at the end of 40 runs needs a t-test
// p below about 0.001 / 35).
//
// Why min_magnitude. With many runs even a real 1 % shift is significant, though a shift that
// small is usually the machine, not the code. The floor keeps it out: 5 % is the threshold the
// .NET performance lab uses before calling a regression (see docs/references.md,
// dotnet-perf-report).
//
// Cost: O(n^2) time per segment examined (pairwise distances, summed incrementally over the
// splits) and O(n) memory; at most O(n^3) over a whole series, O(n^2 log n) when splits are
// balanced: a history of a few thousand runs is examined in milliseconds.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace contend::lab {

struct change_options {
    double p = 0.001;  // Otava's default: a change must be very unlikely to be noise
    std::size_t min_segment = 3;  // points on each side of a change, so one spike is never one
    double min_magnitude = 0.05;  // |after - before| / before, as a fraction
};

struct change_point {
    std::size_t index;  // the first point of the new segment: series[index] is "after"
    double before_mean;  // mean of the segment that ends at index (bounded by the neighbouring change points)
    double after_mean;  // mean of the segment that starts at index
    // Student's pooled t-test between those two segments, corrected for the choice of the split
    // (step 4 of the header); the value options.p was judged against.
    double p_value;
};

// Every change point of `series`, sorted by index. Empty when there is none.
// Throws std::invalid_argument when a value is NaN or infinite.
// A before_mean of 0 makes any different after_mean an infinite relative change (accepted
// when the t-test agrees); benchmark times are positive, so this only matters for odd input.
std::vector<change_point> find_change_points(std::span<const double> series, const change_options& options = {});

}  // namespace contend::lab
