#include "measure/harness.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "measure/machine_share.hpp"
#include "results/statistics.hpp"

namespace contend::lab {
namespace {

using steady = std::chrono::steady_clock;

// Opened once; its waiters sleep in the kernel until then, with no spin and no yield first.
class start_gate {
public:
    void wait() {
        while (word_.load(std::memory_order_acquire) == 0)
            ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
    }
    void open() {
        word_.store(1, std::memory_order_release);
        ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr,
                  0);
    }

private:
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
    std::atomic<std::uint32_t> word_{0};
};

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Milliseconds as a reader wants them: "37.5", "96", "3".
std::string ms_text(double ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", ns / 1e6);
    return text;
}

}  // namespace

repetition_result run_repetition(workload& w, std::int32_t workers, std::uint64_t ops_per_worker,
                                 const std::vector<std::vector<int>>& cpus, double deadline_s, double fairness_at_s) {
    w.reset();
    repetition_result result;
    progress_counters progress(static_cast<std::size_t>(workers));
    for (auto& p : progress) p.value.store(0);
    std::atomic<bool> stop{false};
    std::atomic<bool> first_finished{false};
    std::vector<std::uint64_t> snapshot(static_cast<std::size_t>(workers), 0);
    std::vector<std::uint64_t> at_time(static_cast<std::size_t>(workers), 0);
    bool read_at_time = false;
    // Whether each worker has begun to run since the gate opened, and, at each reading of the
    // progress, when it was taken and how many had not: the fairness rule's evidence.
    const auto started = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(workers));
    const auto not_started = [&] {
        std::int32_t n = 0;
        for (std::int32_t k = 0; k < workers; ++k) n += started[static_cast<std::size_t>(k)].load() ? 0 : 1;
        return n;
    };
    double snapshot_ns = 0, at_time_ns = 0;
    std::int32_t snapshot_not_started = 0, at_time_not_started = 0;
    steady::time_point t0;
    std::vector<std::uint64_t> completed(static_cast<std::size_t>(workers), 0);
    std::vector<double> cpu(static_cast<std::size_t>(workers), 0);
    std::vector<std::string> pin_errors(static_cast<std::size_t>(workers));

    std::mutex m;
    std::condition_variable cv;
    std::int32_t arrived = 0, finished = 0;
    // The start gate: a futex word that its waiters sleep on, not the condition variable,
    // whose waiters must each retake its mutex on the way out (64 workers left that one at a
    // time, over milliseconds of the timed interval). Not std::atomic::wait either: libstdc++
    // yields 4 times before it sleeps, and beside a busy loop on the worker's CPU each yield
    // handed the loop a scheduler slice, into the timed interval (the pipe's one-CPU row
    // beside a nice-0 loop: 32 to 35 us a chunk, 1.8 without).
    start_gate open;
    steady::time_point last_finish{};

    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(workers));
    for (std::int32_t i = 0; i < workers; ++i) {
        threads.emplace_back([&, i] {
            const auto idx = static_cast<std::size_t>(i);
            pin_errors[idx] = pin_self(cpus.empty() ? std::vector<int>{} : cpus[idx]);
            {
                std::lock_guard lk(m);
                ++arrived;
                cv.notify_all();
            }
            open.wait();
            started[idx].store(true);
            const double cpu0 = thread_cpu_ns();
            completed[idx] = w.run(i, ops_per_worker, stop, progress);
            cpu[idx] = thread_cpu_ns() - cpu0;
            const auto now = steady::now();
            if (!first_finished.exchange(true)) {
                for (std::size_t k = 0; k < snapshot.size(); ++k)
                    snapshot[k] = progress[k].value.load(std::memory_order_relaxed);
                snapshot[idx] = completed[idx];
                snapshot_ns = std::chrono::duration<double, std::nano>(now - t0).count();
                snapshot_not_started = not_started();
            }
            std::lock_guard lk(m);
            last_finish = std::max(last_finish, now);
            ++finished;
            cv.notify_all();
        });
    }
    {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return arrived == workers; });
    }
    t0 = steady::now();
    open.open();
    {
        std::unique_lock lk(m);
        const auto after = [&](double s) {
            return t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(s));
        };
        const auto deadline = after(deadline_s);
        // The fairness reading: the workers' published progress at fairness_at_s, if some
        // still run then; the snapshot of the first finish otherwise.
        if (fairness_at_s > 0 && fairness_at_s < deadline_s &&
            !cv.wait_until(lk, after(fairness_at_s), [&] { return finished == workers; })) {
            for (std::size_t k = 0; k < at_time.size(); ++k)
                at_time[k] = progress[k].value.load(std::memory_order_relaxed);
            at_time_ns = std::chrono::duration<double, std::nano>(steady::now() - t0).count();
            at_time_not_started = not_started();
            read_at_time = true;
        }
        if (!cv.wait_until(lk, deadline, [&] { return finished == workers; })) {
            result.timed_out = true;
            stop.store(true);
            cv.wait(lk, [&] { return finished == workers; });  // workers poll: they come back
        }
    }
    for (auto& t : threads) t.join();

    result.wall_ns = std::chrono::duration<double, std::nano>(last_finish - t0).count();
    for (std::size_t k = 0; k < completed.size(); ++k) {
        result.completed += completed[k];
        result.cpu_ns += cpu[k];
        if (!pin_errors[k].empty() && result.affinity_ok) {
            result.affinity_ok = false;
            result.affinity_detail = "worker " + std::to_string(k) + ": " + pin_errors[k];
        }
    }
    result.check = w.check(completed);
    result.per_worker = completed;
    result.progress_for_fairness = read_at_time ? std::move(at_time) : std::move(snapshot);
    result.fairness_read_ns = read_at_time ? at_time_ns : snapshot_ns;
    result.not_started_at_reading = read_at_time ? at_time_not_started : snapshot_not_started;
    return result;
}

