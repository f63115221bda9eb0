// Writing results: the JSON shape of shared/DESIGN.md (readable by Google Benchmark's
// tools: rows with name, run_type "aggregate", aggregate_name "median", real_time,
// cpu_time, time_unit "ns", plus the lab's fields), CSV, and the table on stdout.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "results/results.hpp"

namespace contend::lab {

nlohmann::json context_to_json(const machine_context& c);
nlohmann::json cell_to_json(const cell_result& cell);

// Reading back what the functions above and to_json wrote. Each throws std::runtime_error
// naming the missing or mistyped field (and, for a row of a file, its index). A figure
// written as null reads back as NaN: JSON has no NaN, and nlohmann::json writes one as null.
machine_context context_from_json(const nlohmann::json& j);
cell_result cell_from_json(const nlohmann::json& j);
// A whole file as to_json writes it (what `contend bench --json` leaves). Text that is not
// JSON, or not that shape, throws std::runtime_error saying what is wrong.
run_result run_from_json(const std::string& text);

std::string to_json(const run_result& run);  // the whole file
std::string to_csv(const run_result& run);
// The human table: per suite and worker count, contenders by median ns/op, the winner
// marked '*', oversubscribed cells flagged, invalid cells with their reason.
std::string to_table(const run_result& run);

}  // namespace contend::lab
