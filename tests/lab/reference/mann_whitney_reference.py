#!/usr/bin/env python3
"""Reference values for tests/lab/significance_test.cpp, computed independently of the C++ code.

Standard library only, and by other methods than lab/analyze/significance.cpp uses:
  - Mann-Whitney U, exact (at most EXACT_LIMIT values in all, ties or not): every assignment
    of the pooled values' midranks to the first sample is enumerated (itertools.combinations)
    when there are at most 10,000,000 of them; above that, without ties, the null distribution
    is read off the Gaussian binomial coefficient [N choose n1]_q, whose coefficients count
    the arrangements by U, built by polynomial multiplication and exact division in integers.
    The two-sided p counts the arrangements whose U is at least as far from n1 n2 / 2 as the
    observed one. (The C++ code uses dynamic programming over the tie groups instead.)
  - Mann-Whitney U, asymptotic: the normal approximation with the tie-corrected variance and
    the continuity correction, as scipy.stats.mannwhitneyu(method="asymptotic"), p by math.erfc.
  - Welch's t-test: p by integrating Student's t density with Simpson's rule (the C++ code uses
    the incomplete beta function's continued fraction).

Run: python3 tests/lab/reference/mann_whitney_reference.py
It prints the rows of the tables in the test; the samples are the ones written below.
"""
import itertools
import math

EXACT_LIMIT = 50  # at most this many values in all: exact, ties or not, as in significance.hpp


def midranks(pooled):
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def u_distribution_by_enumeration(n1, n2):
    """counts[u]: how many choices of n1 of the ranks 1..N give U = u (no ties)."""
    counts = [0] * (n1 * n2 + 1)
    for chosen in itertools.combinations(range(1, n1 + n2 + 1), n1):
        counts[sum(chosen) - n1 * (n1 + 1) // 2] += 1
    return counts


def poly_mul(p, q):
    out = [0] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        if a:
            for j, b in enumerate(q):
                out[i + j] += a * b
    return out


def poly_div_exact(p, q):
    """p / q for integer polynomials where q divides p exactly (q[0] == 1)."""
    p = list(p)
    out = [0] * (len(p) - len(q) + 1)
    for i in range(len(out)):
        c = p[i]
        out[i] = c
        if c:
            for j, b in enumerate(q):
                p[i + j] -= c * b
    assert all(v == 0 for v in p[len(out):]), "division was not exact"
    return out


def u_distribution_by_gaussian_binomial(n1, n2):
    """[n1 + n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2 + i)) / (1 - q^i)."""
    numerator = [1]
    denominator = [1]
    for i in range(1, n1 + 1):
        numerator = poly_mul(numerator, [1] + [0] * (n2 + i - 1) + [-1])
        denominator = poly_mul(denominator, [1] + [0] * (i - 1) + [-1])
    return poly_div_exact(numerator, denominator)


def mann_whitney(a, b):
    n1, n2 = len(a), len(b)
    ranks, ties = midranks(a + b)
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u_far = max(u1, n1 * n2 - u1)
    if n1 + n2 <= EXACT_LIMIT:
        total = math.comb(n1 + n2, n1)
        centre = n1 * n2  # twice the mean of U
        far = abs(2 * u1 - centre)
        if total <= 10_000_000:
            # Each choice of n1 of the pooled midranks, with the tie groups as observed.
            tail = 0
            for chosen in itertools.combinations(ranks, n1):
                u = sum(chosen) - n1 * (n1 + 1) / 2
                if abs(2 * u - centre) >= far:
                    tail += 1
            return u1, min(1.0, tail / total), True
        assert max(ties) == 1, "too many arrangements to enumerate with ties"
        counts = u_distribution_by_gaussian_binomial(n1, n2)
        assert sum(counts) == total
        tail = sum(c for u, c in enumerate(counts) if abs(2 * u - centre) >= far)
        return u1, min(1.0, tail / total), True
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties)
    variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return u1, 1.0, False
    z = (u_far - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return u1, min(1.0, math.erfc(z / math.sqrt(2))), False


def student_t_density(x, df):
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def student_two_sided_p(t, df, intervals=200_000):
    """1 - 2 * integral_0^|t| f(x) dx, by Simpson's rule."""
    t = abs(t)
    h = t / intervals
    total = student_t_density(0, df) + student_t_density(t, df)
    for i in range(1, intervals):
        total += (4 if i % 2 else 2) * student_t_density(i * h, df)
    return 1 - 2 * total * h / 3


def welch(a, b):
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    sa, sb = va / na, vb / nb
    t = (ma - mb) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa * sa / (na - 1) + sb * sb / (nb - 1))
    return t, df, student_two_sided_p(t, df)


