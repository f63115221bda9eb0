// contend: the command-line front of the lab. Parsing and printing only: the work is done
// by the lab library (run_suite, the results model and its writers, the history, the
// report), which the tests call directly.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyze/compare.hpp"
#include "analyze/history_import.hpp"
#include "analyze/history_series.hpp"
#include "pages/html_page.hpp"
#include "run/cell_runner.hpp"
#include "measure/cotenant.hpp"
#include "tools/disasm/disasm.hpp"
#include "measure/machine.hpp"
#include "run/runner.hpp"
#include "model/version.hpp"
#include "suites/lock_peers.hpp"
#include "pages/report.hpp"
#include "store/history.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "store/results_io.hpp"

namespace lab = contend::lab;

namespace {

// Exit codes: one table for every command, printed by every --help (exit_status_table) and
// in docs/lab.md ("Exit codes").
constexpr int exit_regression = 1;  // compare: a regression; history import: the history could not be written
constexpr int exit_usage = 2;  // bad arguments or bad input (a history that cannot be read too): nothing written
constexpr int exit_no_valid_cell = 3;  // bench: the run measured nothing valid
// An output could not be written: a file, the history (bench), or standard output (a full
// disk, a file size limit, a closed pipe). Not 2: the arguments and inputs were fine, and a
// script may retry; not 1: compare's 1 means "regression", and a report that never arrived
// must not read as a verdict.
constexpr int exit_output_failed = 4;
constexpr int exit_out_of_memory = 5;  // an input (or the history) needed more memory than the process may use

constexpr const char* exit_status_table =
    "Exit status (the same table for every command; docs/lab.md, \"Exit codes\"):\n"
    "  0      done; compare: no regression\n"
    "  1      compare: a regression (unless --no-fail-on-regression); history import: the history could not be "
    "written (nothing stored)\n"
    "  2      bad arguments or bad input (a file or a history that cannot be read: missing, corrupt, truncated, "
    "foreign): nothing written\n"
    "  3      bench: no valid cell\n"
    "  4      an output could not be written (a full disk, a file size limit, a closed pipe; standard output "
    "included): bench still writes its other outputs; compare writes all its files or none\n"
    "  5      out of memory\n"
    "  128+N  stopped by signal N (bench writes the cells done; the other commands store and replace nothing)";

// The signal that asked the run to stop (SIGINT, SIGTERM, SIGHUP), or 0.
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set in a signal handler");

// The first signal stops the command cleanly: bench keeps and writes the cells done; the
// others store and replace nothing (lab::interrupted) and exit 128 + N. A second one ends the
// process at once, as the signal would by default, but first removes the temporary file of
// an output being written, so that none is left beside it.
extern "C" void on_stop_signal(int sig) {
    int none = 0;
    if (stop_signal.compare_exchange_strong(none, sig)) return;
    lab::remove_temporary_output();
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // delivered as the handler returns
}

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns at once
    sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);  // one handler at a time
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    // A cell's process that dies before reading its settings must not kill the run; a closed
    // pipe on standard output is then EPIPE, and a file past `ulimit -f` EFBIG: write errors,
    // reported with exit_output_failed (and a temporary file removed) instead of a kill.
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
}

// The default run is the short one: steady or long cells stop after 3 repetitions, a
// repetition has 3 s, and a contender that timed out is not run at more workers. --full
// runs every cell, every repetition, with 20 s each.
constexpr std::int32_t default_min_repetitions = 3;
constexpr double default_deadline_s = 3, full_deadline_s = 20;

struct bench_args {
    bool list = false;
    bool quick = false;
    bool full = false;
    std::string workers;
    double min_time_ms = 50;
    std::string json_path = ".contend/last-run.json";
    std::string csv_path;
    std::string db_path = ".contend/history.db";
    bool no_history = false;
    bool deadline_given = false;
    std::string busy_loops, busy_nice;  // as given, read by parse_small_integer
    bool busy_loops_given = false, busy_nice_given = false;
    lab::bench_options options;
};

// "1,2,64": every item a whole number; an empty item is an error, not skipped.
std::vector<std::int32_t> parse_workers(const std::string& text) {
    std::vector<std::int32_t> workers;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument("--workers: '" + item + "' is not a worker count (give e.g. 1,2,64)");
        workers.push_back(static_cast<std::int32_t>(std::stol(item)));
    }
    if (workers.empty() || text.back() == ',')
        throw std::invalid_argument("--workers: an empty item in '" + text + "'");
    return workers;
}

// A count or a nice level, in decimal as a person writes it: "010" is not 8, "0x10" not 16,
// and a sign is allowed only where the value may be negative. The range is checked later,
// with the other settings (check_cotenant).
std::int32_t parse_small_integer(const char* option, const std::string& text, bool may_be_negative) {
    const std::string digits = may_be_negative && !text.empty() && text[0] == '-' ? text.substr(1) : text;
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(std::string(option) + ": '" + text + "' is not a whole number in decimal");
    return static_cast<std::int32_t>(std::stol(text));
}

