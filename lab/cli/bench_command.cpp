// `contend bench`: its options, and what it prints around run/bench_session.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/cli.hpp"
#include "measure/cotenant.hpp"
#include "run/bench_session.hpp"
#include "store/results_io.hpp"
#include "suites/lock_peers.hpp"

namespace contend::lab::cli {
namespace {

struct bench_args {
    bool list = false;
    std::string workers, busy_loops, busy_nice;  // as given: parse_workers, parse_small_integer
    double deadline_s = 0;
    bench_request request;
};

int list_suites() {
    for (const auto& s : all_suites()) {
        if (s.hidden) continue;
        std::printf("%s: %s\n", s.name.c_str(), s.description.c_str());
        for (const auto& c : s.contenders) std::printf("  %-28s %s\n", c.id().c_str(), c.description.c_str());
    }
    return 0;
}

int run_bench(const CLI::App& bench, bench_args& a) {
    if (a.list) return list_suites();
    check_db_option(a.request.db_path);
    auto& r = a.request;
    if (bench.count("--deadline")) r.deadline_s = a.deadline_s;
    if (!a.workers.empty()) r.workers = parse_workers(a.workers);
    if (bench.count("--busy-loops")) r.busy_loops = parse_small_integer("--busy-loops", a.busy_loops, false);
    if (bench.count("--busy-nice")) r.busy_nice = parse_small_integer("--busy-nice", a.busy_nice, true);
    r.stop = &stop_signal;
    const bench_session session(r);

    std::ostream& text = session.standard_output_taken() ? std::cerr : std::cout;
    const bool progress = isatty(STDERR_FILENO);
    const auto started = std::chrono::steady_clock::now();
    run_hooks hooks;
    hooks.stop = &stop_signal;
    if (progress)
        hooks.on_cell = [&](std::size_t done, std::size_t total, const std::string& row) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            const double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
            std::fprintf(stderr, "\r[cell %zu/%zu] %s  elapsed %.0fs, about %.0fs left   ", done + 1, total,
                         row.c_str(), elapsed, eta);
        };
    hooks.on_not_quiet = [&](const std::string& row, double waited_s, double share) {
        if (progress) std::fprintf(stderr, "\r%100s\r", "");
        std::fprintf(stderr,
                     "contend bench: never quiet in %.1f s of waiting before %s: other processes took %.0f %% of its "
                     "CPUs at the last look; measured anyway (marked '!' if they went on)\n",
                     waited_s, row.c_str(), share * 100);
    };
    const run_result run = session.run(hooks);
    if (progress) std::fprintf(stderr, "\r%100s\r", "");

    const auto& c = run.context;
    text << "contend bench: suite " << session.plan().chosen_suite->name << " on " << c.cpu_model << " ("
         << c.logical_cpus << " CPUs, using " << c.cpu_list << "), timer slack " << c.timer_slack_ns
         << " ns, 1 ns nanosleep takes " << c.nanosleep_1ns_us << " us, wait backend " << c.wait_backend
         << ", peers built in: " << peers_found()
         << ", co-tenant: " << describe_cotenant(c.busy_loops, c.busy_nice, c.one_cpu) << "\n";
    if (!run.cells.empty()) text << to_table(run);

    const int stopped_in_run = stop_signal.load();
    if (run.cells.empty()) {
        text << "\ncontend bench: " << c.run_status << "; no cell finished, nothing written\n";
        return stopped_in_run ? 128 + stopped_in_run : exit_no_valid_cell;
    }
    // A signal during the run asked for the cells done to be written: the writing then goes
    // on (a second signal ends the process). A first signal while they are written stops the
    // writing: what is left is not written (a wait for the history's lock ends), exit 128 + N.
    const results_written written = session.write(run, stopped_in_run ? nullptr : &stop_signal);
    const int stopped_by = stop_signal.load();
    text << session.summary(run, written);
    for (const auto& f : written.failed) std::cerr << "contend bench: could not write " << f << "\n";
    if (stopped_by) return 128 + stopped_by;
    if (!written.failed.empty()) return exit_output_failed;
    if (run.valid_cells() == 0) {
        std::cerr << "contend bench: the run produced no valid record; failing (a run that measured nothing "
                     "must not pass)\n";
        return exit_no_valid_cell;
    }
    return 0;
}

}  // namespace

command add_bench(CLI::App& app) {
    auto a = std::make_shared<bench_args>();
    auto& r = a->request;
    auto& o = r.options;
    auto* bench = app.add_subcommand("bench", "Run a suite of contention benchmarks");
    bench->footer(std::string("An output path '-' is standard output (the table then goes to standard error).\n\n") +
                  exit_status_table);
    bench->add_flag("--list", a->list, "List the suites and their contenders");
    bench->add_option("--suite", o.suite, "Suite to run")->capture_default_str();
    bench->add_option("--contenders", o.contenders, "Glob(s) of contenders (name or name/param:value), comma-separated")
        ->capture_default_str();
    bench->add_option("--workers", a->workers, "Worker counts, comma-separated, 1..4096 (default: the suite's)");
    bench->add_flag("--quick", r.quick, "Smoke run: 5 ms repetitions, 3 of them, workers 1 and 2");
    bench->add_option("--min-time", r.min_time_ms, "Minimum duration of one repetition, ms")->capture_default_str();
    bench->add_option("--reps", o.harness.repetitions, "Timed repetitions per cell, 1..1000")->capture_default_str();
    bench->add_option("--deadline", a->deadline_s, "Deadline of one repetition, s (default 3; --full: 20)");
    bench->add_flag("--full", r.full,
                    "Every cell and every repetition: no stop at a small spread, no skip after a timeout, 20 s "
                    "deadlines");
    bench->add_option("--pin", o.harness.pin, "none | compact | spread | <cpu list>")->capture_default_str();
    bench->add_option("--json", r.json_path, "Write results as JSON here")->capture_default_str();
    bench->add_option("--csv", r.csv_path, "Also write results as CSV here");
    bench
        ->add_option("--db", r.db_path,
                     "History: an SQLite file, or a PostgreSQL database as postgresql://... (libpq URI)")
        ->capture_default_str();
    bench->add_flag("--no-history", r.no_history, "Do not append the run to the history database");
    bench->add_option("--label", o.label, "Label for the run (default: git describe)");
    bench->add_flag("--in-process", o.in_process, "Run cells in this process (no protection against hangs)");
    bench->add_flag("--one-cpu", o.harness.cotenant.one_cpu,
                    "Run every thread of each cell (workers, a pool's or a pipe's own threads, a server and wrk, "
                    "the busy loops) on one CPU, the first this process may use; takes no --pin");
    bench->add_option("--busy-loops", a->busy_loops,
                      "Run N background busy-loop processes beside each cell (0..64), started before its first "
                      "repetition and killed after its last (default 0)");
    bench->add_option("--busy-nice", a->busy_nice, "Nice level of the busy loops, -20..19 (default 19)");
    bench->add_option("--wait-quiet", o.wait_quiet_s,
                      "Before each cell, wait up to S seconds for its CPUs to be quiet (other processes taking at "
                      "most 5 % of them over a 0.2 s look), and say so when they never were (default 0: no wait)");
    bench->add_flag("--interleave", o.interleave,
                    "Run the repetitions in rounds, one of every row per round, so that the rows compared sample "
                    "the same stretches of time (the server suite always does)");
    return {bench, [bench, a] { return run_bench(*bench, *a); }};
}

}  // namespace contend::lab::cli
