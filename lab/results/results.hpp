// The lab's result model: what one `contend bench` run measured, and where.
// Internal to the lab (namespace contend::lab); the library does not depend on it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace contend::lab {

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
    std::string build_flags;  // build type and flags the lab was compiled with
    std::string governor;  // cpufreq governor of cpu0, "" when not readable
    std::string wait_backend;  // "futex" or "portable"
    std::int64_t timer_slack_ns = 0;  // this process's timer slack
    double nanosleep_1ns_us = 0;  // measured median of a 1 ns nanosleep request, microseconds
};

// One cell: one contender of one suite at one parameter point, over all its repetitions.
struct cell_result {
    std::string suite;  // "counter"
    std::string contender;  // "contend_mutex"
    // Parameters besides workers, in row-name order, e.g. {{"cs_us","20"}} for hold.
    std::vector<std::pair<std::string, std::string>> params;
    std::int32_t workers = 0;

    // "ok", or why the cell is not valid: "wrong_count", "timed_out", "affinity_mismatch",
    // "crashed", "no_repetitions". An invalid cell is reported, never dropped.
    std::string status = "ok";
    std::string detail;  // human-readable reason for a non-ok status
    bool valid() const { return status == "ok"; }

    std::uint64_t ops_per_worker = 0;  // calibrated iterations per worker per repetition
    std::int32_t repetitions = 0;  // completed repetitions
    std::vector<double> ns_per_op;  // one sample per repetition: wall ns / total ops
    double median_ns = 0, p25_ns = 0, p75_ns = 0;
    double cpu_ns_per_op = 0;  // median over repetitions of (sum of worker CPU ns) / ops
    double min_share = 0, max_share = 0;  // fairness, median over repetitions (lock cells)
    bool has_fairness = false;
    std::string affinity;  // CPUs the workers were pinned to ("" when not pinned)
    bool oversubscribed = false;  // workers outnumber the CPUs they may use

    // "<suite>/<contender>/<k:v>.../workers:N", lower case (shared/DESIGN.md).
    std::string name() const;
};

struct run_result {
    machine_context context;
    std::vector<cell_result> cells;

    std::size_t valid_cells() const;
};

}  // namespace contend::lab