// A whole number in decimal from `min` to `max`, as a person writes it: CLI11 reads "-1" into
// an unsigned option as 18446744073709551615 and clamps 99999999999999999999 to the largest
// value, so such options are read as text and parsed here.
std::int64_t parse_whole_number(const char* option, const std::string& text, std::int64_t min, std::int64_t max) {
    std::int64_t value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (text.empty() || (text[0] == '+') || ec == std::errc::invalid_argument || end != last)
        throw std::invalid_argument(std::string(option) + ": '" + lab::message_text(text) +
                                    "' is not a whole number in decimal");
    if (ec == std::errc::result_out_of_range || value < min || value > max)
        throw std::invalid_argument(std::string(option) + ": " + lab::message_text(text) + " is out of range (" +
                                    std::to_string(min) + " to " + std::to_string(max) + ")");
    return value;
}

int list_suites() {
    for (const auto& s : lab::all_suites()) {
        if (s.hidden) continue;
        std::printf("%s: %s\n", s.name.c_str(), s.description.c_str());
        for (const auto& c : s.contenders) std::printf("  %-28s %s\n", c.id().c_str(), c.description.c_str());
    }
    return 0;
}

int run_bench(bench_args& a) {
    if (a.list) return list_suites();
    auto& o = a.options;
    o.harness.min_time_s = (a.quick ? 5 : a.min_time_ms) / 1e3;
    if (a.quick) o.harness.repetitions = 3;
    o.run_after_timeout = a.full;
    o.harness.min_repetitions = a.full ? o.harness.repetitions : default_min_repetitions;
    o.harness.time_to_stop_s = 20 * o.harness.min_time_s;  // 1 s at the default 50 ms
    if (!a.deadline_given) o.harness.deadline_s = a.full ? full_deadline_s : default_deadline_s;
    if (!a.workers.empty()) o.workers = parse_workers(a.workers);
    if (a.quick && o.workers.empty()) o.workers = {1, 2};
    if (a.busy_loops_given) o.harness.cotenant.busy_loops = parse_small_integer("--busy-loops", a.busy_loops, false);
    if (a.busy_nice_given) {
        o.harness.cotenant.busy_nice = parse_small_integer("--busy-nice", a.busy_nice, true);
        if (o.harness.cotenant.busy_loops == 0)
            throw std::invalid_argument("--busy-nice sets the nice level of the busy loops: give --busy-loops N too");
    }

    // Everything that can fail is checked before the first cell: the plan, every output
    // path, that no output is another output, and that the history can take the run.
    const lab::bench_plan plan = lab::plan_suite(o);
    // With --no-history the history is not written, but it is still the user's history:
    // no other output may land on it.
    std::vector<lab::named_path> outputs = {{"--json", a.json_path}}, inputs;
    if (!a.csv_path.empty()) outputs.push_back({"--csv", a.csv_path});
    if (a.db_path == "-") throw std::invalid_argument("--db: the history cannot be standard output");
    // A PostgreSQL URI is no file: no output can land on it, and nothing is created under its
    // name; check_appendable connects instead.
    if (!lab::history_store::is_database_uri(a.db_path))
        (a.no_history ? inputs : outputs).push_back({"--db", a.db_path});
    lab::check_distinct(outputs, inputs);
    for (const auto& out : outputs) lab::check_output_path(out.what, out.path);
    if (!a.no_history) {
        try {
            lab::history_store::check_appendable(a.db_path);
        } catch (const std::runtime_error& e) {
            throw std::invalid_argument("--db " + lab::history_store::printable(a.db_path) + ": " + e.what());
        }
    }

    // Standard output carries a file written to '-'; the table then goes to stderr.
    const bool stdout_taken = a.json_path == "-" || a.csv_path == "-";
    std::ostream& text = stdout_taken ? std::cerr : std::cout;
    const bool progress = isatty(STDERR_FILENO);
    const auto started = std::chrono::steady_clock::now();
    lab::run_hooks hooks;
    hooks.stop = &stop_signal;
    if (progress)
        hooks.on_cell = [&](std::size_t done, std::size_t total, const std::string& row) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            const double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
            std::fprintf(stderr, "\r[cell %zu/%zu] %s  elapsed %.0fs, about %.0fs left   ", done + 1, total,
                         row.c_str(), elapsed, eta);
        };
    const lab::run_result run = lab::run_suite(o, hooks);
    if (progress) std::fprintf(stderr, "\r%100s\r", "");

    const auto& c = run.context;
    text << "contend bench: suite " << plan.chosen_suite->name << " on " << c.cpu_model << " (" << c.logical_cpus
         << " CPUs, using " << c.cpu_list << "), timer slack " << c.timer_slack_ns << " ns, 1 ns nanosleep takes "
         << c.nanosleep_1ns_us << " us, wait backend " << c.wait_backend << ", peers built in: " << lab::peers_found()
         << ", co-tenant: " << lab::describe_cotenant(c.busy_loops, c.busy_nice, c.one_cpu) << "\n";
    if (!run.cells.empty()) text << lab::to_table(run);

    const int stopped_by = stop_signal.load();
    if (run.cells.empty()) {
        text << "\ncontend bench: " << c.run_status << "; no cell finished, nothing written\n";
        return stopped_by ? 128 + stopped_by : exit_no_valid_cell;
    }
    // Each output succeeds or fails on its own, and says so.
    std::vector<std::string> wrote, failed;
    auto attempt = [&](const std::string& what, const std::string& path, auto&& write) {
        try {
            wrote.push_back(path + " (" + what + ": " + write() + ")");
        } catch (const std::exception& e) {
            failed.push_back(e.what());
        }
    };
    attempt("--json", a.json_path, [&] {
        lab::write_output_file("--json", a.json_path, lab::to_json(run));
        return std::string("JSON");
    });
    if (!a.csv_path.empty())
        attempt("--csv", a.csv_path, [&] {
            lab::write_output_file("--csv", a.csv_path, lab::to_csv(run));
            return std::string("CSV");
        });
    if (!a.no_history)
        attempt("--db", lab::history_store::printable(a.db_path), [&] {
            lab::history_store store(a.db_path);
            return "history run " + std::to_string(store.append(run));
        });
    const std::size_t valid = run.valid_cells();
    std::size_t short_cells = 0, skipped = 0;
    for (const auto& cell : run.cells) {
        short_cells += cell.valid() && cell.repetitions < o.harness.repetitions;
        skipped += cell.status == "skipped";
    }
    if (short_cells > 0)
        text << "\n"
             << short_cells << " cells stopped after fewer than " << o.harness.repetitions
             << " repetitions: their p25-p75 spread was within " << o.harness.spread_to_stop * 100
             << " % of the median, or their repetitions had lasted " << o.harness.time_to_stop_s
             << " s in all (--full runs every repetition).";
    if (skipped > 0)
        text << "\n" << skipped << " cells skipped: their contender timed out at fewer workers (--full runs them).";
    text << "\n" << valid << " of " << run.cells.size() << " cells valid";
    if (c.run_status != "complete") text << "; the run was " << c.run_status;
    text << ". Wrote:\n";
    for (const auto& f : wrote) text << "  " << f << "\n";
    if (wrote.empty()) text << "  nothing\n";
    for (const auto& f : failed) std::cerr << "contend bench: could not write " << f << "\n";
    if (stopped_by) return 128 + stopped_by;
    if (!failed.empty()) return exit_output_failed;
    if (valid == 0) {
        std::cerr << "contend bench: the run produced no valid record; failing (a run that measured nothing "
                     "must not pass)\n";
        return exit_no_valid_cell;
    }
    return 0;
}

