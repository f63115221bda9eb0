// `contend compare`: its options, and the comparison of two runs it writes.
#include <charconv>
#include <iostream>
#include <memory>
#include <optional>

#include "analyze/compare.hpp"
#include "analyze/history_series.hpp"
#include "cli/cli.hpp"
#include "pages/html_page.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"

namespace contend::lab::cli {
namespace {

struct compare_args {
    std::string baseline, test, markdown_path, json_path, html_path;
    std::string db_path;  // "": baseline and test are files; otherwise labels in this history
    double threshold_percent = 5;
    double noise_ns = 0.5;
    double alpha = 0.05;
    bool no_fail_on_regression = false;
    bool no_fail_on_undecided = false;
};

int run_compare(const compare_args& a) {
    const bool from_history = !a.db_path.empty();
    std::vector<named_path> inputs;
    if (!from_history) inputs = {{"baseline", a.baseline}, {"test", a.test}};
    else
        for (const std::string& file : history_store::files_of(a.db_path)) inputs.push_back({"--db", file});
    std::vector<named_path> outputs;
    if (!a.markdown_path.empty()) outputs.push_back({"--markdown", a.markdown_path});
    if (!a.json_path.empty()) outputs.push_back({"--json", a.json_path});
    if (!a.html_path.empty()) outputs.push_back({"--html", a.html_path});
    check_distinct(outputs, inputs);
    for (const auto& out : outputs) check_output_path(out.what, out.path);
    const std::string_view library = a.html_path.empty() ? std::string_view() : page_chart_library();
    compare_options options;
    options.threshold = a.threshold_percent / 100;
    options.noise_floor_ns = a.noise_ns;
    options.alpha = a.alpha;
    options.fail_on_undecided = !a.no_fail_on_undecided;
    // From a history: read once, so both labels, the edges and the page come from one snapshot.
    std::vector<stored_run> runs;
    if (from_history) runs = read_history(a.db_path);
    const auto read = [&](const std::string& what) {
        return from_history ? comparison_input_from_runs(runs, history_store::printable(a.db_path), what)
                            : read_comparison_input(what, &stop_signal);
    };
    const auto base = read(a.baseline);
    const auto test = read(a.test);
    // From a history, the edge detector too: does a change point fall between the two runs?
    // Found as `contend history --changes` finds them, with its defaults.
    const change_options edge_options;
    std::optional<edge_evidence> edges;
    if (from_history)
        edges =
            edges_between(runs, newest_run_labelled(runs, a.baseline), newest_run_labelled(runs, a.test), edge_options);
    const auto c = compare_inputs(base, test, options, edges ? &*edges : nullptr, edge_options);
    // The options first and "--" before the inputs: a file (or label) named "-b.json" is then
    // an input, not an option. Numbers in their shortest exact form, so the repro repeats them.
    const auto number = [](double v) {
        char text[64];
        const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
        return ec == std::errc() ? std::string(text, end) : std::string("nan");
    };
    std::string repro = "contend compare";
    if (from_history) repro += " --db " + shell_word(history_store::printable(a.db_path));
    repro += " --threshold " + number(a.threshold_percent) + " --noise " + number(a.noise_ns) + " --alpha " +
             number(a.alpha);
    if (a.no_fail_on_undecided) repro += " --no-fail-on-undecided";
    const bool dash_input = a.baseline.starts_with("-") || a.test.starts_with("-");
    repro += std::string(dash_input ? " --" : "") + " " + shell_word(a.baseline) + " " + shell_word(a.test);
    const std::string markdown = comparison_to_markdown(c, repro);
    throw_if_stopped(&stop_signal, "nothing was written");
    // All or nothing: each file goes to its temporary file first; none replaces its target
    // unless every output was written (exit 4 otherwise, every previous file kept).
    output_set files;
    if (!a.markdown_path.empty()) files.add("--markdown", a.markdown_path, markdown);
    if (!a.json_path.empty()) files.add("--json", a.json_path, comparison_to_json(c));
    if (!a.html_path.empty()) {
        // The page's evidence: from a history, each benchmark's series (change points found
        // as the edge detector found them) and the two runs read; from files, their repetitions.
        compare_page_evidence evidence{&base, &test, nullptr, 0, 0};
        std::vector<benchmark_history> series;
        if (from_history) {
            series = history_series(runs, "", edge_options);
            evidence = {nullptr, nullptr, &series, newest_run_labelled(runs, a.baseline),
                        newest_run_labelled(runs, a.test)};
        }
        files.add("--html", a.html_path, render_compare_page(c, repro, evidence, library));
    }
    files.commit();
    if (a.markdown_path != "-" && a.json_path != "-" && a.html_path != "-") {
        throw_if_stopped(&stop_signal, "the report was not printed");
        std::cout << markdown;
    }
    std::cerr << "contend compare: " << c.rows.size() << " compared, " << c.regressions << " regressions, "
              << c.improvements << " improvements, " << c.same << " same, " << c.noisy << " noisy, " << c.undecided
              << " undecided; " << suite_sentence(c) << "\n"
              << "contend compare: " << gate_sentence(c)
              << (gate_failures(c).empty() || !a.no_fail_on_regression ? "" : " (--no-fail-on-regression: exit 0)")
              << "\n";
    return !gate_failures(c).empty() && !a.no_fail_on_regression ? exit_regression : 0;
}

}  // namespace

command add_compare(CLI::App& app) {
    auto a = std::make_shared<compare_args>();
    auto& cmp = *a;
    auto* compare = app.add_subcommand("compare", "Compare a baseline run with a test run: regressions, improvements");
    compare->footer(
        "Inputs: `contend bench --json` files or Google Benchmark JSON (with repetitions or aggregates only). "
        "The Markdown report goes to standard output. The gate fails (exit 1) on at least one regressed benchmark, "
        "the whole suite regressed (geometric mean past the threshold, sign test across benchmarks), a benchmark "
        "undecided and slower (every repetition slower, too few repetitions for the U test to decide), nothing "
        "compared, or a cell the baseline measured that the test could not (timed out, crashed).\n\n" +
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
    compare->add_flag("--no-fail-on-regression", cmp.no_fail_on_regression,
                      "Exit 0 whatever the gate finds (it is still reported)");
    compare->add_flag("--no-fail-on-undecided", cmp.no_fail_on_undecided,
                      "A benchmark undecided and slower (too few repetitions for the U test) is reported but does not "
                      "fail the gate");
    return {compare, [compare, a] {
                if (compare->count("--db")) check_db_option(a->db_path);
                return run_compare(*a);
            }};
}

}  // namespace contend::lab::cli
