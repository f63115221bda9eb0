// `contend history`, `history import` and `history list`: their options, and what each
// reads, stores or prints.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "analyze/history_import.hpp"
#include "analyze/history_series.hpp"
#include "cli/cli.hpp"
#include "pages/html_page.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "store/results_io.hpp"
#include "text/numbers.hpp"
#include "text/utf8.hpp"

namespace contend::lab::cli {
namespace {

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

// A field of the history as one piece of a line: escaped (message_text), so that what an
// imported file put there (ESC, U+202E, a newline, a NUL) cannot drive the terminal, reverse
// or cut the line, or fake another; "-" when empty.
std::string list_field(const std::string& text) { return text.empty() ? "-" : message_text(text, std::string::npos); }

// `contend history list`: one line per run, oldest first. A stop signal ends it between two.
int run_history_list(const history_args& a) {
    const auto runs = read_history(a.db_path);
    for (const auto& r : runs) {
        throw_if_stopped(&stop_signal, "the list was cut short");
        const auto& c = r.run.context;
        std::printf("%lld  %s  %s  %s  %zu cells (%zu valid)  %s\n", static_cast<long long>(r.id),
                    list_field(c.date).c_str(), list_field(c.label).c_str(), list_field(c.cpu_model).c_str(),
                    r.run.cells.size(), r.run.valid_cells(), list_field(c.run_status).c_str());
    }
    std::printf("%zu %s in %s\n", runs.size(), runs.size() == 1 ? "run" : "runs",
                history_store::printable(a.db_path).c_str());
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
    if (!is_printable_utf8(a.label))
        throw std::invalid_argument("--label: give printable UTF-8 text, without control characters");
    if (!history_store::is_database_uri(a.db_path)) check_distinct({{"--db", a.db_path}}, {{"FILE", a.file}});
    try {
        history_store::check_appendable(a.db_path, &stop_signal);
    } catch (const interrupted&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument("--db " + history_store::printable(a.db_path) + ": " + e.what());
    }
    const imported_run imported = import_run_file(a.file, a.label, &stop_signal);
    throw_if_stopped(&stop_signal, "nothing was stored");
    history_store store(a.db_path, history_access::read_write, &stop_signal);
    const std::int64_t id = store.append(imported.run, &stop_signal);
    const std::string invalid =
        imported.skipped ? ", " + std::to_string(imported.skipped) + " invalid cells kept," : std::string();
    std::printf("imported %s (%s): %zu benchmarks%s as history run %lld labelled '%s' in %s\n", a.file.c_str(),
                imported.format.c_str(), imported.benchmarks, invalid.c_str(), static_cast<long long>(id),
                a.label.c_str(), history_store::printable(a.db_path).c_str());
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
        std::vector<named_path> inputs;
        for (const std::string& file : history_store::files_of(a.db_path)) inputs.push_back({"--db", file});
        check_distinct({{"--html", a.html_path}}, inputs);
        check_output_path("--html", a.html_path);
        library = page_chart_library();
    }
    const auto runs = read_history(a.db_path);
    const change_options options{a.p, a.min_segment, a.min_magnitude_percent / 100};
    // One computation for the page and the text: the page charts the change points printed.
    const auto series = history_series(runs, a.name_glob, options);
    throw_if_stopped(&stop_signal, "nothing was printed or written");
    // Standard output may carry the page; the text then goes to standard error.
    FILE* text = a.html_path == "-" ? stderr : stdout;
    if (!a.html_path.empty()) {
        const std::string db_name = history_store::printable(a.db_path);
        write_output_file("--html", a.html_path,
                          render_history_page(runs, series, {db_name, a.name_glob, options}, library));
        std::fprintf(text, "contend history: wrote %s (%zu %s over %zu %s)\n",
                     a.html_path == "-" ? "standard output" : a.html_path.c_str(), series.size(),
                     series.size() == 1 ? "benchmark" : "benchmarks", runs.size(), runs.size() == 1 ? "run" : "runs");
        if (!a.changes) return 0;
    }
    std::vector<series_change> changes;
    for (const auto& s : series) changes.insert(changes.end(), s.changes.begin(), s.changes.end());
    std::set<std::string> benchmarks;
    for (const auto& c : changes) {
        // Names and labels from the history: escaped, so that a NUL does not cut the line.
        const std::string line = message_text(c.name, std::string::npos) + ": " +
                                 format_time_per_op(c.point.before_mean) + " -> " +
                                 format_time_per_op(c.point.after_mean) + " (" +
                                 format_change_percent(c.point.before_mean, c.point.after_mean) + ") between " +
                                 message_text(c.label_before, std::string::npos) + " and " +
                                 message_text(c.label_after, std::string::npos) + "\n";
        std::fputs(line.c_str(), text);
        benchmarks.insert(c.name);
    }
    std::fprintf(text, "%zu %s in %zu %s over %zu %s (p < %g, at least %zu runs a side, at least %g %%)\n",
                 changes.size(), changes.size() == 1 ? "change" : "changes", benchmarks.size(),
                 benchmarks.size() == 1 ? "benchmark" : "benchmarks", runs.size(), runs.size() == 1 ? "run" : "runs",
                 a.p, a.min_segment, a.min_magnitude_percent);
    std::size_t shared = 0, shared_benchmarks = 0;
    for (const auto& s : series) {
        shared += s.shared_runs.size();
        shared_benchmarks += s.shared_runs.empty() ? 0 : 1;
    }
    if (shared > 0)
        std::fprintf(text,
                     "%zu %s of %zu %s left out: measured beside a co-tenant (other processes took more than "
                     "5 %% of the cell's CPUs), so no change is reported at them\n",
                     shared, shared == 1 ? "cell" : "cells", shared_benchmarks,
                     shared_benchmarks == 1 ? "benchmark" : "benchmarks");
    return 0;
}

}  // namespace

