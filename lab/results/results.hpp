// The lab's result model: what one `contend bench` run measured, and where.
//
// One model, one place: every field of a run's context and of a cell is listed once, in
// context_fields() and cell_fields() below. The JSON writer and reader, the CSV writer,
// the SQLite history and the report walk those tables; none of them spells a field again.
// Adding a figure to every output is one line in a table (plus its test). A workload's own
// figures (items per ms, bytes per second, latency percentiles) need no line at all: they
// travel in cell_result::metrics, by name.
//
// Internal to the lab (namespace contend::lab); the library does not depend on it.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace contend::lab {

// Parameters of a point of a sweep, in row-name order, e.g. {{"cs_us", "20"}}.
using param_list = std::vector<std::pair<std::string, std::string>>;

// A workload's own figures of a cell, by name, in the order the workload gave them: the
// median over the timed repetitions of what it measured in each.
using metric_list = std::vector<std::pair<std::string, double>>;

// --- Ids and parameters: the one format and the one parse ---------------------------------
//
// A parameter list is written "key:value/key:value"; a contender id is its name followed by
// "/key:value" per parameter ("contend_mutex/cs_us:20"); a row name is
// "<suite>/<id>/workers:N". Keys are lower case words joined by '_' ([a-z0-9_]+); a value
// is non-empty and holds no '/' (nor a control character). The same text is used in row
// names, the JSON, the CSV, the history and on the command line.

// Throws std::invalid_argument naming the offending key or value.
void check_params(const param_list& params);
std::string format_params(const param_list& params);
// The inverse of format_params. Throws std::invalid_argument for text format_params could
// not have written.
param_list parse_params(std::string_view text);

std::string format_id(std::string_view name, const param_list& params);
struct parsed_id {
    std::string name;
    param_list params;
};
parsed_id parse_id(std::string_view id);

// A part of a row name as cell_result::name() writes the contender and the keys: lower case,
// with spaces and '-' as '_' ("My Lock-Bench" -> "my_lock_bench").
std::string row_name_part(std::string text);

// A metric name: [a-z][a-z0-9_]*, and not the name of a field of a cell (so that the
// flattened JSON row stays readable). Throws std::invalid_argument.
void check_metric_name(std::string_view name);

// --- The records ---------------------------------------------------------------------------

// A figure that was not measured: JSON null, SQL NULL, an empty CSV cell, a blank in tables.
inline constexpr double not_measured = std::numeric_limits<double>::quiet_NaN();

// A cell is marked as measured beside a co-tenant (cell_result::shared) when other processes
// took more than this share of its CPUs' time during its timed repetitions: a twentieth, past
// what a quiet machine's housekeeping takes (0.06 to 0.6 % in counter cells on the 2-CPU Intel
// Xeon VM), and far below what a co-tenant that moves figures takes (one nice-0 busy loop
// beside a 2-worker counter cell there: 44 to 50 %).
inline constexpr double shared_above = 0.05;

// Where and how a run happened. Every field is recorded with every run: a figure means
// little without the machine, compiler and placement it came from.
struct machine_context {
    std::string date;  // ISO 8601, UTC
    std::string label;  // --label, default: git describe of the project, when available
    std::string host_name;
    std::string cpu_model;
    std::int32_t logical_cpus = 0;  // online CPUs
    std::string cpu_list;  // the CPUs the run was allowed to use, e.g. "0-1"
    std::string kernel;  // uname -sr
    std::string compiler;  // e.g. "GCC 12.2.0"
    std::string version;  // contend's version and git commit: "0.1.0 (git 3f5e6813a0b1)"
    std::string build_flags;  // build type and flags the lab was compiled with
    std::string library_build_type;  // "release" (NDEBUG) or "debug", as Google Benchmark says it
    std::string governor;  // cpufreq governor of cpu0, "" when not readable
    std::string wait_backend;  // "futex" or "portable"
    std::int64_t timer_slack_ns = 0;  // this process's timer slack
    double nanosleep_1ns_us = 0;  // measured median of a 1 ns nanosleep request, microseconds
    // "complete", or why the run ended early: "interrupted by SIGINT after 3 of 10 cells".
    // An interrupted run keeps the cells it finished.
    std::string run_status = "complete";
    // The run's co-tenant (measure/cotenant.hpp): the busy loops beside every cell and their
    // nice level (0 when there are none), and the CPU every cell ran on under --one-cpu (-1:
    // none). A suite's own busy-loop rows say theirs in their parameters only.
    std::int32_t busy_loops = 0;
    std::int32_t busy_nice = 0;
    std::int32_t one_cpu = -1;
};