int run_disasm(const std::string& suite_name, const std::string& contender_id) {
    const lab::suite* s = lab::find_suite(suite_name);
    if (!s) {
        std::fprintf(stderr, "contend disasm: unknown suite '%s'\n", suite_name.c_str());
        return exit_usage;
    }
    for (const auto& c : s->contenders) {
        if (c.id() != contender_id && !(c.params.empty() && c.name == contender_id)) continue;
        const auto d = lab::disassemble_run(lab::self_executable(), c.workload_type);
        std::cout << d.listing << "\n"
                  << suite_name << "/" << c.id() << ": " << d.atomic_instructions << " atomic instruction"
                  << (d.atomic_instructions == 1 ? "" : "s") << ", " << d.calls
                  << " call(s) out of the loop (slow paths, helpers). Built with: " << lab::read_build_flags() << "\n";
        return 0;
    }
    // A contender with parameters is named with them (hold: contend_mutex/cs_us:20), which
    // `contend bench --list` does not show: name the points of the one asked for.
    std::string points;
    for (const auto& c : s->contenders) {
        if (c.name != contender_id || c.params.empty()) continue;
        points += (points.empty() ? "" : ", ") + c.id();
    }
    if (!points.empty()) {
        std::fprintf(stderr, "contend disasm: '%s' in suite '%s' has parameters: name one of its points: %s\n",
                     contender_id.c_str(), suite_name.c_str(), points.c_str());
        return exit_usage;
    }
    std::fprintf(stderr, "contend disasm: no contender '%s' in suite '%s' (see contend bench --list)\n",
                 contender_id.c_str(), suite_name.c_str());
    return exit_usage;
}

int run_report(const lab::report_request& request, const std::string& output) {
    std::vector<lab::named_path> inputs;  // a PostgreSQL URI is no file that -o could overwrite
    if (!request.json_path.empty()) inputs.push_back({"--json", request.json_path});
    else if (!lab::history_store::is_database_uri(request.db_path)) inputs.push_back({"--db", request.db_path});
    lab::check_distinct({{"-o", output}}, inputs);
    lab::check_output_path("-o", output);
    const auto sources = lab::load_report_sources(request);
    const std::string_view library = lab::chart_library_bundle();
    if (library.empty()) {
        std::fprintf(stderr,
                     "contend report: the charting library Chart.js was not built into this binary (%.*s was "
                     "missing at build time). Run scripts/setup.sh, then build again.\n",
                     static_cast<int>(lab::chart_library_path().size()), lab::chart_library_path().data());
        return exit_usage;
    }
    lab::write_output_file("-o", output, lab::render_report(sources, library));
    std::size_t cells = 0;
    for (const auto& s : sources) cells += s.run.cells.size();
    (output == "-" ? std::cerr : std::cout)
        << "contend report: wrote " << (output == "-" ? "standard output" : output) << " (" << cells << " cells from "
        << sources.size() << (sources.size() == 1 ? " run" : " runs") << ")\n";
    return 0;
}

