// The rate of locked_work::burn on this machine (see workload.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <stdexcept>

#include "measure/workload.hpp"

namespace contend::lab {
namespace {

std::atomic<double> given_rate{0};

double measure_rate() {
    constexpr std::uint64_t probe = 2'000'000;
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        burn_work(probe);
        best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return static_cast<double>(probe) / best;
}

}  // namespace

[[gnu::noinline, gnu::aligned(64)]] void burn_work(std::uint64_t iterations) noexcept {
    locked_work<std::mutex>::burn(iterations);
}

double burn_iterations_per_us() {
    if (const double given = given_rate.load(); given > 0) return given;
    static const double measured = measure_rate();
    return measured;
}

void set_burn_iterations_per_us(double rate) {
    if (!std::isfinite(rate) || rate <= 0) throw std::invalid_argument("the work rate must be a positive number");
    given_rate.store(rate);
}

}  // namespace contend::lab
