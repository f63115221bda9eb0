// `contend disasm` and `contend report`: their options, and the calls they make.
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>

#include "cli/cli.hpp"
#include "measure/machine.hpp"
#include "pages/report.hpp"
#include "run/runner.hpp"
#include "store/output_file.hpp"
#include "suites/suites.hpp"
#include "tools/disasm/disasm.hpp"

namespace contend::lab::cli {
namespace {

int run_disasm(const std::string& suite_name, const std::string& contender_id) {
    const suite* s = find_suite(suite_name);
    if (!s) {
        std::fprintf(stderr, "contend disasm: unknown suite '%s'\n", suite_name.c_str());
        return exit_usage;
    }
    for (const auto& c : s->contenders) {
        if (c.id() != contender_id && !(c.params.empty() && c.name == contender_id)) continue;
        const auto d = disassemble_run(self_executable(), c.workload_type);
        std::cout << d.listing << "\n"
                  << suite_name << "/" << c.id() << ": " << d.atomic_instructions << " atomic instruction"
                  << (d.atomic_instructions == 1 ? "" : "s") << ", " << d.calls
                  << " call(s) out of the loop (slow paths, helpers). Built with: " << read_build_flags() << "\n";
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

int run_report(const report_request& request, const std::string& output) {
    std::vector<named_path> inputs;  // a PostgreSQL URI is no file that -o could overwrite
    if (!request.json_path.empty()) inputs.push_back({"--json", request.json_path});
    else
        for (const std::string& file : history_store::files_of(request.db_path)) inputs.push_back({"--db", file});
    check_distinct({{"-o", output}}, inputs);
    check_output_path("-o", output);
    const auto sources = load_report_sources(request);
    const std::string_view library = chart_library_bundle();
    if (library.empty()) {
        std::fprintf(stderr,
                     "contend report: the charting library Chart.js was not built into this binary (%.*s was "
                     "missing at build time). Run scripts/setup.sh, then build again.\n",
                     static_cast<int>(chart_library_path().size()), chart_library_path().data());
        return exit_usage;
    }
    write_output_file("-o", output, render_report(sources, library));
    std::size_t cells = 0;
    for (const auto& s : sources) cells += s.run.cells.size();
    (output == "-" ? std::cerr : std::cout)
        << "contend report: wrote " << (output == "-" ? "standard output" : output) << " (" << cells << " cells from "
        << sources.size() << (sources.size() == 1 ? " run" : " runs") << ")\n";
    return 0;
}

struct report_args {
    report_request request;
    std::string run_id;  // as given: parse_whole_number
    std::string output = ".contend/report.html";
};

}  // namespace

command add_disasm(CLI::App& app) {
    auto names = std::make_shared<std::pair<std::string, std::string>>();
    auto* disasm = app.add_subcommand("disasm", "Show the instructions of a contender's hot loop, atomics marked");
    disasm->footer(exit_status_table);
    disasm->add_option("suite", names->first, "Suite, e.g. counter")->required();
    disasm->add_option("contender", names->second, "Contender, e.g. contend_mutex (hold: contend_mutex/cs_us:20)")
        ->required();
    return {disasm, [names] { return run_disasm(names->first, names->second); }};
}

command add_report(CLI::App& app) {
    auto a = std::make_shared<report_args>();
    auto* report = app.add_subcommand("report", "Write one self-contained HTML page: a chart and a table per suite");
    report->footer(exit_status_table);
    auto* report_json = report->add_option(
        "--json", a->request.json_path, "Read a results file written by `contend bench --json` instead of the history");
    report->add_option("--db", a->request.db_path, "History: an SQLite file or a postgresql:// URI (opened read-only)")
        ->capture_default_str();
    report->add_option("--run", a->run_id, "Show this history run only (default: the newest run of each suite)")
        ->excludes(report_json);
    report->add_option("-o,--output", a->output, "Write the page here ('-': standard output)")->capture_default_str();
    return {report, [report, a] {
                if (a->request.json_path.empty()) check_db_option(a->request.db_path);
                if (report->count("--run"))
                    a->request.run_id =
                        parse_whole_number("--run", a->run_id, 1, std::numeric_limits<std::int64_t>::max());
                a->request.stop = &stop_signal;
                return run_report(a->request, a->output);
            }};
}

}  // namespace contend::lab::cli
