// contend: the command-line front of the lab. Thin: parsing and subcommands over the lab
// library (harness, suites, results_io, history), which the tests call directly.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "harness/cell_runner.hpp"
#include "harness/disasm.hpp"
#include "harness/harness.hpp"
#include "results/history.hpp"
#include "harness/machine.hpp"
#include "peers/peers.hpp"
#include "report/report.hpp"
#include "results/results_io.hpp"
#include "suites/suites.hpp"

namespace lab = contend::lab;

namespace {

struct bench_args {
    bool list = false;
    std::string suite = "counter";
    std::string contenders = "*";
    std::vector<std::int32_t> workers;
    bool quick = false;
    double min_time_ms = 50;
    std::int32_t reps = 5;
    double deadline_s = 20;
    std::string pin = "none";
    std::string json_path = ".contend/last-run.json";
    std::string csv_path;
    std::string db_path = ".contend/history.db";
    bool no_history = false;
    std::string label;
    bool in_process = false;
};

std::string self_executable() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : p.string();
}

void write_file(const std::string& path, const std::string& text) {
    const std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p);
    out << text;
    if (!out) throw std::runtime_error("could not write " + path);
}

int list_suites() {
    for (const auto& s : lab::all_suites()) {
        if (s.hidden) continue;
        std::printf("%s: %s\n", s.name.c_str(), s.description.c_str());
        for (const auto& c : s.contenders) std::printf("  %-28s %s\n", c.id().c_str(), c.description.c_str());
    }
    return 0;
}

int run_bench(const bench_args& a) {
    if (a.list) return list_suites();
    const lab::suite* s = lab::find_suite(a.suite);
    if (!s) {
        std::fprintf(stderr, "contend bench: unknown suite '%s' (see --list)\n", a.suite.c_str());
        return 2;
    }
    lab::harness_options options;
    options.min_time_s = (a.quick ? 5 : a.min_time_ms) / 1e3;
    options.repetitions = a.quick ? 3 : a.reps;
    options.deadline_s = a.deadline_s;
    options.pin = a.pin;
    try {
        (void)lab::placement(a.pin, 1);  // reject a malformed --pin before running anything
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contend bench: --pin: %s\n", e.what());
        return 2;
    }
    std::vector<std::int32_t> workers = a.workers.empty() ? s->default_workers : a.workers;
    if (a.quick && a.workers.empty()) workers = {1, 2};

    std::vector<const lab::contender*> chosen;
    for (const auto& c : s->contenders)
        if (lab::glob_match(a.contenders, c.name) || lab::glob_match(a.contenders, c.id())) chosen.push_back(&c);
    if (chosen.empty()) {
        std::fprintf(stderr, "contend bench: no contender of '%s' matches '%s'\n", s->name.c_str(), a.contenders.c_str());
        return 2;
    }

    // One work-loop rate for every cell of the run (each cell runs in its own process).
    if (!std::getenv("CONTEND_LAB_BURN_PER_US"))
        setenv("CONTEND_LAB_BURN_PER_US", std::to_string(lab::burn_iterations_per_us()).c_str(), 1);

    lab::run_result run;
    run.context = lab::read_machine_context(a.label, lab::format_cpu_list(lab::allowed_cpus()));
    const std::size_t total = chosen.size() * workers.size();
    const bool progress = isatty(STDERR_FILENO);
    const auto started = std::chrono::steady_clock::now();
    std::size_t done = 0;
    const std::string exe = self_executable();
    for (const auto w : workers) {
        for (const auto* c : chosen) {
            if (progress) {
                const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                const double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
                std::fprintf(stderr, "\r[cell %zu/%zu] %s/%s/workers:%d  elapsed %.0fs, about %.0fs left   ", done + 1,
                             total, s->name.c_str(), c->id().c_str(), w, elapsed, eta);
            }
            run.cells.push_back(a.in_process ? lab::run_cell(*c, s->name, w, options)
                                             : lab::run_cell_in_child(exe, s->name, c->id(), w, options));
            ++done;
        }
    }
    if (progress) std::fprintf(stderr, "\r%80s\r", "");

    std::cout << "contend bench: suite " << s->name << " on " << run.context.cpu_model << " (" << run.context.logical_cpus
              << " CPUs, using " << run.context.cpu_list << "), timer slack " << run.context.timer_slack_ns
              << " ns, 1 ns nanosleep takes " << run.context.nanosleep_1ns_us << " us, wait backend "
              << run.context.wait_backend << ", peers built in: " << lab::peers_found() << "\n";
    std::cout << lab::to_table(run);

    std::vector<std::string> wrote;
    write_file(a.json_path, lab::to_json(run));
    wrote.push_back(a.json_path + " (JSON)");
    if (!a.csv_path.empty()) {
        write_file(a.csv_path, lab::to_csv(run));
        wrote.push_back(a.csv_path + " (CSV)");
    }
    if (!a.no_history) {
        lab::history_store store(a.db_path);
        const auto id = store.append(run);
        wrote.push_back(a.db_path + " (history run " + std::to_string(id) + ")");
    }
    const std::size_t valid = run.valid_cells();
    std::cout << "\n" << valid << " of " << run.cells.size() << " cells valid. Wrote:\n";
    for (const auto& f : wrote) std::cout << "  " << f << "\n";
    if (valid == 0) {
        std::cerr << "contend bench: the run produced no valid record; failing (seed 003: a run that "
                     "measured nothing must not pass)\n";
        return 3;
    }
    return 0;
}

