// The hold suite: the counter suite's locks with 0, 1, 20 and 200 us of work inside the
// lock, where a spin lock must lose to a parking one.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "suites/locks.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {

// Iterations of locked_work::burn per microsecond on this machine, measured once per
// process, unless CONTEND_LAB_BURN_PER_US gives it: `contend bench` measures it once and
// passes it to every cell's process, so that every lock of a run burns the same work (a
// rate measured per cell would differ by a few percent from cell to cell, which is the
// size of the differences the hold suite looks for).
double burn_iterations_per_us() {
    static const double rate = [] {
        if (const char* given = std::getenv("CONTEND_LAB_BURN_PER_US")) {
            char* end = nullptr;
            const double r = std::strtod(given, &end);
            if (end != given && r > 0) return r;
        }
        constexpr std::uint64_t probe = 2'000'000;
        double best = 1e300;
        for (int i = 0; i < 3; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            locked_work<std::mutex>::burn(probe);
            best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        return static_cast<double>(probe) / best;
    }();
    return rate;
}

suite make_hold_suite() {
    suite s{"hold",
            "the lock contenders with 0, 1, 20 and 200 us of work inside the lock: throughput and CPU per "
            "acquisition, where a spin lock must lose to a parking one",
            {},
            {4}};
    append_lock_contenders(s.contenders, true);
    return s;
}

}  // namespace contend::lab
