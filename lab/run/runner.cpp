#include "run/runner.hpp"

#include "text/utf8.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "measure/machine.hpp"
#include "measure/machine_share.hpp"
#include "measure/rounds.hpp"
#include "run/cell_runner.hpp"
#include "store/output_file.hpp"
#include "text/numbers.hpp"

namespace contend::lab {

std::string self_executable() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : p.string();
}

bench_plan plan_suite(const bench_options& o) {
    bench_plan plan;
    plan.chosen_suite = find_suite(o.suite);
    if (!plan.chosen_suite) throw std::invalid_argument("unknown suite '" + o.suite + "' (see --list)");
    for (const auto& c : plan.chosen_suite->contenders)
        if (glob_match(o.contenders, c.name) || glob_match(o.contenders, c.id())) plan.contenders.push_back(&c);
    if (plan.contenders.empty())
        throw std::invalid_argument("no contender of '" + o.suite + "' matches '" + o.contenders + "'");
    const cotenant_options& co = o.harness.cotenant;
    if (co.busy_loops > 0) {
        // A suite's busy-loop rows carry their own co-tenant; under the run's they would be the
        // quiet rows again, under the same name.
        std::erase_if(plan.contenders, [](const contender* c) { return c->cotenant.busy_loops > 0; });
        if (plan.contenders.empty())
            throw std::invalid_argument("--busy-loops: every contender matching '" + o.contenders +
                                        "' is a busy-loop row of the suite, which runs its own busy loops; pick "
                                        "its quiet rows");
    }

    plan.workers = o.workers.empty() ? plan.chosen_suite->default_workers : o.workers;
    for (std::size_t i = 0; i < plan.workers.size(); ++i) {
        const auto w = plan.workers[i];
        if (w < 1 || w > max_workers)
            throw std::invalid_argument("worker count " + std::to_string(w) + " is outside 1.." +
                                        std::to_string(max_workers));
        if (std::find(plan.workers.begin(), plan.workers.begin() + static_cast<std::ptrdiff_t>(i), w) !=
            plan.workers.begin() + static_cast<std::ptrdiff_t>(i))
            throw std::invalid_argument("worker count " + std::to_string(w) + " is given twice");
    }

    const auto& h = o.harness;
    if (!std::isfinite(h.min_time_s) || h.min_time_s <= 0)
        throw std::invalid_argument("the repetition time must be a positive number of milliseconds");
    if (!std::isfinite(o.wait_quiet_s) || o.wait_quiet_s < 0 || o.wait_quiet_s > 86400)
        throw std::invalid_argument("--wait-quiet: give a number of seconds from 0 to 86400");
    if (!std::isfinite(h.deadline_s) || h.deadline_s <= 0 || h.deadline_s > 1e6)
        throw std::invalid_argument("the deadline must be a positive number of seconds (at most 1e6)");
    // A repetition lasts at least min_time, so one that long would miss its deadline every
    // time: say so now instead of spending a deadline per cell on a run that measures nothing.
    if (h.min_time_s >= h.deadline_s)
        throw std::invalid_argument("the repetition time (" + format_time_per_op(h.min_time_s * 1e9) +
                                    ") must be shorter than the deadline of a repetition (" +
                                    format_time_per_op(h.deadline_s * 1e9) +
                                    "; --deadline sets it): every repetition would miss it");
    if (h.repetitions < 1 || h.repetitions > 1000) throw std::invalid_argument("repetitions must be 1..1000");
    if (h.min_repetitions < 1) throw std::invalid_argument("the minimum number of repetitions must be at least 1");
    if (!std::isfinite(h.spread_to_stop) || h.spread_to_stop < 0 || std::isnan(h.time_to_stop_s) ||
        h.time_to_stop_s < 0)
        throw std::invalid_argument("the spread and the time that end repetitions must be numbers >= 0");
    for (const auto w : plan.workers) (void)placement(h.pin, w);  // throws for a pin this process cannot use
    if (co.one_cpu && h.pin != "none")
        throw std::invalid_argument("--one-cpu puts every thread of a cell on one CPU (" +
                                    std::to_string(one_cpu_choice()) + "): it cannot be combined with --pin " + h.pin);
    check_cotenant(co);
    if (!is_printable_utf8(o.label))
        throw std::invalid_argument("the label must be printable UTF-8 (no control characters)");
    return plan;
}

