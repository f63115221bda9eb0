#include "run/bench_session.hpp"

#include <sstream>
#include <stdexcept>
#include <utility>

namespace contend::lab {
namespace {

void apply_defaults(bench_request& r) {
    auto& h = r.options.harness;
    h.min_time_s = (r.quick ? 5 : r.min_time_ms) / 1e3;
    if (r.quick) h.repetitions = 3;
    r.options.run_after_timeout = r.full;
    h.min_repetitions = r.full ? h.repetitions : bench_session::default_min_repetitions;
    h.time_to_stop_s = 20 * h.min_time_s;  // 1 s at the default 50 ms
    h.deadline_s =
        r.deadline_s ? *r.deadline_s : (r.full ? bench_session::full_deadline_s : bench_session::default_deadline_s);
    if (!r.workers.empty()) r.options.workers = r.workers;
    if (r.quick && r.options.workers.empty()) r.options.workers = {1, 2};
    if (r.busy_loops) h.cotenant.busy_loops = *r.busy_loops;
    if (r.busy_nice) {
        h.cotenant.busy_nice = *r.busy_nice;
        if (h.cotenant.busy_loops == 0)
            throw std::invalid_argument("--busy-nice sets the nice level of the busy loops: give --busy-loops N too");
    }
}

}  // namespace

bench_session::bench_session(bench_request request) : request_(std::move(request)) {
    apply_defaults(request_);
    plan_ = plan_suite(request_.options);
    check_results_outputs(outputs());
}

results_outputs bench_session::outputs() const {
    return {request_.json_path, request_.csv_path, request_.db_path, request_.no_history, request_.stop};
}

results_written bench_session::write(const run_result& run, const std::atomic<int>* stop) const {
    return write_results(outputs(), run, stop);
}

std::string bench_session::summary(const run_result& run, const results_written& written) const {
    const auto& h = request_.options.harness;
    std::size_t short_cells = 0, skipped = 0;
    for (const auto& cell : run.cells) {
        short_cells += cell.valid() && cell.repetitions < h.repetitions;
        skipped += cell.status == "skipped";
    }
    std::ostringstream text;
    if (short_cells > 0)
        text << "\n"
             << short_cells << " cells stopped after fewer than " << h.repetitions
             << " repetitions: their p25-p75 spread was within " << h.spread_to_stop * 100
             << " % of the median, or their repetitions had lasted " << h.time_to_stop_s
             << " s in all (--full runs every repetition).";
    if (skipped > 0)
        text << "\n" << skipped << " cells skipped: their contender timed out at fewer workers (--full runs them).";
    text << "\n" << run.valid_cells() << " of " << run.cells.size() << " cells valid";
    if (run.context.run_status != "complete") text << "; the run was " << run.context.run_status;
    text << ". Wrote:\n";
    for (const auto& f : written.wrote) text << "  " << f << "\n";
    if (written.wrote.empty()) text << "  nothing\n";
    return text.str();
}

}  // namespace contend::lab