std::vector<command> add_history(CLI::App& app) {
    auto a = std::make_shared<history_args>();
    auto imp = std::make_shared<import_args>();
    auto& hist = *a;
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
    auto* history_import = history->add_subcommand(
        "import", "Store a results file (lab or Google Benchmark JSON) as a run of the history");
    history_import
        ->add_option("file", imp->file, "`contend bench --json` output or Google Benchmark --benchmark_out JSON")
        ->required();
    history_import->add_option("--label", imp->label, "The run's label (a commit, a build): what compare --db names")
        ->required();
    history_import
        ->add_option("--db", hist.db_path, "History: an SQLite file (created when missing) or a postgresql:// URI")
        ->capture_default_str();
    history_import->footer(exit_status_table);
    auto* history_list = history->add_subcommand("list", "One line per run: id, date, label, CPU, cells, status");
    history_list->footer(exit_status_table);
    history_list->add_option("--db", hist.db_path, "History: an SQLite file or a postgresql:// URI (opened read-only)")
        ->capture_default_str();
    const auto no_selection = [a](const char* what) {
        if (a->changes || !a->name_glob.empty() || !a->html_path.empty())
            throw std::invalid_argument(std::string(what) + " takes neither a name glob, --changes nor --html");
    };
    // import checks its inputs before it opens the history for writing: what fails after that
    // is the history (exit 1).
    command import_command{history_import,
                           [a, imp, no_selection] {
                               check_db_option(a->db_path);
                               no_selection("import");
                               imp->db_path = a->db_path;
                               return run_history_import(*imp);
                           },
                           exit_regression};
    command list_command{history_list, [a, no_selection] {
                             check_db_option(a->db_path);
                             no_selection("list");
                             return run_history_list(*a);
                         }};
    command changes_command{
        history, [a, history] {
            check_db_option(a->db_path);
            a->min_segment_given = history->count("--min-segment") > 0;
            if (!a->changes && a->html_path.empty())
                throw std::invalid_argument("say what to show: `contend history list`, --changes or --html FILE");
            return run_history_changes(*a);
        }};
    return {import_command, list_command, changes_command};
}

}  // namespace contend::lab::cli