// Chart.js as built into this binary, for a page about to be written; a binary built without
// it is refused before anything is read or written.
std::string_view page_chart_library() {
    const std::string_view library = lab::chart_library_bundle();
    if (library.empty())
        throw std::invalid_argument("--html: the charting library Chart.js was not built into this binary (" +
                                    std::string(lab::chart_library_path()) +
                                    " was missing at build time). Run scripts/setup.sh, then build again.");
    return library;
}

struct compare_args {
    std::string baseline, test, markdown_path, json_path, html_path;
    std::string db_path;  // "": baseline and test are files; otherwise labels in this history
    double threshold_percent = 5;
    double noise_ns = 0.5;
    double alpha = 0.05;
    bool no_fail_on_regression = false;
};

// POSIX shell quoting for the report's repro command: a path with quotes or spaces in it
// must come back as the same path.
std::string shell_word(const std::string& word) {
    if (!word.empty() &&
        word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%") ==
            std::string::npos)
        return word;
    std::string out = "'";
    for (const char ch : word) {
        if (ch == '\'') out += "'\\''";
        else out += ch;
    }
    return out + "'";
}

// Every run of the history, opened read-only. A history that cannot be opened or read (not a
// history, corrupt pages, cut short) is bad input (exit 2), as a results file that cannot be
// read is: the message names the path. Never exit 1, which is compare's "regression".
std::vector<lab::stored_run> read_history(const std::string& db_path) {
    try {
        const lab::history_store store(db_path, lab::history_access::read_only);
        return store.stored_runs();
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument("--db " + lab::history_store::printable(db_path) + ": " + e.what());
    }
}

// --db as given, refused at once (exit 2) when it can hold no history (an empty path,
// SQLite's in-memory forms) or is a mistake for a PostgreSQL URI: history.hpp.
void check_db_option(const std::string& path) {
    try {
        lab::history_store::check_location(path);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--db ") + e.what());
    }
}

int run_compare(const compare_args& a) {
    const bool from_history = !a.db_path.empty();
    std::vector<lab::named_path> inputs;
    if (!from_history) inputs = {{"baseline", a.baseline}, {"test", a.test}};
    else if (!lab::history_store::is_database_uri(a.db_path)) inputs.push_back({"--db", a.db_path});
    std::vector<lab::named_path> outputs;
    if (!a.markdown_path.empty()) outputs.push_back({"--markdown", a.markdown_path});
    if (!a.json_path.empty()) outputs.push_back({"--json", a.json_path});
    if (!a.html_path.empty()) outputs.push_back({"--html", a.html_path});
    lab::check_distinct(outputs, inputs);
    for (const auto& out : outputs) lab::check_output_path(out.what, out.path);
    const std::string_view library = a.html_path.empty() ? std::string_view() : page_chart_library();
    lab::compare_options options;
    options.threshold = a.threshold_percent / 100;
    options.noise_floor_ns = a.noise_ns;
    options.alpha = a.alpha;
    // From a history: read once, so both labels, the edges and the page come from one snapshot.
    std::vector<lab::stored_run> runs;
    if (from_history) runs = read_history(a.db_path);
    const auto read = [&](const std::string& what) {
        return from_history ? lab::comparison_input_from_runs(runs, lab::history_store::printable(a.db_path), what)
                            : lab::read_comparison_input(what);
    };
    const auto base = read(a.baseline);
    const auto test = read(a.test);
    // From a history, the edge detector too: does a change point fall between the two runs?
    // Found as `contend history --changes` finds them, with its defaults.
    const lab::change_options edge_options;
    std::optional<lab::edge_evidence> edges;
    if (from_history)
        edges = lab::edges_between(runs, lab::newest_run_labelled(runs, a.baseline),
                                   lab::newest_run_labelled(runs, a.test), edge_options);
    const auto c = lab::compare_inputs(base, test, options, edges ? &*edges : nullptr, edge_options);
    // The options first and "--" before the inputs: a file (or label) named "-b.json" is then
    // an input, not an option. Numbers in their shortest exact form, so the repro repeats them.
    const auto number = [](double v) {
        char text[64];
        const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
        return ec == std::errc() ? std::string(text, end) : std::string("nan");
    };
    std::string repro = "contend compare";
    if (from_history) repro += " --db " + shell_word(lab::history_store::printable(a.db_path));
    repro += " --threshold " + number(a.threshold_percent) + " --noise " + number(a.noise_ns) + " --alpha " +
             number(a.alpha);
    const bool dash_input = a.baseline.starts_with("-") || a.test.starts_with("-");
    repro += std::string(dash_input ? " --" : "") + " " + shell_word(a.baseline) + " " + shell_word(a.test);
    const std::string markdown = lab::comparison_to_markdown(c, repro);
    lab::throw_if_stopped(&stop_signal, "nothing was written");
    // All or nothing: each file goes to its temporary file first; none replaces its target
    // unless every output was written (exit 4 otherwise, every previous file kept).
    lab::output_set files;
    if (!a.markdown_path.empty()) files.add("--markdown", a.markdown_path, markdown);
    if (!a.json_path.empty()) files.add("--json", a.json_path, lab::comparison_to_json(c));
    if (!a.html_path.empty()) {
        // The page's evidence: from a history, each benchmark's series (change points found
        // as the edge detector found them) and the two runs read; from files, their repetitions.
        lab::compare_page_evidence evidence{&base, &test, nullptr, 0, 0};
        std::vector<lab::benchmark_history> series;
        if (from_history) {
            series = lab::history_series(runs, "", edge_options);
            evidence = {nullptr, nullptr, &series, lab::newest_run_labelled(runs, a.baseline),
                        lab::newest_run_labelled(runs, a.test)};
        }
        files.add("--html", a.html_path, lab::render_compare_page(c, repro, evidence, library));
    }
    files.commit();
    if (a.markdown_path != "-" && a.json_path != "-" && a.html_path != "-") {
        lab::throw_if_stopped(&stop_signal, "the report was not printed");
        std::cout << markdown;
    }
    std::cerr << "contend compare: " << c.rows.size() << " compared, " << c.regressions << " regressions, "
              << c.improvements << " improvements, " << c.same << " same, " << c.noisy << " noisy; "
              << lab::suite_sentence(c) << "\n";
    return lab::has_regression(c) && !a.no_fail_on_regression ? exit_regression : 0;
}

