#include "pool/hill_climbing.hpp"

#include <algorithm>

namespace contend::internal {

void hill_climber::reset() noexcept {
    probing_ = false;
    discard_next_ = true;
    rest_ = 0;
}

hill_climber::decision hill_climber::update(std::size_t goal, double seconds, std::uint64_t completions,
                                            bool work_waiting, std::size_t min_threads, std::size_t max_threads,
                                            cpu_view cpu) {
    const double throughput = seconds > 0 ? static_cast<double>(completions) / seconds : 0;
    since_last_move_ += seconds;
    decision d{std::clamp(goal, min_threads, max_threads), move::none, throughput};
    if (d.goal != goal) {  // limits moved under us
        reset();
        return d;
    }
    if (discard_next_) {
        discard_next_ = false;
        return d;
    }
    if (probing_) {
        probing_ = false;
        const bool went_up = goal > from_goal_;
        const bool kept =
            went_up ? throughput > from_throughput_ * (1 + min_gain) : throughput >= from_throughput_ * (1 - min_gain);
        if (kept) {
            losses_ = 0;
            d.what = move::keep;
            return d;
        }
        // Back to where we were; rest longer after each consecutive loss.
        d.goal = from_goal_;
        d.what = move::revert;
        losses_ = std::min(losses_ + 1, 5);
        rest_ = std::min(cooldown_samples << losses_, max_cooldown_samples);
        discard_next_ = true;
        since_last_move_ = 0;
        return d;
    }
    if (rest_ > 0) {
        --rest_;
        return d;
    }
    if (since_last_move_ < 1.0 / max_change_per_second) return d;
    // CPU-bound at or above the CPU count: another thread would only share the same CPUs.
    const bool cpu_bound = cpu.known() && goal >= cpu.cpus && cpu.blocked_workers < min_blocked_workers;
    std::size_t target = goal;
    if (work_waiting && goal < max_threads && !cpu_bound) target = goal + 1;
    else if ((!work_waiting || (cpu_bound && goal > cpu.cpus)) && goal > min_threads) target = goal - 1;
    if (target == goal) return d;
    probing_ = true;
    discard_next_ = true;
    from_goal_ = goal;
    from_throughput_ = throughput;
    since_last_move_ = 0;
    d.goal = target;
    d.what = target > goal ? move::probe_up : move::probe_down;
    return d;
}

}  // namespace contend::internal
