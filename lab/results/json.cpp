#include "results/results_io.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace contend::lab {

using nlohmann::json;

json context_to_json(const machine_context& c) {
    return {{"date", c.date},
            {"label", c.label},
            {"host_name", c.host_name},
            {"cpu_model", c.cpu_model},
            {"num_cpus", c.logical_cpus},
            {"cpu_list", c.cpu_list},
            {"kernel", c.kernel},
            {"compiler", c.compiler},
            {"build_flags", c.build_flags},
            {"governor", c.governor},
            {"wait_backend", c.wait_backend},
            {"timer_slack_ns", c.timer_slack_ns},
            {"nanosleep_1ns_us", c.nanosleep_1ns_us},
            {"library_build_type", "release"}};
}

json cell_to_json(const cell_result& cell) {
    json params = json::object();
    for (const auto& [k, v] : cell.params) params[k] = v;
    json j = {{"name", cell.name()},
              {"run_name", cell.name()},
              {"run_type", "aggregate"},
              {"aggregate_name", "median"},
              {"repetitions", cell.repetitions},
              {"threads", cell.workers},
              {"real_time", cell.median_ns},
              {"cpu_time", cell.cpu_ns_per_op},
              {"time_unit", "ns"},
              {"iterations", cell.ops_per_worker},
              {"suite", cell.suite},
              {"contender", cell.contender},
              {"params", params},
              {"workers", cell.workers},
              {"p25", cell.p25_ns},
              {"p75", cell.p75_ns},
              {"samples", cell.ns_per_op},
              {"cpu_ns_per_op", cell.cpu_ns_per_op},
              {"valid", cell.valid()},
              {"status", cell.status},
              {"detail", cell.detail},
              {"affinity", cell.affinity},
              {"oversubscribed", cell.oversubscribed},
              {"has_fairness", cell.has_fairness}};
    if (cell.has_fairness) {
        j["min_share"] = cell.min_share;
        j["max_share"] = cell.max_share;
    }
    return j;
}

namespace {

// A field of an object, or an error naming it and what the object is.
const json& field(const json& j, const char* key, const char* what) {
    if (!j.is_object()) throw std::runtime_error(std::string(what) + " is not a JSON object");
    const auto it = j.find(key);
    if (it == j.end()) throw std::runtime_error(std::string(what) + " lacks '" + key + "'");
    return *it;
}

double number_or_nan(const json& v) {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    return v.get<double>();
}

// Runs `read`, turning a type error of nlohmann::json into one that names `what`.
template <typename F>
auto reading(const char* what, F read) {
    try {
        return read();
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("malformed ") + what + ": " + e.what());
    }
}

}  // namespace

machine_context context_from_json(const json& j) {
    constexpr const char* what = "run context";
    return reading(what, [&] {
        machine_context c;
        c.date = field(j, "date", what).get<std::string>();
        c.label = field(j, "label", what).get<std::string>();
        c.host_name = field(j, "host_name", what).get<std::string>();
        c.cpu_model = field(j, "cpu_model", what).get<std::string>();
        c.logical_cpus = field(j, "num_cpus", what).get<std::int32_t>();
        c.cpu_list = field(j, "cpu_list", what).get<std::string>();
        c.kernel = field(j, "kernel", what).get<std::string>();
        c.compiler = field(j, "compiler", what).get<std::string>();
        c.build_flags = field(j, "build_flags", what).get<std::string>();
        c.governor = field(j, "governor", what).get<std::string>();
        c.wait_backend = field(j, "wait_backend", what).get<std::string>();
        c.timer_slack_ns = field(j, "timer_slack_ns", what).get<std::int64_t>();
        c.nanosleep_1ns_us = number_or_nan(field(j, "nanosleep_1ns_us", what));
        return c;
    });
}

cell_result cell_from_json(const json& j) {
    constexpr const char* what = "result row";
    return reading(what, [&] {
        auto get = [&](const char* key) -> const json& { return field(j, key, what); };
        cell_result c;
        c.suite = get("suite").get<std::string>();
        c.contender = get("contender").get<std::string>();
        for (const auto& [k, v] : get("params").items()) c.params.emplace_back(k, v.get<std::string>());
        c.workers = get("workers").get<std::int32_t>();
        c.status = get("status").get<std::string>();
        c.detail = get("detail").get<std::string>();
        c.ops_per_worker = get("iterations").get<std::uint64_t>();
        c.repetitions = get("repetitions").get<std::int32_t>();
        const json& samples = get("samples");
        if (!samples.is_array()) throw std::runtime_error("result row: 'samples' is not an array");
        for (const json& s : samples) c.ns_per_op.push_back(number_or_nan(s));
        c.median_ns = number_or_nan(get("real_time"));
        c.p25_ns = number_or_nan(get("p25"));
        c.p75_ns = number_or_nan(get("p75"));
        c.cpu_ns_per_op = number_or_nan(get("cpu_ns_per_op"));
        c.has_fairness = get("has_fairness").get<bool>();
        if (c.has_fairness) {
            c.min_share = number_or_nan(get("min_share"));
            c.max_share = number_or_nan(get("max_share"));
        }
        c.affinity = get("affinity").get<std::string>();
        c.oversubscribed = get("oversubscribed").get<bool>();
        return c;
    });
}