struct history_args {
    std::string db_path = ".contend/history.db";
    std::string name_glob;  // "": every benchmark
    bool changes = false;
    std::string html_path;  // "": no page
    double p = 0.001;
    std::size_t min_segment = 3;
    std::string min_segment_text;  // as given: parse_whole_number
    bool min_segment_given = false;
    double min_magnitude_percent = 5;
};

// `contend history list`: one line per run, oldest first.
int run_history_list(const history_args& a) {
    const auto runs = read_history(a.db_path);
    for (const auto& r : runs) {
        const auto& c = r.run.context;
        std::printf("%lld  %s  %s  %s  %zu cells (%zu valid)  %s\n", static_cast<long long>(r.id), c.date.c_str(),
                    c.label.empty() ? "-" : c.label.c_str(), c.cpu_model.empty() ? "-" : c.cpu_model.c_str(),
                    r.run.cells.size(), r.run.valid_cells(), c.run_status.c_str());
    }
    std::printf("%zu %s in %s\n", runs.size(), runs.size() == 1 ? "run" : "runs",
                lab::history_store::printable(a.db_path).c_str());
    return 0;
}

struct import_args {
    std::string file, label, db_path;
};

// `contend history import FILE --label LABEL`: another machine's or program's run, into the
// history. The file is read whole and checked before the history is opened for writing, so
// a refused file leaves the history as it was; the append itself is one transaction.
int run_history_import(const import_args& a) {
    if (a.db_path == "-") throw std::invalid_argument("--db: the history cannot be standard output");
    // As for `contend bench --label`: a label travels through JSON, CSV, SQL and HTML.
    if (!lab::is_printable_utf8(a.label))
        throw std::invalid_argument("--label: give printable UTF-8 text, without control characters");
    if (!lab::history_store::is_database_uri(a.db_path)) lab::check_distinct({{"--db", a.db_path}}, {{"FILE", a.file}});
    try {
        lab::history_store::check_appendable(a.db_path);
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument("--db " + lab::history_store::printable(a.db_path) + ": " + e.what());
    }
    const lab::imported_run imported = lab::import_run_file(a.file, a.label);
    lab::throw_if_stopped(&stop_signal, "nothing was stored");
    lab::history_store store(a.db_path);
    const std::int64_t id = store.append(imported.run, &stop_signal);
    const std::string invalid =
        imported.skipped ? ", " + std::to_string(imported.skipped) + " invalid cells kept," : std::string();
    std::printf("imported %s (%s): %zu benchmarks%s as history run %lld labelled '%s' in %s\n", a.file.c_str(),
                imported.format.c_str(), imported.benchmarks, invalid.c_str(), static_cast<long long>(id),
                a.label.c_str(), lab::history_store::printable(a.db_path).c_str());
    // A signal that came while the commit ran: too late to store nothing, but still a stop.
    if (const int sig = stop_signal.load()) {
        const char* name = sigabbrev_np(sig);
        std::fprintf(stderr, "contend history: stopped by SIG%s after the run was stored\n", name ? name : "?");
        return 128 + sig;
    }
    return 0;
}