run_result run_suite(const bench_options& o, const run_hooks& hooks) {
    const bench_plan plan = plan_suite(o);
    const std::string exe = o.executable.empty() ? self_executable() : o.executable;
    // One work-loop rate for every cell of the run (each cell runs in its own process).
    const double burn_rate = burn_iterations_per_us();

    run_result run;
    run.context = read_machine_context(o.label, format_cpu_list(allowed_cpus()));
    run.context.busy_loops = o.harness.cotenant.busy_loops;
    run.context.busy_nice = o.harness.cotenant.busy_loops > 0 ? o.harness.cotenant.busy_nice : 0;
    run.context.one_cpu = o.harness.cotenant.one_cpu ? one_cpu_choice() : -1;
    const std::size_t total = plan.cell_count();
    std::size_t done = 0;
    // Contender ids that timed out, with the fewest workers they did at.
    std::map<std::string, std::int32_t> timed_out_at;
    // One cell, in this process or a child; nothing when the run was stopped meanwhile.
    const auto measure = [&](const contender& c, std::int32_t w,
                             const harness_options& harness) -> std::optional<cell_result> {
        if (o.wait_quiet_s > 0) {
            const std::vector<int> cpus =
                harness.cotenant.one_cpu ? std::vector<int>{one_cpu_choice()} : allowed_cpus();
            const auto waited = wait_until_quiet(cpus, o.wait_quiet_s, hooks.stop);
            if (!waited.quiet && hooks.on_not_quiet && !(hooks.stop && hooks.stop->load() != 0))
                hooks.on_not_quiet(plan.chosen_suite->name + "/" + c.id() + "/workers:" + std::to_string(w),
                                   waited.waited_s, waited.last_share);
        }
        if (o.in_process) return run_cell_in_process(c, plan.chosen_suite->name, w, harness);
        cell_settings s;
        s.suite = plan.chosen_suite->name;
        s.contender = c.id();
        s.workers = w;
        s.harness = harness;
        s.harness.on_repetition = nullptr;
        s.burn_per_us = burn_rate;
        s.parent_pid = static_cast<std::int64_t>(::getpid());
        return run_cell_in_child(exe, s, hooks.stop);
    };
    bool stopped = false;
    for (const auto w : plan.workers) {
        if (stopped) break;
        if (plan.chosen_suite->interleave_rounds || o.interleave) {
            // One repetition of every row per round (measure/rounds.hpp).
            harness_options rounds_harness = o.harness;
            if (plan.chosen_suite->every_round) rounds_harness.min_repetitions = rounds_harness.repetitions;
            // Progress counts the repetitions measured, whatever order a round takes its rows in.
            std::size_t measured = 0;
            auto outcome = run_rounds(
                plan.contenders.size(), rounds_harness,
                [&](std::size_t i, std::int32_t round, const harness_options& one) -> std::optional<cell_result> {
                    if (hooks.stop && hooks.stop->load() != 0) return std::nullopt;
                    const auto* c = plan.contenders[i];
                    const std::size_t rows = plan.contenders.size(), reps = rounds_harness.repetitions;
                    if (hooks.on_cell)
                        hooks.on_cell(done + std::min(rows - 1, measured++ / reps), total,
                                      plan.chosen_suite->name + "/" + c->id() + "/workers:" + std::to_string(w) +
                                          " (round " + std::to_string(round + 1) + ")");
                    return measure(*c, w, one);
                });
            // A row of which no round finished (the run stopped first) is not a result.
            done += outcome.cells.size();
            for (auto& cell : outcome.cells) run.cells.push_back(std::move(cell));
            stopped = outcome.stopped;
            continue;
        }
        for (const auto* c : plan.contenders) {
            if (hooks.stop && hooks.stop->load() != 0) break;
            const std::string row = plan.chosen_suite->name + "/" + c->id() + "/workers:" + std::to_string(w);
            if (hooks.on_cell) hooks.on_cell(done, total, row);
            const auto failed = timed_out_at.find(c->id());
            if (!o.run_after_timeout && failed != timed_out_at.end() && failed->second < w) {
                // More workers only make a lock that could not finish at fewer slower: a FIFO
                // spin lock with more waiters than CPUs waits a scheduler slice per handoff.
                run.cells.push_back(
                    unmeasured_cell(*c, plan.chosen_suite->name, w, o.harness.cotenant, "skipped",
                                    "timed out at " + std::to_string(failed->second) +
                                        " workers earlier in this run, so not run at more (--full runs it)"));
                ++done;
                continue;
            }
            auto cell = measure(*c, w, o.harness);
            if (!cell) {  // stopped: the cell in progress is not a result
                stopped = true;
                break;
            }
            run.cells.push_back(std::move(*cell));
            if (run.cells.back().status == "timed_out") {
                const auto [at, first] = timed_out_at.emplace(c->id(), w);
                if (!first) at->second = std::min(at->second, w);
            }
            ++done;
        }
    }
    if (hooks.stop && hooks.stop->load() != 0 && done < total) {
        const int sig = hooks.stop->load();
        const char* name = sigabbrev_np(sig);
        run.context.run_status = std::string("interrupted by ") +
                                 (name ? "SIG" + std::string(name) : "signal " + std::to_string(sig)) + " after " +
                                 std::to_string(done) + " of " + std::to_string(total) + " cells";
    }
    return run;
}

}  // namespace contend::lab
