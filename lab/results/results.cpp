#include "results/results.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace contend::lab {
namespace {

bool is_key(std::string_view key) {
    return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

bool is_value(std::string_view value) {
    return !value.empty() && std::none_of(value.begin(), value.end(), [](char c) {
        return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

void check_params(const param_list& params) {
    for (const auto& [key, value] : params) {
        if (!is_key(key))
            throw std::invalid_argument("parameter key " + in_quotes(key) + " is not lower-case words joined by '_'");
        if (!is_value(value))
            throw std::invalid_argument("parameter " + key + " has value " + in_quotes(value) +
                                        ", which is empty or holds '/' or a control character");
    }
}

std::string format_params(const param_list& params) {
    check_params(params);
    std::string out;
    for (const auto& [key, value] : params) {
        if (!out.empty()) out += '/';
        out.append(key).append(":").append(value);
    }
    return out;
}

param_list parse_params(std::string_view text) {
    param_list params;
    while (!text.empty()) {
        const std::size_t slash = text.find('/');
        const std::string_view item = text.substr(0, slash);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos)
            throw std::invalid_argument("parameter " + in_quotes(item) + " is not key:value");
        params.emplace_back(item.substr(0, colon), item.substr(colon + 1));
        if (slash == std::string_view::npos) break;
        text.remove_prefix(slash + 1);
        if (text.empty()) throw std::invalid_argument("parameters end with '/'");
    }
    check_params(params);
    return params;
}

std::string format_id(std::string_view name, const param_list& params) {
    std::string id(name);
    if (!params.empty()) id.append("/").append(format_params(params));
    return id;
}

parsed_id parse_id(std::string_view id) {
    const std::size_t slash = id.find('/');
    parsed_id p{std::string(id.substr(0, slash)), {}};
    if (p.name.empty()) throw std::invalid_argument("contender id " + in_quotes(id) + " has no name");
    if (slash != std::string_view::npos) p.params = parse_params(id.substr(slash + 1));
    return p;
}

void check_metric_name(std::string_view name) {
    if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z') || !is_key(name))
        throw std::invalid_argument("metric name " + in_quotes(name) + " is not [a-z][a-z0-9_]*");
    for (const auto& f : cell_fields())
        if (f.name == name || f.json == name)
            throw std::invalid_argument("metric name " + in_quotes(name) + " is already a field of a cell");
    for (const std::string_view derived :
         {"name", "run_name", "run_type", "aggregate_name", "threads", "cpu_time", "time_unit", "valid"})
        if (derived == name)
            throw std::invalid_argument("metric name " + in_quotes(name) + " is a field of the JSON row");
}

std::string row_name_part(std::string text) {
    for (auto& ch : text) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (ch == ' ' || ch == '-') ch = '_';
    }
    return text;
}

std::string cell_result::name() const {
    // Appends only: GCC 12 warns (-Wrestrict, a false positive) on "/" + std::string&&.
    std::string n = suite;
    n.append("/").append(row_name_part(contender));
    for (const auto& [k, v] : params) n.append("/").append(row_name_part(k)).append(":").append(v);
    n.append("/workers:").append(std::to_string(workers));
    return n;
}

bool cell_result::shared() const { return others_cpu_share > shared_above; }

double cell_result::metric(std::string_view wanted) const {
    for (const auto& [name, value] : metrics)
        if (name == wanted) return value;
    return std::numeric_limits<double>::quiet_NaN();
}

std::size_t run_result::valid_cells() const {
    std::size_t n = 0;
    for (const auto& c : cells) n += c.valid() ? 1 : 0;
    return n;
}

// Order is the order of CSV columns and of the JSON keys. Schema version 2 added version,
// library_build_type, run_status and operation (and the metrics table); version 3 the
// co-tenant (busy_loops, busy_nice, one_cpu; the report shows them as one line); version 4 a
// cell's modal flag; version 5 why a cell's fairness was not measured; version 6 a profiled
// run's locks (results/lock_profile.hpp); version 7 what other processes took of a cell's
// CPUs (others_cpu_share, others_runnable).
std::span<const field<machine_context>> context_fields() {
    using c = machine_context;
    static const std::array<field<c>, 19> fields{{
        {"date", "date", &c::date, 1, "date"},
        {"label", "label", &c::label, 1, "label"},
        {"host_name", "host_name", &c::host_name, 1, "host"},
        {"cpu_model", "cpu_model", &c::cpu_model, 1, "CPU model"},
        {"logical_cpus", "num_cpus", &c::logical_cpus, 1, "CPUs (online)"},
        {"cpu_list", "cpu_list", &c::cpu_list, 1, "CPU list used"},
        {"kernel", "kernel", &c::kernel, 1, "kernel"},
        {"compiler", "compiler", &c::compiler, 1, "compiler"},
        {"version", "contend_version", &c::version, 2, "contend version"},
        {"build_flags", "build_flags", &c::build_flags, 1, "build flags"},
        {"library_build_type", "library_build_type", &c::library_build_type, 2},
        {"governor", "governor", &c::governor, 1, "governor"},
        {"wait_backend", "wait_backend", &c::wait_backend, 1, "wait backend"},
        {"timer_slack_ns", "timer_slack_ns", &c::timer_slack_ns, 1, "timer slack, ns"},
        {"nanosleep_1ns_us", "nanosleep_1ns_us", &c::nanosleep_1ns_us, 1, "1 ns nanosleep takes, \u00b5s"},
        {"run_status", "run_status", &c::run_status, 2, "run"},
        {"busy_loops", "busy_loops", &c::busy_loops, 3},
        {"busy_nice", "busy_nice", &c::busy_nice, 3},
        {"one_cpu", "one_cpu", &c::one_cpu, 3},
    }};
    return fields;
}

std::span<const field<cell_result>> cell_fields() {
    using c = cell_result;
    static const std::array<field<c>, 24> fields{{
        {"suite", "suite", &c::suite},
        {"contender", "contender", &c::contender, 1, "contender"},
        {"params", "params", &c::params, 1, "params"},
        {"workers", "workers", &c::workers, 1, "workers"},
        {"operation", "operation", &c::operation, 2},
        {"status", "status", &c::status, 1, "status"},
        {"detail", "detail", &c::detail},
        {"ops_per_worker", "iterations", &c::ops_per_worker},
        {"repetitions", "repetitions", &c::repetitions},
        {"samples", "samples", &c::ns_per_op},
        {"median_ns", "real_time", &c::median_ns, 1, "median ns/op"},
        {"p25_ns", "p25", &c::p25_ns, 1, "p25"},
        {"p75_ns", "p75", &c::p75_ns, 1, "p75"},
        {"modal", "modal", &c::modal, 4},
        {"cpu_ns_per_op", "cpu_ns_per_op", &c::cpu_ns_per_op, 1, "CPU ns/op"},
        {"min_share", "min_share", &c::min_share, 1, "min share", true},
        {"max_share", "max_share", &c::max_share, 1, "max share", true},
        {"has_fairness", "has_fairness", &c::has_fairness},
        {"fairness_reason", "fairness_reason", &c::fairness_reason, 5},
        {"affinity", "affinity", &c::affinity},
        {"oversubscribed", "oversubscribed", &c::oversubscribed},
        {"lock_profile", "lock_profile", &c::lock_profile, 6},
        {"others_cpu_share", "others_cpu_share", &c::others_cpu_share, 7, "others' CPU", true},
        {"others_runnable", "others_runnable", &c::others_runnable, 7, {}, true},
    }};
    return fields;
}

std::string format_samples(const std::vector<double>& samples) {
    std::string out;
    for (const double sample : samples) {
        char buffer[64];
        const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, sample);
        if (ec != std::errc{}) throw std::invalid_argument("sample cannot be written");
        if (!out.empty()) out += ' ';
        out.append(buffer, end);
    }
    return out;
}

std::vector<double> parse_samples(std::string_view text) {
    std::vector<double> samples;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        const std::string_view item = text.substr(0, space);
        double sample = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), sample);
        if (ec != std::errc{} || end != item.data() + item.size())
            throw std::invalid_argument("sample " + in_quotes(item) + " is not a number");
        samples.push_back(sample);
        text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
    }
    return samples;
}

}  // namespace contend::lab