int run_disasm(const std::string& suite_name, const std::string& contender_id) {
    const lab::suite* s = lab::find_suite(suite_name);
    if (!s) {
        std::fprintf(stderr, "contend disasm: unknown suite '%s'\n", suite_name.c_str());
        return 2;
    }
    for (const auto& c : s->contenders) {
        if (c.id() != contender_id && !(c.params.empty() && c.name == contender_id)) continue;
        const auto d = lab::disassemble_run(self_executable(), c.workload_type);
        std::cout << d.listing << "\n"
                  << suite_name << "/" << c.id() << ": " << d.atomic_instructions << " atomic instruction"
                  << (d.atomic_instructions == 1 ? "" : "s") << ", " << d.calls
                  << " call(s) out of the loop (slow paths, helpers). Built with: " << lab::read_build_flags() << "\n";
        return 0;
    }
    std::fprintf(stderr, "contend disasm: no contender '%s' in suite '%s' (see contend bench --list)\n",
                 contender_id.c_str(), suite_name.c_str());
    return 2;
}

int run_report(const lab::report_request& request, const std::string& output) {
    const auto sources = lab::load_report_sources(request);
    const std::string_view library = lab::chart_library_bundle();
    if (library.empty()) {
        std::fprintf(stderr,
                     "contend report: the charting library Chart.js was not built into this binary (%.*s was "
                     "missing at build time). Run scripts/setup.sh, then build again.\n",
                     static_cast<int>(lab::chart_library_path().size()), lab::chart_library_path().data());
        return 2;
    }
    lab::write_file_atomically(output, lab::render_report(sources, library));
    std::size_t cells = 0;
    for (const auto& s : sources) cells += s.run.cells.size();
    std::cout << "contend report: wrote " << output << " (" << cells << " cells from " << sources.size()
              << (sources.size() == 1 ? " run" : " runs") << ")\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // The hidden child mode of cell_runner: `contend __cell suite contender workers
    // min_time_s reps deadline_s pin`.
    if (argc == 9 && std::string(argv[1]) == "__cell") {
        lab::harness_options o;
        o.min_time_s = std::stod(argv[5]);
        o.repetitions = std::stoi(argv[6]);
        o.deadline_s = std::stod(argv[7]);
        o.pin = argv[8];
        return lab::cell_child_main(argv[2], argv[3], std::stoi(argv[4]), o);
    }

    CLI::App app{"contend: the contention lab. Measures locks, atomics and their wait policies on this machine."};
    app.require_subcommand(1);
    bench_args a;
    auto* bench = app.add_subcommand("bench", "Run a suite of contention benchmarks");
    bench->add_flag("--list", a.list, "List the suites and their contenders");
    bench->add_option("--suite", a.suite, "Suite to run")->capture_default_str();
    bench->add_option("--contenders", a.contenders, "Glob(s) of contenders (name or name/param:value), comma-separated")->capture_default_str();
    bench->add_option("--workers", a.workers, "Worker counts (default: the suite's)")->delimiter(',')->check(CLI::Range(1, 4096));
    bench->add_flag("--quick", a.quick, "Smoke run: 5 ms repetitions, 3 of them, workers 1 and 2");
    bench->add_option("--min-time", a.min_time_ms, "Minimum duration of one repetition, ms")->capture_default_str()->check(CLI::PositiveNumber);
    bench->add_option("--reps", a.reps, "Timed repetitions per cell")->capture_default_str()->check(CLI::Range(1, 1000));
    bench->add_option("--deadline", a.deadline_s, "Deadline of one repetition, s")->capture_default_str()->check(CLI::PositiveNumber);
    bench->add_option("--pin", a.pin, "none | compact | spread | <cpu list>")->capture_default_str();
    bench->add_option("--json", a.json_path, "Write results as JSON here")->capture_default_str();
    bench->add_option("--csv", a.csv_path, "Also write results as CSV here");
    bench->add_option("--db", a.db_path, "SQLite history database")->capture_default_str();
    bench->add_flag("--no-history", a.no_history, "Do not append the run to the history database");
    bench->add_option("--label", a.label, "Label for the run (default: git describe)");
    bench->add_flag("--in-process", a.in_process, "Run cells in this process (no protection against hangs)");
    std::string disasm_suite, disasm_contender;
    auto* disasm = app.add_subcommand("disasm", "Show the instructions of a contender's hot loop, atomics marked");
    disasm->add_option("suite", disasm_suite, "Suite, e.g. counter")->required();
    disasm->add_option("contender", disasm_contender, "Contender, e.g. contend_mutex (hold: contend_mutex/cs_us:20)")->required();
    lab::report_request report_request;
    std::int64_t report_run_id = 0;
    std::string report_output = ".contend/report.html";
    auto* report = app.add_subcommand("report", "Write one self-contained HTML page: a chart and a table per suite");
    auto* report_json = report->add_option("--json", report_request.json_path,
                                           "Read a results file written by `contend bench --json` instead of the history");
    report->add_option("--db", report_request.db_path, "SQLite history database")->capture_default_str();
    report->add_option("--run", report_run_id, "Show this history run only (default: the newest run of each suite)")
        ->excludes(report_json);
    report->add_option("-o,--output", report_output, "Write the page here")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    try {
        if (bench->parsed()) return run_bench(a);
        if (disasm->parsed()) return run_disasm(disasm_suite, disasm_contender);
        if (report->parsed()) {
            if (report->count("--run")) report_request.run_id = report_run_id;
            return run_report(report_request, report_output);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contend %s: %s\n", app.get_subcommands().front()->get_name().c_str(), e.what());
        return 1;
    }
    return 0;
}
