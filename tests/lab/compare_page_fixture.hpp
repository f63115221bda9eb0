// The inputs the compare and history pages are tested on (compare_page_test.cpp, and through
// compare_page_fixture.cpp the browser test): a 12-run history with a step, a flat benchmark
// and a benchmark whose name is an attack, and Google Benchmark files holding such a name.
// Fixed values only, so every page is the same on every machine.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "store/history.hpp"

namespace contend_test {

// A benchmark name that would run a script if a page let it become markup or end its script
// element, with quotes and an ampersand besides.
inline const std::string hostile_name = "</script><img src=x onerror=alert(1)> \"q\" 'a' & <!--";
// The history refuses '/' in a parameter's value (it separates a row name's parts) but takes
// the rest, and a byte that is not UTF-8, which a JSON file may not hold.
inline const std::string hostile_history_value = "<script>alert(2)<img src=x onerror=alert(1)> \"q\" 'a' & <!-- \xff";

constexpr int page_run_count = 12;
// A little noise of fixed values, so that the series are not perfectly flat.
constexpr double page_noise[page_run_count] = {0.05, -0.03, 0.02, -0.04, 0.01, -0.02,
                                               0.03, -0.05, 0.02, -0.01, 0.04, -0.03};

inline contend::lab::cell_result page_cell(const std::string& contender, double median) {
    contend::lab::cell_result cell;
    cell.suite = "counter";
    cell.contender = contender;
    cell.workers = 2;
    cell.ops_per_worker = 1000;
    cell.repetitions = 5;
    for (const double f : {0.99, 0.995, 1.0, 1.005, 1.01}) cell.ns_per_op.push_back(median * f);
    cell.median_ns = median;
    cell.p25_ns = median * 0.995;
    cell.p75_ns = median * 1.005;
    cell.cpu_ns_per_op = median * 2;
    return cell;
}

// Run i (0-based), labelled r<i+1>. With `stepped`: step_lock goes from 10 to 12 ns at r7 and
// the hostile one (counter/hostile_lock/tag:<hostile_history_value>/workers:2) from 40 to 50 ns; without, both stay
// level. flat_lock never moves. The CPU model and host name carry markup and a stray byte, as a tampered history might.
inline contend::lab::run_result page_run(int i, bool stepped) {
    contend::lab::run_result run;
    run.context.date = "2026-11-" + std::to_string(10 + i) + "T12:00:00Z";
    run.context.label = "r" + std::to_string(i + 1);
    run.context.cpu_model = "Test CPU <b>9000</b> & \"co\"";
    run.context.host_name = "host-<i>" + std::to_string(i) + "</i>\xfe";
    run.context.logical_cpus = 2;
    const bool after = stepped && i >= 6;
    run.cells.push_back(page_cell("step_lock", (after ? 12.0 : 10.0) + page_noise[i]));
    run.cells.push_back(page_cell("flat_lock", 20.0 + page_noise[(i + 5) % page_run_count]));
    // In a parameter's value: the row name keeps it as it is (a contender's name it would tidy).
    auto hostile = page_cell("hostile_lock", (after ? 50.0 : 40.0) + page_noise[(i + 3) % page_run_count]);
    hostile.params = {{"tag", hostile_history_value}};
    run.cells.push_back(hostile);
    return run;
}

// Writes the 12 runs into a new history at `db_path`.
inline void write_page_history(const std::string& db_path, bool stepped) {
    contend::lab::history_store store(db_path);
    for (int i = 0; i < page_run_count; ++i) store.append(page_run(i, stepped));
}

// A Google Benchmark file with 5 iteration rows per benchmark at its ns (+/- 1 %).
inline std::string page_gb_file(const std::vector<std::pair<std::string, double>>& benchmarks) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [name, ns] : benchmarks) {
        for (int i = 0; i < 5; ++i) {
            const double v = ns * (1 + 0.01 * ((i % 3) - 1));
            rows.push_back({{"name", name},
                            {"run_name", name},
                            {"run_type", "iteration"},
                            {"repetitions", 5},
                            {"repetition_index", i},
                            {"iterations", 1000},
                            {"real_time", v},
                            {"cpu_time", v},
                            {"time_unit", "ns"}});
        }
    }
    return nlohmann::json{{"context", {{"date", "2026-11-30T12:00:00+00:00"}, {"num_cpus", 2}}}, {"benchmarks", rows}}
        .dump(2);
}

// Baseline and test: the hostile benchmark 30 % slower, BM_fast 30 % faster, BM_same level,
// and one benchmark on each side only.
inline std::string page_gb_base() {
    return page_gb_file({{hostile_name, 100}, {"BM_fast", 50}, {"BM_same", 10}, {"BM_gone " + hostile_name, 5}});
}
inline std::string page_gb_test() {
    return page_gb_file({{hostile_name, 130}, {"BM_fast", 35}, {"BM_same", 10.02}, {"BM_new", 7}});
}

}  // namespace contend_test