U_CASES = {
    "seven_vs_nine": (
        [10.94, 11.457, 10.608, 11.775, 10.82, 11.433, 10.53],
        [10.99, 12.125, 11.497, 11.332, 11.956, 12.426, 11.119, 11.908, 11.539],
    ),
    "ten_vs_twelve": (
        [107.314, 109.997, 102.064, 107.526, 104.685, 107.09, 108.719, 101.484, 102.126, 104.119],
        [102.585, 105.494, 106.166, 103.242, 109.435, 109.628, 105.903, 105.453, 104.011, 106.268, 105.165, 104.141],
    ),
    "twenty_vs_twenty": (
        [58.678, 52.291, 50.405, 52.252, 50.194, 58.654, 58.44, 53.192, 59.603, 58.044,
         54.21, 51.12, 58.513, 56.067, 52.306, 59.951, 53.657, 52.031, 54.933, 58.365],
        [52.414, 54.873, 54.373, 60.401, 60.992, 55.65, 52.698, 57.956, 59.612, 54.318,
         53.069, 57.866, 51.98, 59.436, 51.043, 52.507, 58.038, 54.503, 51.814, 59.03],
    ),
    "twenty_five_vs_thirty_with_ties": (
        [1.239, 1.461, 1.264, 1.524, 1.436, 1.972, 1.201, 1.071, 1.303, 1.136, 1.662, 1.25, 1.101,
         1.219, 1.195, 1.389, 1.515, 1.223, 1.355, 1.703, 1.8, 1.579, 1.932, 1.544, 1.936],
        [1.82, 1.733, 1.219, 1.156, 1.225, 1.93, 2.007, 1.715, 1.188, 1.604, 1.336, 1.684, 1.832, 1.262,
         1.225, 1.204, 2.044, 1.662, 2.095, 1.732, 1.695, 1.66, 1.644, 1.415, 1.223, 1.129, 1.161,
         1.735, 1.725, 1.72],
    ),
    "many_ties": (
        [6, 6, 6, 8, 6, 8, 7, 7, 8, 8, 6, 8],
        [9, 9, 7, 7, 7, 8, 9, 7, 7, 8, 9, 6, 6, 8],
    ),
    "separated_three_vs_three": ([1, 2, 3], [4, 5, 6]),
    "tied_three_vs_tied_three": ([10, 10, 10], [20, 20, 20]),
    "tied_five_vs_tied_five": ([7, 7, 7, 7, 7], [9, 9, 9, 9, 9]),
    "ties_across_both": ([1, 2, 2, 3, 3, 3], [3, 4, 4, 5, 2]),
    "one_vs_one": ([1.5], [2.5]),
}

WELCH_CASES = {
    "r_t_test_help_example": (list(range(1, 11)), list(range(7, 21)) + [200]),
    "seven_vs_nine": U_CASES["seven_vs_nine"],
    "ten_vs_twelve": U_CASES["ten_vs_twelve"],
    "unequal_spread": ([100.0, 100.5, 99.5, 100.2], [103.0, 110.0, 96.0, 108.0, 101.0, 99.0]),
}

if __name__ == "__main__":
    print("// Mann-Whitney U: name, u, p_value, exact")
    for name, (a, b) in U_CASES.items():
        u, p, exact = mann_whitney(a, b)
        print(f'{{"{name}", {u!r}, {p!r}, {"true" if exact else "false"}}},')
    print("// Welch: name, t, df, p_value")
    for name, (a, b) in WELCH_CASES.items():
        t, df, p = welch(a, b)
        print(f'{{"{name}", {t!r}, {df!r}, {p!r}}},')
