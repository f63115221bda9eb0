#include "store/results_outputs.hpp"

#include <exception>
#include <stdexcept>

#include "store/history.hpp"
#include "store/interrupted.hpp"
#include "store/results_io.hpp"

namespace contend::lab {

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

results_written write_results(const results_outputs& r, const run_result& run, const std::atomic<int>* stop) {
    if (stop) stop_outputs_on(stop);
    results_written w;
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

}  // namespace contend::lab