run_result run_from_json(const std::string& text) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error& e) {
        throw std::runtime_error(std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object()) throw std::runtime_error("a results file is a JSON object with 'context' and 'benchmarks'");
    run_result run;
    run.context = context_from_json(field(doc, "context", "results file"));
    const json& rows = field(doc, "benchmarks", "results file");
    if (!rows.is_array()) throw std::runtime_error("results file: 'benchmarks' is not an array");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        try {
            run.cells.push_back(cell_from_json(rows[i]));
        } catch (const std::runtime_error& e) {
            throw std::runtime_error("benchmarks[" + std::to_string(i) + "]: " + e.what());
        }
    }
    return run;
}

std::string to_json(const run_result& run) {
    json rows = json::array();
    for (const auto& c : run.cells) rows.push_back(cell_to_json(c));
    return json{{"context", context_to_json(run.context)}, {"benchmarks", rows}}.dump(2) + "\n";
}

namespace {
std::string csv_quote(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}
std::string num(double v, const char* format = "%.4g") {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}
}  // namespace

std::string to_csv(const run_result& run) {
    std::ostringstream out;
    out << "name,suite,contender,workers,valid,status,median_ns,p25_ns,p75_ns,cpu_ns_per_op,min_share,max_share,"
           "repetitions,ops_per_worker,affinity,oversubscribed,detail\n";
    for (const auto& c : run.cells) {
        out << csv_quote(c.name()) << ',' << c.suite << ',' << c.contender << ',' << c.workers << ','
            << (c.valid() ? "true" : "false") << ',' << c.status << ',' << num(c.median_ns, "%.6g") << ','
            << num(c.p25_ns, "%.6g") << ',' << num(c.p75_ns, "%.6g") << ',' << num(c.cpu_ns_per_op, "%.6g") << ','
            << (c.has_fairness ? num(c.min_share) : "") << ',' << (c.has_fairness ? num(c.max_share) : "") << ','
            << c.repetitions << ',' << c.ops_per_worker << ',' << csv_quote(c.affinity) << ','
            << (c.oversubscribed ? "true" : "false") << ',' << csv_quote(c.detail) << '\n';
    }
    return out.str();
}

std::string to_table(const run_result& run) {
    std::ostringstream out;
    std::vector<std::string> suites;
    for (const auto& c : run.cells)
        if (std::find(suites.begin(), suites.end(), c.suite) == suites.end()) suites.push_back(c.suite);
    for (const auto& suite : suites) {
        // One table per parameter point and worker count, in first-seen order. A suite
        // that sweeps the parameters of a single contender (probes) compares its points
        // instead: one table per worker count, a row per point.
        bool one_contender = true;
        std::string first_name;
        for (const auto& c : run.cells) {
            if (c.suite != suite) continue;
            if (first_name.empty()) first_name = c.contender;
            one_contender = one_contender && c.contender == first_name;
        }
        std::vector<std::pair<std::string, std::int32_t>> groups;
        auto params_of = [one_contender](const cell_result& c) {
            std::string p;
            if (one_contender) return p;
            for (const auto& [k, v] : c.params) p += (p.empty() ? "" : ", ") + k + " " + v;
            return p;
        };
        auto label_of = [one_contender](const cell_result& c) {
            std::string l = c.contender;
            if (one_contender)
                for (const auto& [k, v] : c.params) l += "/" + k + ":" + v;
            return l;
        };
        for (const auto& c : run.cells) {
            if (c.suite != suite) continue;
            const std::pair<std::string, std::int32_t> key{params_of(c), c.workers};
            if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
        }
        for (const auto& [params, w] : groups) {
            std::vector<const cell_result*> rows;
            for (const auto& c : run.cells)
                if (c.suite == suite && c.workers == w && params_of(c) == params) rows.push_back(&c);
            std::stable_sort(rows.begin(), rows.end(), [](const cell_result* a, const cell_result* b) {
                if (a->valid() != b->valid()) return a->valid();
                return a->median_ns < b->median_ns;
            });
            const bool over = !rows.empty() && rows.front()->oversubscribed;
            out << "\n" << suite << (params.empty() ? "" : ", " + params) << ", " << w << (w == 1 ? " worker" : " workers")
                << (over ? "  (oversubscribed: more workers than CPUs)" : "") << "\n";
            out << "  " << std::string(24, ' ') << "   ns/op    p25-p75          cpu ns/op   min/max share\n";
            bool first_valid = true;
            for (const auto* c : rows) {
                char line[256];
                if (!c->valid()) {
                    std::snprintf(line, sizeof line, "  %-24s   INVALID (%s) %s\n", label_of(*c).c_str(), c->status.c_str(),
                                  c->detail.c_str());
                    out << line;
                    continue;
                }
                const std::string share = c->has_fairness ? num(c->min_share, "%.2f") + " / " + num(c->max_share, "%.2f") : "";
                std::snprintf(line, sizeof line, "%s %-24s %8.3f  %8.3f-%-8.3f %10.3f   %s\n", first_valid ? "*" : " ",
                              label_of(*c).c_str(), c->median_ns, c->p25_ns, c->p75_ns, c->cpu_ns_per_op, share.c_str());
                out << line;
                first_valid = false;
            }
        }
    }
    out << "\n* fastest valid row of its table. ns/op: wall time per completed operation (all workers), "
           "median of repetitions.\n";
    return out.str();
}

}  // namespace contend::lab