// One cell: one contender of one suite at one parameter point, over all its repetitions.
struct cell_result {
    std::string suite;  // "counter"
    std::string contender;  // "contend_mutex"
    param_list params;  // besides workers
    std::int32_t workers = 0;
    std::string operation = "op";  // what one operation is: "increment", "work_item", "byte"

    // "ok", or why the cell is not valid: "wrong_count" (or another failed workload check),
    // "timed_out", "affinity_mismatch", "crashed", "no_repetitions", "skipped" (not run: the
    // contender timed out at fewer workers in the same run). An invalid cell is
    // reported, never dropped.
    std::string status = "ok";
    std::string detail;  // human-readable reason for a non-ok status
    bool valid() const { return status == "ok"; }

    std::uint64_t ops_per_worker = 0;  // calibrated operations per worker per repetition
    std::int32_t repetitions = 0;  // completed repetitions
    std::vector<double> ns_per_op;  // one sample per repetition: wall ns / total ops
    double median_ns = 0, p25_ns = 0, p75_ns = 0;
    // The repetitions fall into separate modes (find_modes in results/statistics.hpp): the
    // median is not one figure, and compare calls a change of it noisy.
    bool modal = false;
    double cpu_ns_per_op = 0;  // median over repetitions of (sum of worker CPU ns) / ops
    // Fairness, median over repetitions: lock cells at 2 or more workers; NaN otherwise, and NaN
    // when the repetitions were too short for the scheduler to run every worker (the rule of
    // fairness_needed_ns in measure/harness.hpp): fairness_reason then says why.
    double min_share = not_measured, max_share = not_measured;
    bool has_fairness = false;
    std::string fairness_reason;  // "" when the shares are measured or the cell has none
    std::string affinity;  // CPUs the workers were pinned to ("" when not pinned)
    bool oversubscribed = false;  // workers outnumber the CPUs they may use
    // What other processes took of the cell's CPUs during its timed repetitions
    // (measure/machine_share.hpp): their CPU time over the CPUs' time, 0 to 1; and the most
    // threads of other processes found runnable at the end of a repetition. NaN: not
    // measured (a row that measures itself, a file of before them). shared() says whether
    // the cell is marked as measured beside a co-tenant.
    double others_cpu_share = not_measured;
    double others_runnable = not_measured;
    bool shared() const;
    metric_list metrics;  // the workload's own figures
    // A profiled `contend run` row's locks that waited most, with their waits' histograms and
    // stacks, as results/lock_profile.hpp writes them ("" for none: every other row).
    std::string lock_profile;

    // "<suite>/<contender>/<k:v>.../workers:N", lower case (docs/lab.md, "The JSON results").
    std::string name() const;
    std::string id() const { return format_id(contender, params); }
    // The metric's value, or NaN when the cell has none of that name.
    double metric(std::string_view name) const;
};

struct run_result {
    machine_context context;
    std::vector<cell_result> cells;

    std::size_t valid_cells() const;
};

// --- The field tables -----------------------------------------------------------------------

// How a field is stored: text, whole numbers, a real (NaN allowed: JSON null, SQL NULL, an
// empty CSV cell), a flag, the samples (a list of reals), or the parameters (format_params).
template <class Record>
using field_member =
    std::variant<std::string Record::*, std::int32_t Record::*, std::int64_t Record::*, std::uint64_t Record::*,
                 double Record::*, bool Record::*, std::vector<double> Record::*, param_list Record::*>;

template <class Record>
struct field {
    std::string_view name;  // the CSV column and the SQL column
    std::string_view json;  // the JSON key (Google Benchmark's where it has one)
    field_member<Record> member;
    // The history schema version that added the field: a file of an older version lacks its
    // column, and reading such a file gives the field its default.
    int since_schema = 1;
    // The report's column heading; empty: not a column of the report's tables.
    std::string_view heading = {};
    // A JSON file may lack it (reads as the default): files written before version 2 held
    // the fairness fields only for lock cells.
    bool may_be_absent = false;
};

std::span<const field<machine_context>> context_fields();
std::span<const field<cell_result>> cell_fields();

// Visits the field's member of `record` with the member's reference (std::string&, double&...).
template <class Record, class Visitor>
decltype(auto) visit_field(const field<Record>& f, Record& record, Visitor&& visitor) {
    return std::visit([&](auto member) -> decltype(auto) { return visitor(record.*member); }, f.member);
}
template <class Record, class Visitor>
decltype(auto) visit_field(const field<Record>& f, const Record& record, Visitor&& visitor) {
    return std::visit([&](auto member) -> decltype(auto) { return visitor(record.*member); }, f.member);
}

// The samples as text ("6.5 6.25"), shortest round-trip form, locale-independent; and back
// (throws std::invalid_argument).
std::string format_samples(const std::vector<double>& samples);
std::vector<double> parse_samples(std::string_view text);

}  // namespace contend::lab