double fairness_needed_ns(std::int32_t workers, std::size_t cpus) {
    const auto per_cpu = (static_cast<std::size_t>(std::max(workers, 1)) + std::max<std::size_t>(cpus, 1) - 1) /
                         std::max<std::size_t>(cpus, 1);
    return static_cast<double>(per_cpu) * scheduler_slice_ns;
}

void fairness_evidence::add(double read_ns, std::int32_t not_started) {
    earliest_ns = repetitions++ == 0 ? read_ns : std::min(earliest_ns, read_ns);
    if (!(read_ns >= needed_ns)) {
        ++read_early;
    } else if (not_started > 0) {
        ++with_unstarted;
        most_unstarted = std::max(most_unstarted, not_started);
        unstarted_read_ns = read_ns;
    }
}

std::string fairness_evidence::reason(std::int32_t workers, std::size_t cpus) const {
    if (repetitions == 0) return "no repetition read the shares";
    if (read_early > 0) {
        const auto per_cpu = static_cast<long long>(std::llround(needed_ns / scheduler_slice_ns));
        const std::string need = std::to_string(workers) + " workers on " + std::to_string(cpus) +
                                 (cpus == 1 ? " CPU" : " CPUs") + " need the shares read at least " +
                                 ms_text(needed_ns) + " ms into a repetition (" + std::to_string(per_cpu) +
                                 " a CPU x a " + ms_text(scheduler_slice_ns) +
                                 " ms scheduler slice) for the scheduler to have run each";
        if (!(planned_ns >= needed_ns)) {
            const auto min_time_ms = static_cast<long long>(std::ceil(needed_ns / fairness_window / 1e6));
            return need + ", and these were read " + ms_text(planned_ns) +
                   " ms in (3/4 of --min-time): a worker at 0 may only have waited for a CPU (--min-time " +
                   std::to_string(min_time_ms) + " or more measures them)";
        }
        return need + ", and in " + std::to_string(read_early) + " of " + std::to_string(repetitions) +
               " repetitions every worker finished before that, the shares read at the first finish (" +
               ms_text(earliest_ns) +
               " ms in): a worker at 0 may only have waited for a CPU (a longer --min-time helps)";
    }
    if (with_unstarted > 0)
        return "in " + std::to_string(with_unstarted) + " of " + std::to_string(repetitions) + " repetitions, " +
               std::to_string(most_unstarted) + " of the " + std::to_string(workers) +
               " workers had not run yet when the shares were read (" + ms_text(unstarted_read_ns) +
               " ms in): the scheduler had not run every worker";
    return "";
}

std::uint64_t next_calibration_ops(std::uint64_t ops, double wall_ns, double min_time_ns, bool may_shrink) {
    if (ops >= (std::uint64_t{1} << 40)) return 0;
    if (wall_ns >= min_time_ns) {
        if (!may_shrink || wall_ns <= calibration_overshoot * min_time_ns || ops <= 64) return 0;
        // Far too long: the work did not scale linearly (a lock that convoys only once the
        // run is long enough for its waiters to be descheduled). Aim at the minimum again.
        const auto shrunk = static_cast<std::uint64_t>(static_cast<double>(ops) * min_time_ns * 1.2 / wall_ns);
        return std::max<std::uint64_t>(shrunk, 64);
    }
    const double grow = wall_ns > 0 ? min_time_ns * 1.2 / wall_ns : 16.0;
    return static_cast<std::uint64_t>(static_cast<double>(ops) * std::clamp(grow, 2.0, 16.0));
}

