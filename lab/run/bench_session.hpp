// One `contend bench` run, from its settings to its written outputs, as a library call: the
// defaults of the short, quick and full runs; every check that can fail before the first
// cell (the plan, each output path, no output on another output or on the history, a history
// that can take the run); the run; and each output written on its own, so that one that fails
// costs none of the others. The CLI parses into a bench_request and prints what this returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run/runner.hpp"
#include "store/results_outputs.hpp"

namespace contend::lab {

struct bench_request {
    bool quick = false;  // 5 ms repetitions, 3 of them, workers 1 and 2 unless given
    bool full = false;  // every cell, every repetition, 20 s deadlines, contenders run after a timeout
    std::vector<std::int32_t> workers;  // empty: the suite's (quick: 1 and 2)
    double min_time_ms = 50;
    std::optional<double> deadline_s;  // none: 3 s, or 20 s with `full`
    std::optional<std::int32_t> busy_loops, busy_nice;
    std::string json_path = ".contend/last-run.json";
    std::string csv_path;  // "": none
    std::string db_path = ".contend/history.db";
    bool no_history = false;  // the history is then an input: no output may land on it
    // Ends the check of the history (a wait for its lock) at a stop signal; null: never.
    const std::atomic<int>* stop = nullptr;
    bench_options options;  // suite, contenders, repetitions, pin, label, ... as given
};

class bench_session {
public:
    // The short run by default: steady or long cells stop after this many repetitions...
    static constexpr std::int32_t default_min_repetitions = 3;
    // ...each repetition has this long (--full: full_deadline_s)...
    static constexpr double default_deadline_s = 3, full_deadline_s = 20;

    // Applies the defaults, plans the run and checks every output: throws
    // std::invalid_argument naming the option at fault, before anything is measured or written.
    explicit bench_session(bench_request request);

    const bench_plan& plan() const noexcept { return plan_; }
    const bench_options& options() const noexcept { return request_.options; }
    // A file is written to standard output ('-'): what the CLI prints goes to standard error.
    bool standard_output_taken() const noexcept { return request_.json_path == "-" || request_.csv_path == "-"; }

    run_result run(const run_hooks& hooks) const { return run_suite(request_.options, hooks); }
    results_written write(const run_result& run, const std::atomic<int>* stop = nullptr) const;
    // The lines after the table: cells stopped short or skipped, how many are valid, what was
    // written. Ends with a newline.
    std::string summary(const run_result& run, const results_written& written) const;

private:
    results_outputs outputs() const;

    bench_request request_;
    bench_plan plan_;
};

}  // namespace contend::lab
