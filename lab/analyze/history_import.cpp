// Importing a results file into the history (history_import.hpp). The compare reader checks
// the file first; only then is it read again for what the history keeps beyond a series of
// times: a lab file's whole run, a Google Benchmark file's context.
#include "analyze/history_import.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <limits>
#include <new>
#include <set>

#include "results/statistics.hpp"
#include "store/interrupted.hpp"
#include "store/results_io.hpp"

namespace contend::lab {
namespace {

using nlohmann::json;

constexpr std::string_view gb_suite_fallback = "google_benchmark";

// The context's text field `key`, "" when absent or not text (the compare reader has
// already refused a context that is not an object).
std::string context_text(const json& context, const char* key) {
    const auto it = context.find(key);
    return it != context.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "BM_Lock/64/threads:4" -> {"BM_Lock/64", 4}; a name without a threads part runs on one
// thread, as Google Benchmark does by default.
std::pair<std::string, std::int32_t> split_threads(const std::string& run_name) {
    constexpr std::string_view marker = "/threads:";
    const std::size_t at = run_name.rfind(marker);
    if (at == std::string::npos || at == 0) return {run_name, 1};
    const char* first = run_name.data() + at + marker.size();
    const char* last = run_name.data() + run_name.size();
    std::int32_t threads = 0;
    const auto [end, ec] = std::from_chars(first, last, threads);
    if (ec != std::errc() || end != last || threads < 1) return {run_name, 1};
    return {run_name.substr(0, at), threads};
}

// The program's file name as a suite: the part after the last '/', never empty and never
// holding a '/', which would make a row name that splits differently; lower case, spaces and
// '-' as '_', as every part of a row name (docs/lab.md: "./Lock Bench" is "lock_bench").
std::string suite_of(const json& context) {
    std::string path = context_text(context, "executable");
    const std::size_t slash = path.find_last_of("/\\");
    if (slash != std::string::npos) path.erase(0, slash + 1);
    if (path.empty() || path == "." || path == "..") return std::string(gb_suite_fallback);
    return row_name_part(std::move(path));
}

imported_run from_lab(std::string_view text, const std::string& source, const comparison_input& checked,
                      const std::atomic<int>* stop) {
    imported_run out;
    out.format = checked.format;
    try {
        out.run = run_from_json(text, stop);
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const interrupted&) {
        throw;
    } catch (const std::exception& e) {
        throw input_error(input_error_kind::bad_shape, source, "", e.what());
    }
    out.benchmarks = checked.benchmarks.size();
    out.skipped = checked.skipped.size();
    return out;
}

imported_run from_google_benchmark(std::string_view text, const std::string& source, const comparison_input& checked,
                                   const std::atomic<int>* stop) {
    // Already parsed once without error: this cannot throw for the same text (but for a stop).
    const json doc = parse_json_refusing_duplicate_keys(text, stop);
    static const json no_context = json::object();
    const auto found = doc.find("context");
    const json& context = found != doc.end() && found->is_object() ? *found : no_context;

    imported_run out;
    out.format = checked.format;
    machine_context& c = out.run.context;
    c.date = checked.date;
    c.cpu_model = checked.cpu_model;
    c.version = checked.version;
    c.host_name = context_text(context, "host_name");
    c.library_build_type = context_text(context, "library_build_type");
    const auto cpus = context.find("num_cpus");
    if (cpus != context.end() && cpus->is_number_integer()) {
        const auto n = cpus->get<std::int64_t>();
        if (n > 0 && n <= std::numeric_limits<std::int32_t>::max()) c.logical_cpus = static_cast<std::int32_t>(n);
    }

    const std::string suite = suite_of(context);
    std::set<std::string> names;
    for (const benchmark_series& s : checked.benchmarks) {
        stop_if_asked(stop, source);
        cell_result cell;
        cell.suite = suite;
        auto [contender, threads] = split_threads(s.name);
        cell.contender = std::move(contender);
        cell.workers = threads;
        cell.operation = "iteration";
        cell.ns_per_op = s.samples_ns;
        cell.repetitions = static_cast<std::int32_t>(s.samples_ns.size());
        if (s.samples_ns.empty()) {
            cell.median_ns = cell.p25_ns = cell.p75_ns = s.median_ns;
            cell.detail = s.note;
        } else {
            cell.median_ns = s.median_ns;
            cell.p25_ns = quantile(s.samples_ns, 0.25);
            cell.p75_ns = quantile(s.samples_ns, 0.75);
            cell.modal = find_modes(s.samples_ns).modal;
        }
        cell.cpu_ns_per_op = not_measured;  // a series carries wall time only
        const std::string name = cell.name();
        if (!names.insert(name).second)
            throw input_error(input_error_kind::duplicate, source, s.name,
                              "makes the row name '" + name + "', as another benchmark of the file does " +
                                  "(row names are lower case, spaces and '-' become '_')");
        out.run.cells.push_back(std::move(cell));
    }
    out.benchmarks = out.run.cells.size();
    return out;
}

}  // namespace

imported_run import_run(std::string_view text, const std::string& source, const std::string& label,
                        const std::atomic<int>* stop) {
    if (label.empty()) throw input_error(source, "", "give the run a label (--label): an empty one names nothing");
    const comparison_input checked = parse_comparison_input(text, source, stop);
    imported_run out;
    try {
        out = checked.format == "contend-lab" ? from_lab(text, source, checked, stop)
                                              : from_google_benchmark(text, source, checked, stop);
    } catch (const interrupted&) {
        stop_if_asked(stop, source);  // again, naming the file
        throw;
    }
    out.run.context.label = label;
    return out;
}

imported_run import_run_file(const std::string& path, const std::string& label, const std::atomic<int>* stop) {
    return import_run(read_input_file(path, stop), path, label, stop);
}

}  // namespace contend::lab