bool calibration_step_suspect(double previous_ns_per_op, double ns_per_op) {
    return !(previous_ns_per_op > 0) || ns_per_op > calibration_stall_factor * previous_ns_per_op;
}

cell_result new_cell(const contender& c, const std::string& suite, std::int32_t workers) {
    cell_result cell;
    cell.suite = suite;
    cell.contender = c.name;
    cell.params = c.params;
    cell.workers = workers;
    cell.operation = c.operation;
    return cell;
}

cell_result unmeasured_cell(const contender& c, const std::string& suite, std::int32_t workers,
                            const cotenant_options& run, std::string status, std::string detail) {
    cell_result cell = new_cell(c, suite, workers);
    const param_list added = added_cotenant_params(c.params, run);
    cell.params.insert(cell.params.end(), added.begin(), added.end());
    cell.status = std::move(status);
    cell.detail = std::move(detail);
    return cell;
}

void summarize_samples(cell_result& cell) {
    cell.median_ns = median(cell.ns_per_op);
    cell.p25_ns = quantile(cell.ns_per_op, 0.25);
    cell.p75_ns = quantile(cell.ns_per_op, 0.75);
    cell.modal = find_modes(cell.ns_per_op).modal;
}

namespace {

// Calibrates and runs the cell of a contender with a workload.
cell_result measure_workload_cell(const contender& c, const std::string& suite, std::int32_t workers,
                                  const harness_options& options) {
    cell_result cell = new_cell(c, suite, workers);
    cell.has_fairness = c.is_lock && workers > 1;
    std::vector<std::vector<int>> cpus;
    try {
        cpus = placement(options.pin, workers);  // run_suite refuses a bad pin before any cell
    } catch (const std::invalid_argument& e) {
        cell.status = "affinity_mismatch";
        cell.detail = e.what();
        return cell;
    }
    std::vector<int> used;
    for (const auto& set : cpus) used.insert(used.end(), set.begin(), set.end());
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    cell.affinity = format_cpu_list(used);
    const std::size_t worker_cpus = used.empty() ? allowed_cpus().size() : used.size();
    cell.oversubscribed = workers > static_cast<std::int32_t>(worker_cpus);

    auto workload = c.make();
    auto check = [&](const repetition_result& r) {
        if (!r.affinity_ok) {
            cell.status = "affinity_mismatch";
            cell.detail = r.affinity_detail;
        } else if (r.timed_out) {
            cell.status = "timed_out";
            char seconds[32];
            std::snprintf(seconds, sizeof seconds, "%g", options.deadline_s);
            cell.detail = std::string("a repetition missed its ") + seconds + " s deadline";
        } else if (!r.check.ok()) {
            cell.status = r.check.status;
            cell.detail = r.check.detail;
        }
        return cell.valid();
    };

    // Calibration: grow the work until one repetition lasts min_time (untimed warm-ups).
    std::uint64_t ops = 64;
    double previous_ns_per_op = 0;  // the step before's wall time per operation
    bool repeated = false;
    for (int shrinks = 0;;) {
        const auto r = run_repetition(*workload, workers, ops, cpus, options.deadline_s, 0);
        if (options.on_repetition) options.on_repetition();
        if (!check(r)) return cell;
        std::uint64_t next =
            next_calibration_ops(ops, r.wall_ns, options.min_time_s * 1e9, shrinks < max_calibration_shrinks);
        const double ns_per_op = r.wall_ns / static_cast<double>(ops);
        if (next == 0 && !repeated && calibration_step_suspect(previous_ns_per_op, ns_per_op)) {
            repeated = true;
            next = ops;
        }
        previous_ns_per_op = ns_per_op;
        if (next == 0) break;
        if (next < ops) ++shrinks;
        ops = next;
    }
    cell.ops_per_worker = ops;

    std::vector<double> cpu_per_op, min_shares, max_shares;
    fairness_evidence fairness{fairness_needed_ns(workers, worker_cpus), fairness_window * options.min_time_s * 1e9};
    std::vector<std::pair<std::string, std::vector<double>>> metric_samples;  // per name, per repetition
    double timed_ns = 0;
    machine_share_meter meter(allowed_cpus(), options.own_cotenants);
    meter.start();
    for (std::int32_t rep = 0; rep < options.repetitions; ++rep) {
        const auto r = run_repetition(*workload, workers, ops, cpus, options.deadline_s,
                                      cell.has_fairness ? fairness_window * options.min_time_s : 0);
        if (options.on_repetition) options.on_repetition();
        if (!check(r)) return cell;
        const double total = static_cast<double>(r.completed);
        cell.ns_per_op.push_back(r.wall_ns / total);
        const repetition_facts facts{r.wall_ns, r.cpu_ns, r.completed, &r.per_worker};
        cpu_per_op.push_back(workload->cpu_ns(facts) / total);
        metric_list metrics;
        workload->measure(facts, metrics);
        for (auto& [name, value] : metrics) {
            auto it = std::find_if(metric_samples.begin(), metric_samples.end(),
                                   [&](const auto& m) { return m.first == name; });
            if (it == metric_samples.end()) {
                check_metric_name(name);  // a workload's mistake, found by the first run of it
                it = metric_samples.insert(metric_samples.end(), {name, {}});
            }
            it->second.push_back(value);
        }
        if (cell.has_fairness) {
            double sum = 0;
            for (auto v : r.progress_for_fairness) sum += static_cast<double>(v);
            const double mean = sum / static_cast<double>(workers);
            const auto [lo, hi] = std::minmax_element(r.progress_for_fairness.begin(), r.progress_for_fairness.end());
            min_shares.push_back(mean > 0 ? static_cast<double>(*lo) / mean : 0);
            max_shares.push_back(mean > 0 ? static_cast<double>(*hi) / mean : 0);
            fairness.add(r.fairness_read_ns, r.not_started_at_reading);
        }
        ++cell.repetitions;
        timed_ns += r.wall_ns;
        // Enough, after min_repetitions, once the spread is small (the quartiles of the
        // samples so far lie within spread_to_stop of their median) or the repetitions have
        // lasted time_to_stop_s in all (a lock whose runs convoy can take a second each).
        if (cell.repetitions >= options.min_repetitions && cell.repetitions < options.repetitions) {
            if (settled(cell.ns_per_op, options.spread_to_stop) || timed_ns >= options.time_to_stop_s * 1e9) break;
        }
    }
    if (cell.repetitions == 0) {
        cell.status = "no_repetitions";
        cell.detail = "--reps 0";
        return cell;
    }
    summarize_samples(cell);
    if (const auto sample = meter.stop()) {
        machine_share_total others;
        others.add(*sample);
        cell.others_cpu_share = others.share();
        cell.others_runnable = others.runnable();
    }
    cell.cpu_ns_per_op = median(cpu_per_op);
    for (const auto& [name, samples] : metric_samples) cell.metrics.emplace_back(name, median(samples));
    if (cell.has_fairness) {
        cell.fairness_reason = fairness.reason(workers, worker_cpus);
        if (cell.fairness_reason.empty()) {
            cell.min_share = median(min_shares);
            cell.max_share = median(max_shares);
        }
    }
    return cell;
}

// When busy loops end by themselves, should nothing kill them: after the longest a cell can
// last (every calibration step and every repetition at its deadline), with a margin.
double busy_loop_bound_s(const harness_options& o) { return (40.0 + std::max(o.repetitions, 1)) * o.deadline_s + 10; }

}  // namespace