// `contend history [name-glob] --changes`: every change point of every benchmark; with
// --html FILE, also (or only) the page of every benchmark's series, from the same series.
int run_history_changes(history_args& a) {
    if (!(a.p > 0 && a.p < 1)) throw std::invalid_argument("--p: give a probability between 0 and 1");
    if (a.min_segment_given)
        a.min_segment = static_cast<std::size_t>(parse_whole_number("--min-segment", a.min_segment_text, 1, 1000000));
    if (!(a.min_magnitude_percent >= 0) || !std::isfinite(a.min_magnitude_percent))
        throw std::invalid_argument("--min-magnitude: give a percentage of 0 or more");
    std::string_view library;
    if (!a.html_path.empty()) {
        // A PostgreSQL URI is no file the page could overwrite.
        std::vector<lab::named_path> inputs;
        if (!lab::history_store::is_database_uri(a.db_path)) inputs.push_back({"--db", a.db_path});
        lab::check_distinct({{"--html", a.html_path}}, inputs);
        lab::check_output_path("--html", a.html_path);
        library = page_chart_library();
    }
    const auto runs = read_history(a.db_path);
    const lab::change_options options{a.p, a.min_segment, a.min_magnitude_percent / 100};
    // One computation for the page and the text: the page charts the change points printed.
    const auto series = lab::history_series(runs, a.name_glob, options);
    // Standard output may carry the page; the text then goes to standard error.
    FILE* text = a.html_path == "-" ? stderr : stdout;
    if (!a.html_path.empty()) {
        const std::string db_name = lab::history_store::printable(a.db_path);
        lab::write_output_file("--html", a.html_path,
                               lab::render_history_page(runs, series, {db_name, a.name_glob, options}, library));
        std::fprintf(text, "contend history: wrote %s (%zu %s over %zu %s)\n",
                     a.html_path == "-" ? "standard output" : a.html_path.c_str(), series.size(),
                     series.size() == 1 ? "benchmark" : "benchmarks", runs.size(), runs.size() == 1 ? "run" : "runs");
        if (!a.changes) return 0;
    }
    std::vector<lab::series_change> changes;
    for (const auto& s : series) changes.insert(changes.end(), s.changes.begin(), s.changes.end());
    std::set<std::string> benchmarks;
    for (const auto& c : changes) {
        // Names and labels from the history: escaped, so that a NUL does not cut the line.
        const std::string line = lab::message_text(c.name, std::string::npos) + ": " +
                                 lab::format_time_per_op(c.point.before_mean) + " -> " +
                                 lab::format_time_per_op(c.point.after_mean) + " (" +
                                 lab::format_change_percent(c.point.before_mean, c.point.after_mean) + ") between " +
                                 lab::message_text(c.label_before, std::string::npos) + " and " +
                                 lab::message_text(c.label_after, std::string::npos) + "\n";
        std::fputs(line.c_str(), text);
        benchmarks.insert(c.name);
    }
    std::fprintf(text, "%zu %s in %zu %s over %zu %s (p < %g, at least %zu runs a side, at least %g %%)\n",
                 changes.size(), changes.size() == 1 ? "change" : "changes", benchmarks.size(),
                 benchmarks.size() == 1 ? "benchmark" : "benchmarks", runs.size(), runs.size() == 1 ? "run" : "runs",
                 a.p, a.min_segment, a.min_magnitude_percent);
    return 0;
}

}  // namespace

// Standard output carries a command's result (the report, the list, the changes, the table):
// a write that failed there (a full disk, a file size limit, a closed pipe) fails the command
// with exit_output_failed, as a file that could not be written does, instead of exit 0 with
// the output cut short. A command that already failed keeps its status (and the message).
int standard_output_checked(const std::string& command, int code) {
    // stdio first (std::cout writes through it, synced): its errno is the reason.
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0;
    const int error = flush_failed ? errno : 0;
    std::cout.flush();
    if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return code;
    const std::string why = error != 0 ? std::string(": ") + std::strerror(error) : std::string();
    std::fprintf(stderr, "contend %s: cannot write standard output%s; what it printed is cut short or missing\n",
                 command.c_str(), why.c_str());
    return code == 0 ? exit_output_failed : code;
}

// Out of memory anywhere, even where an exception cannot pass (nlohmann::json's destructor
// allocates while it frees a large document, and is noexcept: a std::bad_alloc there was an
// abort, exit 134): say so and exit exit_out_of_memory. A reserve is freed first, so that
// writing the message cannot fail for memory too.
char* memory_reserve = nullptr;
const char* memory_command = "contend";

extern "C" void on_out_of_memory() {
    delete[] memory_reserve;
    memory_reserve = nullptr;
    const std::string message = std::string("contend ") + memory_command +
                                ": out of memory: the inputs (or the history) need more memory than this process "
                                "may use (see ulimit -v); stopped, no output half written\n";
    (void)!::write(STDERR_FILENO, message.data(), message.size());
    std::_Exit(exit_out_of_memory);
}

