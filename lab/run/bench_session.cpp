#include "run/bench_session.hpp"

#include <exception>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "store/history.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "store/results_io.hpp"

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

void check_results_outputs(const results_outputs& r, std::vector<named_path> inputs) {
    // With no_history the history is not written, but it is still the user's history: no
    // other output may land on it.
    std::vector<named_path> outputs;
    if (r.json_path) outputs.push_back({"--json", *r.json_path});
    if (!r.csv_path.empty()) outputs.push_back({"--csv", r.csv_path});
    if (r.db_path == "-") throw std::invalid_argument("--db: the history cannot be standard output");
    // A PostgreSQL URI is no file: no output can land on it, and nothing is created under its
    // name; check_appendable connects instead.
    // Nor on the files SQLite keeps beside it (its journal), which it deletes or rewrites.
    if (!r.db_path.empty() && !history_store::is_database_uri(r.db_path)) {
        (r.no_history ? inputs : outputs).push_back({"--db", r.db_path});
        for (const std::string& file : history_store::files_of(r.db_path))
            if (file != r.db_path) inputs.push_back({"--db", file});
    }
    check_distinct(outputs, inputs);
    for (const auto& out : outputs) check_output_path(out.what, out.path);
    if (r.no_history || r.db_path.empty()) return;
    try {
        history_store::check_appendable(r.db_path, r.stop);
    } catch (const interrupted&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument("--db " + history_store::printable(r.db_path) + ": " + e.what());
    }
}

bench_written write_results(const results_outputs& r, const run_result& run, const std::atomic<int>* stop) {
    if (stop) stop_outputs_on(stop);
    bench_written w;
    const auto attempt = [&](const std::string& path, auto&& write_one) {
        try {
            w.wrote.push_back(path + " (" + write_one() + ")");
        } catch (const interrupted& e) {
            w.failed.push_back(path + ": " + e.what());
        } catch (const std::exception& e) {
            w.failed.push_back(e.what());
        }
    };
    if (r.json_path)
        attempt(*r.json_path, [&] {
            write_output_file("--json", *r.json_path, to_json(run));
            return std::string("--json: JSON");
        });
    if (!r.csv_path.empty())
        attempt(r.csv_path, [&] {
            write_output_file("--csv", r.csv_path, to_csv(run));
            return std::string("--csv: CSV");
        });
    if (!r.no_history && !r.db_path.empty())
        attempt(history_store::printable(r.db_path), [&] {
            history_store store(r.db_path, history_access::read_write, stop);
            return "--db: history run " + std::to_string(store.append(run, stop));
        });
    return w;
}

bench_session::bench_session(bench_request request) : request_(std::move(request)) {
    apply_defaults(request_);
    plan_ = plan_suite(request_.options);
    check_results_outputs(outputs());
}

results_outputs bench_session::outputs() const {
    return {request_.json_path, request_.csv_path, request_.db_path, request_.no_history, request_.stop};
}

bench_written bench_session::write(const run_result& run, const std::atomic<int>* stop) const {
    return write_results(outputs(), run, stop);
}

std::string bench_session::summary(const run_result& run, const bench_written& written) const {
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
