#include "measure/rounds.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "results/statistics.hpp"

namespace contend::lab {
namespace {

// The median of the values that are numbers, or NaN when none is.
double median_of_numbers(const std::vector<double>& values) {
    std::vector<double> numbers;
    for (double v : values)
        if (!std::isnan(v)) numbers.push_back(v);
    return numbers.empty() ? not_measured : median(numbers);
}

}  // namespace

cell_result merge_rounds(const std::vector<cell_result>& rounds) {
    if (rounds.empty()) throw std::invalid_argument("merge_rounds: no round");
    cell_result cell = rounds.front();  // names, parameters, workers, placement
    cell.ns_per_op.clear();
    cell.repetitions = 0;
    cell.metrics.clear();
    std::vector<double> cpu, min_share, max_share;
    // Others' share of the CPUs: the rounds' mean (each round is one repetition of about the
    // same length), and the most runnable threads of others any round saw; NaN when no
    // round measured them.
    double others_sum = 0, others_rounds = 0, most_runnable = not_measured;
    std::vector<std::pair<std::string, std::vector<double>>> metrics;
    for (const auto& round : rounds) {
        if (!round.valid()) {
            cell.status = round.status;
            cell.detail = round.detail;
            cell.metrics = round.metrics;
            break;
        }
        cell.ns_per_op.insert(cell.ns_per_op.end(), round.ns_per_op.begin(), round.ns_per_op.end());
        cell.repetitions += round.repetitions;
        cpu.push_back(round.cpu_ns_per_op);
        if (std::isfinite(round.others_cpu_share)) {
            others_sum += round.others_cpu_share;
            others_rounds += 1;
        }
        if (std::isfinite(round.others_runnable))
            most_runnable =
                std::isfinite(most_runnable) ? std::max(most_runnable, round.others_runnable) : round.others_runnable;
        min_share.push_back(round.min_share);
        max_share.push_back(round.max_share);
        for (const auto& [name, value] : round.metrics) {
            auto it = metrics.begin();
            while (it != metrics.end() && it->first != name) ++it;
            if (it == metrics.end()) it = metrics.insert(metrics.end(), {name, {}});
            it->second.push_back(value);
        }
    }
    if (cell.ns_per_op.empty()) {
        cell.median_ns = cell.p25_ns = cell.p75_ns = 0;
        cell.cpu_ns_per_op = not_measured;
        if (cell.valid()) {
            cell.status = "no_repetitions";
            cell.detail = "no round completed a repetition";
        }
        return cell;
    }
    summarize_samples(cell);
    cell.cpu_ns_per_op = median_of_numbers(cpu);
    cell.others_cpu_share = others_rounds > 0 ? others_sum / others_rounds : not_measured;
    cell.others_runnable = most_runnable;
    // Fairness is reported only when every round's was (harness.hpp, fairness_needed_ns).
    cell.fairness_reason.clear();
    for (const auto& round : rounds) {
        if (!round.valid()) break;
        if (cell.fairness_reason.empty()) cell.fairness_reason = round.fairness_reason;
    }
    cell.min_share = cell.fairness_reason.empty() ? median_of_numbers(min_share) : not_measured;
    cell.max_share = cell.fairness_reason.empty() ? median_of_numbers(max_share) : not_measured;
    if (cell.valid())
        for (const auto& [name, values] : metrics) cell.metrics.emplace_back(name, median_of_numbers(values));
    return cell;
}

rounds_outcome run_rounds(std::size_t rows, const harness_options& harness,
                          const std::function<std::optional<cell_result>(std::size_t row, std::int32_t round,
                                                                         const harness_options& one)>& measure) {
    rounds_outcome out;
    std::vector<std::vector<cell_result>> rounds(rows);
    std::vector<bool> ended(rows, false);
    harness_options one = harness;
    one.repetitions = one.min_repetitions = 1;
    const auto began = std::chrono::steady_clock::now();
    for (std::int32_t r = 0; r < harness.repetitions && !out.stopped; ++r) {
        one.round = r;
        // Forward in even rounds, backward in odd ones (A B C, C B A: ABBA counterbalancing),
        // so that a row's place in a round (first after another program's rows, or last
        // before a long one) and a drift across the round fall on each row alike in pairs of
        // rounds, instead of on the same row every round.
        for (std::size_t step = 0; step < rows; ++step) {
            const std::size_t i = r % 2 == 0 ? step : rows - 1 - step;
            if (ended[i]) continue;
            auto cell = measure(i, r, one);
            if (!cell) {
                out.stopped = true;
                break;
            }
            if (!cell->valid()) ended[i] = true;
            rounds[i].push_back(std::move(*cell));
        }
        const std::int32_t finished = r + 1;
        if (out.stopped || finished < harness.min_repetitions || finished >= harness.repetitions) continue;
        bool all_settled = true;
        for (std::size_t i = 0; i < rows && all_settled; ++i) {
            if (ended[i]) continue;
            std::vector<double> samples;
            for (const auto& round : rounds[i])
                samples.insert(samples.end(), round.ns_per_op.begin(), round.ns_per_op.end());
            all_settled = settled(samples, harness.spread_to_stop);
        }
        const double per_row_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() / static_cast<double>(rows);
        if (all_settled || per_row_s >= harness.time_to_stop_s) break;
    }
    for (auto& r : rounds)
        if (!r.empty()) out.cells.push_back(merge_rounds(r));
    return out;
}

}  // namespace contend::lab
