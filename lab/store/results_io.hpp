// Writing and reading results: the JSON shape of docs/lab.md, "The JSON results" (readable by Google
// Benchmark's tools: rows with name, run_type "aggregate", aggregate_name "median",
// real_time, cpu_time, time_unit "ns", plus the lab's fields and each workload metric as a
// number of its own, the way Google Benchmark writes user counters), CSV, and the table on
// stdout. Every field comes from the tables in results.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "results/results.hpp"

namespace contend::lab {

nlohmann::json context_to_json(const machine_context& c);
nlohmann::json cell_to_json(const cell_result& cell);

// Reading back what the functions above and to_json wrote. Each throws std::runtime_error
// naming the missing or mistyped field (and, for a row of a file, its index). A figure
// written as null reads back as NaN: JSON has no NaN, and nlohmann::json writes one as null.
// A whole number out of its field's range is refused, never wrapped. A field added after
// the first schema may be missing (files written before it): it then keeps its default.
machine_context context_from_json(const nlohmann::json& j);
cell_result cell_from_json(const nlohmann::json& j);
// A whole file as to_json writes it (what `contend bench --json` leaves). Text that is not
// JSON, or not that shape, throws std::runtime_error saying what is wrong. `stop` as for
// parse_json_refusing_duplicate_keys, looked at between rows too.
run_result run_from_json(std::string_view text, const std::atomic<int>* stop = nullptr);

// JSON text parsed as nlohmann::json::parse does, except that an object holding one key twice
// is refused: nlohmann keeps the last, so {"benchmarks": [...], "benchmarks": []} would read
// as no benchmarks at all. Throws json_duplicate_key for that (what() names the key, escaped
// and cut short), nlohmann::json's exceptions for text that is not JSON.
// `stop` (may be null: never) is the CLI's stop signal (interrupted.hpp), looked at every
// stop_check_events values and keys: once it holds a signal, the parse throws interrupted, so
// that a file of hundreds of MB (tens of seconds to parse) stops at once.
class json_duplicate_key : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
constexpr std::size_t stop_check_events = 1 << 14;
nlohmann::json parse_json_refusing_duplicate_keys(std::string_view text, const std::atomic<int>* stop = nullptr);

std::string to_json(const run_result& run);  // the whole file
// One header row, a row per cell: every field of cell_fields(), then one column per metric
// any cell has (empty where a cell lacks it). Quoted as RFC 4180 says.
std::string to_csv(const run_result& run);

// The cells of one suite grouped the way the table and the report show them: one group per
// parameter point and worker count, in order of first appearance, valid cells by median
// first, then the invalid ones. A suite that sweeps the parameters of a single contender
// (probes) compares its points instead: one group per worker count, a row per point.
struct cell_group {
    std::string params;  // "cs_us 20" ("" when the group compares points)
    std::int32_t workers = 0;
    bool compares_points = false;
    std::vector<const cell_result*> rows;
};
std::vector<cell_group> group_cells(const std::vector<const cell_result*>& cells);
// The suites of a run, in order of first appearance.
std::vector<std::string> suites_of(const run_result& run);

// The human table: per suite and worker count, contenders by median ns/op, the winner
// marked '*', oversubscribed cells flagged, invalid cells with their reason, each cell's
// workload metrics after it.
std::string to_table(const run_result& run);

}  // namespace contend::lab