cell_result run_cell_in_process(const contender& c, const std::string& suite, std::int32_t workers,
                                const harness_options& options) {
    const cotenant_options co = effective_cotenant(c.cotenant, options.cotenant);
    const param_list added = added_cotenant_params(c.params, options.cotenant);
    const auto refused = [&](std::string status, std::string detail) {
        return unmeasured_cell(c, suite, workers, options.cotenant, std::move(status), std::move(detail));
    };
    if (co.one_cpu && options.pin != "none")
        return refused("affinity_mismatch", "--one-cpu puts every thread on one CPU: it takes no --pin");
    // One CPU first, so that the busy loops, forked after, share it with the cell.
    std::optional<one_cpu_scope> cpu;
    std::optional<busy_loops> busy;
    try {
        if (co.one_cpu) cpu.emplace();
        if (co.busy_loops > 0) busy.emplace(co.busy_loops, co.busy_nice, busy_loop_bound_s(options));
    } catch (const std::exception& e) {
        return refused("cotenant_failed", e.what());
    }
    harness_options with_own = options;
    if (busy) with_own.own_cotenants.insert(with_own.own_cotenants.end(), busy->pids().begin(), busy->pids().end());
    // A row that measures itself (a server under wrk, a program) is measured whole: one
    // sample from its start to its end, calibration included.
    machine_share_meter whole(allowed_cpus(), with_own.own_cotenants);
    whole.start();
    cell_result cell = c.measure_cell ? c.measure_cell(c, suite, workers, with_own)
                                      : measure_workload_cell(c, suite, workers, with_own);
    if (const auto sample = whole.stop(); sample && std::isnan(cell.others_cpu_share) && cell.valid()) {
        machine_share_total total;
        total.add(*sample);
        cell.others_cpu_share = total.share();
        cell.others_runnable = total.runnable();
    }
    cell.params.insert(cell.params.end(), added.begin(), added.end());
    if (cpu && cell.affinity.empty()) cell.affinity = std::to_string(cpu->cpu());
    return cell;
}

}  // namespace contend::lab