int main(int argc, char** argv) {
    // The hidden child mode of cell_runner.hpp: settings arrive on standard input.
    if (argc == 2 && std::string(argv[1]) == "__cell") return lab::cell_child_main();

    CLI::App app{"contend: the contention lab. Measures locks, atomics and their wait policies on this machine."};
    app.require_subcommand(1);
    app.set_version_flag("--version", "contend " + lab::version_text(), "Print the version and git commit, then exit");
    bench_args a;
    auto& o = a.options;
    auto* bench = app.add_subcommand("bench", "Run a suite of contention benchmarks");
    app.footer(exit_status_table);
    bench->footer(std::string("An output path '-' is standard output (the table then goes to standard error).\n\n") +
                  exit_status_table);
    bench->add_flag("--list", a.list, "List the suites and their contenders");
    bench->add_option("--suite", o.suite, "Suite to run")->capture_default_str();
    bench->add_option("--contenders", o.contenders, "Glob(s) of contenders (name or name/param:value), comma-separated")
        ->capture_default_str();
    bench->add_option("--workers", a.workers, "Worker counts, comma-separated, 1..4096 (default: the suite's)");
    bench->add_flag("--quick", a.quick, "Smoke run: 5 ms repetitions, 3 of them, workers 1 and 2");
    bench->add_option("--min-time", a.min_time_ms, "Minimum duration of one repetition, ms")->capture_default_str();
    bench->add_option("--reps", o.harness.repetitions, "Timed repetitions per cell, 1..1000")->capture_default_str();
    bench->add_option("--deadline", o.harness.deadline_s, "Deadline of one repetition, s (default 3; --full: 20)");
    bench->add_flag("--full", a.full,
                    "Every cell and every repetition: no stop at a small spread, no skip after a timeout, 20 s "
                    "deadlines");
    bench->add_option("--pin", o.harness.pin, "none | compact | spread | <cpu list>")->capture_default_str();
    bench->add_option("--json", a.json_path, "Write results as JSON here")->capture_default_str();
    bench->add_option("--csv", a.csv_path, "Also write results as CSV here");
    bench
        ->add_option("--db", a.db_path,
                     "History: an SQLite file, or a PostgreSQL database as postgresql://... (libpq URI)")
        ->capture_default_str();
    bench->add_flag("--no-history", a.no_history, "Do not append the run to the history database");
    bench->add_option("--label", o.label, "Label for the run (default: git describe)");
    bench->add_flag("--in-process", o.in_process, "Run cells in this process (no protection against hangs)");
    bench->add_flag("--one-cpu", o.harness.cotenant.one_cpu,
                    "Run every thread of each cell (workers, a pool's or a pipe's own threads, a server and wrk, "
                    "the busy loops) on one CPU, the first this process may use; takes no --pin");
    bench->add_option("--busy-loops", a.busy_loops,
                      "Run N background busy-loop processes beside each cell (0..64), started before its first "
                      "repetition and killed after its last (default 0)");
    bench->add_option("--busy-nice", a.busy_nice, "Nice level of the busy loops, -20..19 (default 19)");
    bench->add_flag("--interleave", o.interleave,
                    "Run the repetitions in rounds, one of every row per round, so that the rows compared sample "
                    "the same stretches of time (the server suite always does)");
    std::string disasm_suite, disasm_contender;
    auto* disasm = app.add_subcommand("disasm", "Show the instructions of a contender's hot loop, atomics marked");
    disasm->footer(exit_status_table);
    disasm->add_option("suite", disasm_suite, "Suite, e.g. counter")->required();
    disasm->add_option("contender", disasm_contender, "Contender, e.g. contend_mutex (hold: contend_mutex/cs_us:20)")
        ->required();
    lab::report_request report_request;
    std::string report_run_id;  // as given: parse_whole_number
    std::string report_output = ".contend/report.html";
    auto* report = app.add_subcommand("report", "Write one self-contained HTML page: a chart and a table per suite");
    report->footer(exit_status_table);
    auto* report_json =
        report->add_option("--json", report_request.json_path,
                           "Read a results file written by `contend bench --json` instead of the history");
    report
        ->add_option("--db", report_request.db_path,
                     "History: an SQLite file or a postgresql:// URI (opened read-only)")
        ->capture_default_str();
    report->add_option("--run", report_run_id, "Show this history run only (default: the newest run of each suite)")
        ->excludes(report_json);
    report->add_option("-o,--output", report_output, "Write the page here ('-': standard output)")
        ->capture_default_str();
    compare_args cmp;
    auto* compare = app.add_subcommand("compare", "Compare a baseline run with a test run: regressions, improvements");
    compare->footer(
        "Inputs: `contend bench --json` files or Google Benchmark JSON (with repetitions or aggregates only). "
        "The Markdown report goes to standard output. A regression (exit 1) is at least one regressed benchmark, or "
        "the whole suite regressed (geometric mean past the threshold, sign test across benchmarks).\n\n" +
        std::string(exit_status_table));
    compare->add_option("baseline", cmp.baseline, "The baseline results file (with --db: a label)")->required();
    compare->add_option("test", cmp.test, "The results file to judge against it (with --db: a label)")->required();
    compare->add_option("--db", cmp.db_path,
                        "Read baseline and test as labels in this history (the newest run of each; read-only)");
    compare->add_option("--threshold", cmp.threshold_percent, "Relative change of medians that counts, percent")
        ->capture_default_str();
    compare->add_option("--noise", cmp.noise_ns, "Absolute change of medians that counts, ns")->capture_default_str();
    compare->add_option("--alpha", cmp.alpha, "Significance level of the U test")->capture_default_str();
    compare->add_option("--markdown", cmp.markdown_path, "Also write the Markdown report here ('-': standard output)");
    compare->add_option("--json", cmp.json_path, "Also write the comparison as JSON here ('-': standard output)");
    compare->add_option("--html", cmp.html_path,
                        "Also write the report as one self-contained HTML page here, with a chart of the evidence for "
                        "each regression and improvement ('-': standard output)");
    compare->add_flag("--no-fail-on-regression", cmp.no_fail_on_regression, "Exit 0 even when a regression is found");
    history_args hist;
    auto* history = app.add_subcommand("history", "The runs in the history, and where each benchmark changed");
    history->footer(
        "contend history import FILE --label LABEL: store a lab or Google Benchmark JSON file as a run. "
        "contend history list: one line per run. contend history [name-glob] --changes: each benchmark's change "
        "points over the runs (E-divisive means, Welch's t-test), each printed between the labels of the runs that "
        "bracket it. contend history [name-glob] --html FILE: one HTML page of the runs, the changes and a chart of "
        "each benchmark's series (with --changes, the changes are printed too). Changes found or not, "
        "the status is 0.\n\n" +
        std::string(exit_status_table));
    history->add_option("--db", hist.db_path, "History: an SQLite file or a postgresql:// URI (opened read-only)")
        ->capture_default_str();
    history->add_option("name-glob", hist.name_glob,
                        "Only the benchmarks whose names match (fnmatch, e.g. 'counter/*')");
    history->add_flag("--changes", hist.changes, "Print each benchmark's change points");
    history->add_option("--html", hist.html_path,
                        "Write one self-contained HTML page here: the runs, the changes, a chart of each benchmark's "
                        "series with its change points ('-': standard output)");
    history->add_option("--p", hist.p, "A change must have a t-test p below this")->capture_default_str();
    history->add_option("--min-segment", hist.min_segment_text, "Runs on each side of a change, at least (default 3)");
    history->add_option("--min-magnitude", hist.min_magnitude_percent, "Relative change of means, at least, percent")
        ->capture_default_str();
    import_args imp;
    auto* history_import = history->add_subcommand(
        "import", "Store a results file (lab or Google Benchmark JSON) as a run of the history");
    history_import
        ->add_option("file", imp.file, "`contend bench --json` output or Google Benchmark --benchmark_out JSON")
        ->required();
    history_import->add_option("--label", imp.label, "The run's label (a commit, a build): what compare --db names")
        ->required();
    history_import
        ->add_option("--db", hist.db_path, "History: an SQLite file (created when missing) or a postgresql:// URI")
        ->capture_default_str();
    history_import->footer(exit_status_table);
    auto* history_list = history->add_subcommand("list", "One line per run: id, date, label, CPU, cells, status");
    history_list->footer(exit_status_table);
    history_list->add_option("--db", hist.db_path, "History: an SQLite file or a postgresql:// URI (opened read-only)")
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; any other parse error is bad usage, exit 2 for
        // every subcommand (CLI11's own codes, 105-110, would mean nothing to a script).
        return app.exit(e) == 0 ? 0 : exit_usage;
    }
    a.deadline_given = bench->count("--deadline") > 0;
    hist.min_segment_given = history->count("--min-segment") > 0;
    a.busy_loops_given = bench->count("--busy-loops") > 0;
    a.busy_nice_given = bench->count("--busy-nice") > 0;
    install_stop_handlers();
    // Every command but bench, which writes what it measured, stops without writing.
    if (!bench->parsed()) lab::stop_outputs_on(&stop_signal);
    const std::string command = app.get_subcommands().front()->get_name();
    memory_command = command.c_str();
    memory_reserve = new char[1 << 20];
    std::set_new_handler(on_out_of_memory);
    const int code = [&]() -> int {
        try {
            // Every --db given or defaulted that will be used, before anything else is done.
            if (bench->parsed() && !a.list) check_db_option(a.db_path);
            if (report->parsed() && report_request.json_path.empty()) check_db_option(report_request.db_path);
            if (compare->parsed() && compare->count("--db")) check_db_option(cmp.db_path);
            if (history->parsed()) check_db_option(hist.db_path);
            if (bench->parsed()) return run_bench(a);
            if (disasm->parsed()) return run_disasm(disasm_suite, disasm_contender);
            if (compare->parsed()) return run_compare(cmp);
            if (history_import->parsed()) {
                if (hist.changes || !hist.name_glob.empty() || !hist.html_path.empty())
                    throw std::invalid_argument("import takes neither a name glob, --changes nor --html");
                imp.db_path = hist.db_path;
                return run_history_import(imp);
            }
            if (history_list->parsed()) {
                if (hist.changes || !hist.name_glob.empty() || !hist.html_path.empty())
                    throw std::invalid_argument("list takes neither a name glob, --changes nor --html");
                return run_history_list(hist);
            }
            if (history->parsed()) {
                if (!hist.changes && hist.html_path.empty())
                    throw std::invalid_argument("say what to show: `contend history list`, --changes or --html FILE");
                return run_history_changes(hist);
            }
            if (report->parsed()) {
                if (report->count("--run"))
                    report_request.run_id =
                        parse_whole_number("--run", report_run_id, 1, std::numeric_limits<std::int64_t>::max());
                return run_report(report_request, report_output);
            }
        } catch (const std::invalid_argument& e) {
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return exit_usage;
        } catch (const lab::input_error& e) {
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return exit_usage;
        } catch (const lab::output_write_error& e) {
            // The paths were checked before anything ran: the write itself failed.
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return exit_output_failed;
        } catch (const lab::output_error& e) {
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return exit_usage;
        } catch (const lab::interrupted& e) {
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return 128 + e.signal();
        } catch (const std::bad_alloc&) {
            // Before std::exception: "std::bad_alloc" says nothing a person can act on, and exit 1
            // is compare's "regression". Outputs are written whole to a temporary file and renamed,
            // so none is left half written.
            std::fprintf(
                stderr,
                "contend %s: out of memory: the inputs (or the history) need more memory than this process may "
                "use (see ulimit -v); stopped, no output half written\n",
                command.c_str());
            return exit_out_of_memory;
        } catch (const std::exception& e) {
            // import's inputs are checked before the history is opened for writing: what fails
            // after that is the history (exit 1). Every other command only reads, and what it
            // could not read is its input (exit 2); never 1, compare's "regression".
            std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
            return history_import->parsed() ? exit_regression : exit_usage;
        }
        return 0;
    }();
    return standard_output_checked(command, code);
}
