// The results as JSON, field by field from the tables of results.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include "results/statistics.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "store/results_io.hpp"

#include "results/lock_profile.hpp"
#include "text/utf8.hpp"

namespace contend::lab {

using nlohmann::json;

namespace {

// What a stop signal left undone, in interrupted's message.
constexpr const char* not_read_to_the_end = "the input was not read to its end; nothing was stored or written";

// Keys a row carries besides its fields, for Google Benchmark's tools. Written, never read.
constexpr std::string_view derived_row_keys[] = {"name",    "run_name", "run_type",  "aggregate_name",
                                                 "threads", "cpu_time", "time_unit", "valid"};

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double number_or_nan(const json& v, std::string_view key) {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) throw std::runtime_error("'" + std::string(key) + "' is not a number");
    return v.get<double>();
}

template <class Int>
Int whole_number(const json& v, std::string_view key) {
    const std::string name(key);
    if (!v.is_number_integer()) throw std::runtime_error("'" + name + "' is not a whole number");
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
            throw std::runtime_error("'" + name + "' = " + std::to_string(u) + " is out of range");
        return static_cast<Int>(u);
    }
    const auto s = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<Int>) {
        if (s < 0) throw std::runtime_error("'" + name + "' = " + std::to_string(s) + " is negative");
        return static_cast<Int>(s);
    } else {
        if (s < std::numeric_limits<Int>::min() || s > std::numeric_limits<Int>::max())
            throw std::runtime_error("'" + name + "' = " + std::to_string(s) + " is out of range");
        return static_cast<Int>(s);
    }
}

template <class T>
json to_json_value(const T& value) {
    if constexpr (std::is_same_v<T, double>) {
        return number_or_null(value);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        json a = json::array();
        for (const double v : value) a.push_back(number_or_null(v));
        return a;
    } else if constexpr (std::is_same_v<T, param_list>) {
        return format_params(value);
    } else {
        return value;
    }
}

template <class T>
void from_json_value(const json& v, std::string_view key, T& out) {
    const std::string name(key);
    if constexpr (std::is_same_v<T, double>) {
        out = number_or_nan(v, key);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        if (!v.is_array()) throw std::runtime_error("'" + name + "' is not an array");
        out.clear();
        for (const json& s : v) out.push_back(number_or_nan(s, key));
    } else if constexpr (std::is_same_v<T, param_list>) {
        if (v.is_object()) {  // files written before parameters had their one text form
            out.clear();
            for (const auto& [k, value] : v.items()) {
                if (!value.is_string()) throw std::runtime_error("'" + name + "." + k + "' is not a string");
                out.emplace_back(k, value.template get<std::string>());
            }
            check_params(out);
        } else if (v.is_string()) {
            out = parse_params(v.get<std::string>());
        } else {
            throw std::runtime_error("'" + name + "' is not a string");
        }
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) throw std::runtime_error("'" + name + "' is not a string");
        out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw std::runtime_error("'" + name + "' is not true or false");
        out = v.get<bool>();
    } else {
        out = whole_number<T>(v, key);
    }
}

template <class Record>
json record_to_json(const Record& record, std::span<const field<Record>> fields) {
    json j = json::object();
    for (const auto& f : fields)
        visit_field(f, record, [&](const auto& value) { j[std::string(f.json)] = to_json_value(value); });
    return j;
}

// Reads every field of `fields` from `j`; `what` names the object in errors.
template <class Record>
Record record_from_json(const json& j, std::span<const field<Record>> fields, const std::string& what) {
    if (!j.is_object()) throw std::runtime_error(what + " is not a JSON object");
    Record record;
    for (const auto& f : fields) {
        const auto it = j.find(std::string(f.json));
        if (it == j.end()) {
            if (f.since_schema > 1 || f.may_be_absent) continue;  // written before: the default
            throw std::runtime_error(what + " lacks '" + std::string(f.json) + "'");
        }
        try {
            visit_field(f, record, [&](auto& value) { from_json_value(*it, f.json, value); });
        } catch (const std::exception& e) {
            throw std::runtime_error("malformed " + what + ": " + e.what());
        }
    }
    return record;
}

const std::set<std::string>& known_row_keys() {
    static const std::set<std::string> keys = [] {
        std::set<std::string> k;
        for (const auto& f : cell_fields()) k.emplace(f.json);
        for (const auto d : derived_row_keys) k.emplace(d);
        return k;
    }();
    return keys;
}

// Up to the last bits of a double: the lab writes these figures with nlohmann::json, whose
// numbers read back exactly; a file that rounds them in the last digit is still the same run.
bool same_figure(double written, double computed) {
    return std::fabs(written - computed) <= 1e-12 * std::max(std::fabs(written), std::fabs(computed));
}

std::string figure_text(double v) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

// A valid row's real_time, p25 and p75 are statistics of its samples (harness.cpp,
// summarize_samples). compare reads the samples, history import and report read the figures:
// a row where they disagree would be judged by two different numbers, so it is refused.
void check_figures_match_samples(const cell_result& cell) {
    if (!cell.valid() || cell.ns_per_op.empty()) return;
    for (const double v : cell.ns_per_op)
        if (!std::isfinite(v)) return;  // a null sample: the readers say so themselves
    const struct {
        const char* key;
        double written, computed;
        const char* statistic;
    } figures[] = {{"real_time", cell.median_ns, median(cell.ns_per_op), "the median"},
                   {"p25", cell.p25_ns, quantile(cell.ns_per_op, 0.25), "the 25th percentile"},
                   {"p75", cell.p75_ns, quantile(cell.ns_per_op, 0.75), "the 75th percentile"}};
    for (const auto& f : figures) {
        if (same_figure(f.written, f.computed)) continue;
        throw std::runtime_error(std::string("result row: ") + f.key + " " + figure_text(f.written) + " is not " +
                                 f.statistic + " of its samples (" + figure_text(f.computed) +
                                 "): the row was edited or not written by contend; compare reads the samples and "
                                 "history import the row's figures, so they must agree");
    }
}

// Values no run of the lab can have, refused rather than stored, charted and compared: a
// worker count below 1, a negative repetition count, a suite holding the '/' that separates
// a row name's parts, a least-served share outside 0..1 (it is the least-served worker's
// share over the fair one) or a most-served one below it, and a row whose "valid" says
// otherwise than its status (a crashed cell marked valid).
void check_cell_values(const cell_result& cell, const json& row) {
    const auto refuse = [](const std::string& why) { throw std::runtime_error("result row: " + why); };
    if (cell.workers < 1) refuse("workers " + std::to_string(cell.workers) + " is not a worker count (1 or more)");
    if (cell.repetitions < 0) refuse("repetitions " + std::to_string(cell.repetitions) + " is negative");
    if (cell.suite.find('/') != std::string::npos)
        refuse("suite '" + message_text(cell.suite) + "' holds a '/', which separates the parts of a row's name");
    constexpr double rounding = 1e-9;
    if (std::isfinite(cell.min_share) && (cell.min_share < 0 || cell.min_share > 1 + rounding))
        refuse("min_share " + figure_text(cell.min_share) +
               " is not a least-served share (0 to 1: the least-served worker's share over the fair one)");
    if (std::isfinite(cell.max_share) &&
        (cell.max_share < 0 || (std::isfinite(cell.min_share) && cell.max_share < cell.min_share - rounding)))
        refuse("max_share " + figure_text(cell.max_share) + " is below min_share " + figure_text(cell.min_share));
    if (const auto valid = row.find("valid"); valid != row.end()) {
        if (!valid->is_boolean()) refuse("'valid' is not true or false");
        if (valid->get<bool>() != cell.valid())
            refuse(std::string("'valid' is ") + (valid->get<bool>() ? "true" : "false") + " but the status is '" +
                   message_text(cell.status) + "' (only 'ok' is valid)");
    }
}

json without_key(const json& j, const char* key) {
    json copy = j;
    copy.erase(key);
    return copy;
}

}  // namespace

json context_to_json(const machine_context& c) { return record_to_json(c, context_fields()); }

json cell_to_json(const cell_result& cell) {
    json j = record_to_json(cell, cell_fields());
    // An object in the file, not a string of JSON; absent from every row but a profiled run's.
    if (cell.lock_profile.empty()) {
        j.erase("lock_profile");
    } else {
        try {
            lock_profile_from_text(cell.lock_profile);  // a history row's text is input too
        } catch (const lock_profile_error& e) {
            throw std::runtime_error("row " + message_text(cell.name()) + ": " + e.what());
        }
        j["lock_profile"] = json::parse(cell.lock_profile);
    }
    const std::string name = cell.name();
    j["name"] = name;
    j["run_name"] = name;
    j["run_type"] = "aggregate";
    j["aggregate_name"] = "median";
    j["threads"] = cell.workers;
    j["cpu_time"] = number_or_null(cell.cpu_ns_per_op);
    j["time_unit"] = "ns";
    j["valid"] = cell.valid();
    for (const auto& [metric, value] : cell.metrics) {
        check_metric_name(metric);
        j[metric] = number_or_null(value);
    }
    return j;
}

machine_context context_from_json(const json& j) {
    return record_from_json(j, context_fields(), std::string("run context"));
}

cell_result cell_from_json(const json& j) {
    // The lock profile is an object in the file and a text in the row: checked as the text is
    // whenever it is read (results/lock_profile.hpp), and kept in its one written form.
    const auto profile = j.is_object() ? j.find("lock_profile") : j.end();
    std::string profile_text;
    if (profile != j.end()) {
        if (!profile->is_object()) throw std::runtime_error("result row: 'lock_profile' is not an object");
        try {
            profile_text = lock_profile_text(lock_profile_from_text(profile->dump()));
        } catch (const lock_profile_error& e) {
            throw std::runtime_error(std::string("result row: ") + e.what());
        }
    }
    json stripped;  // the row less its profile, copied only for the rows that have one
    if (profile != j.end()) stripped = without_key(j, "lock_profile");
    cell_result cell = record_from_json(profile != j.end() ? stripped : j, cell_fields(), std::string("result row"));
    cell.lock_profile = std::move(profile_text);
    // Every other number is a workload metric (Google Benchmark's user counters are written
    // the same way); anything else unknown is a mistake worth saying.
    for (const auto& [key, value] : j.items()) {
        if (known_row_keys().count(key)) continue;
        if (!value.is_number() && !value.is_null())
            throw std::runtime_error("result row: unknown field '" + key + "' is not a metric (a number)");
        try {
            check_metric_name(key);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(std::string("result row: ") + e.what());
        }
        cell.metrics.emplace_back(key, number_or_nan(value, key));
    }
    check_cell_values(cell, j);
    check_figures_match_samples(cell);
    return cell;
}

namespace {

// nlohmann::json's DOM, built by its SAX interface, with each object's keys checked as they
// come. (A parser callback could check them too, but nlohmann's callback parser scans the
// whole enclosing array at the end of every object: quadratic in the rows of a file.) Every
// stop_check_events values and keys it looks at the stop signal, and throws interrupted once
// one came: nlohmann's parser lets the exception through, and the partial DOM is freed.
class dom_refusing_duplicate_keys {
public:
    dom_refusing_duplicate_keys(json& root, const std::atomic<int>* stop) : root_(root), stop_(stop) {}

    bool null() { return add(json(nullptr)); }
    bool boolean(bool v) { return add(json(v)); }
    bool number_integer(json::number_integer_t v) { return add(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
    bool number_float(json::number_float_t v, const json::string_t&) { return add(json(v)); }
    bool string(json::string_t& v) { return add(json(std::move(v))); }
    bool binary(json::binary_t& v) { return add(json::binary(std::move(v))); }
    bool start_object(std::size_t) {
        tick();
        json* object = add_container(json::object());
        keys_.emplace_back();
        stack_.push_back(object);
        return true;
    }
    bool key(json::string_t& k) {
        tick();
        if (!keys_.back().insert(k).second)
            throw json_duplicate_key("the key '" + message_text(k) +
                                     "' appears twice in one object (which one counts is anybody's guess)");
        key_ = std::move(k);
        return true;
    }
    bool end_object() {
        keys_.pop_back();
        stack_.pop_back();
        return true;
    }
    bool start_array(std::size_t) {
        tick();
        stack_.push_back(add_container(json::array()));
        return true;
    }
    bool end_array() {
        stack_.pop_back();
        return true;
    }
    template <class Exception>
    bool parse_error(std::size_t, const std::string&, const Exception& e) {
        throw e;
    }

private:
    json& root_;
    const std::atomic<int>* stop_;
    std::vector<json*> stack_;  // the open objects and arrays, innermost last
    std::vector<std::unordered_set<std::string>> keys_;  // the keys of each open object
    std::string key_;  // the key of the value to come, in an object
    std::size_t events_ = 0;

    // Counts an event; the first and every stop_check_events-th look at the stop signal.
    void tick() {
        if (events_++ % stop_check_events == 0) throw_if_stopped(stop_, not_read_to_the_end);
    }

    // Places `v` where the parse is: the root, the end of the open array, or the open
    // object's key. Returns where it went.
    json* place(json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        json& parent = *stack_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        return &(parent[key_] = std::move(v));
    }
    bool add(json&& v) {
        tick();
        place(std::move(v));
        return true;
    }
    json* add_container(json&& v) { return place(std::move(v)); }
};

}  // namespace

nlohmann::json parse_json_refusing_duplicate_keys(std::string_view text, const std::atomic<int>* stop) {
    json doc;
    dom_refusing_duplicate_keys builder(doc, stop);
    json::sax_parse(text.begin(), text.end(), &builder);
    return doc;
}

run_result run_from_json(std::string_view text, const std::atomic<int>* stop) {
    json doc;
    try {
        doc = parse_json_refusing_duplicate_keys(text, stop);
    } catch (const json::parse_error& e) {
        throw std::runtime_error(std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object()) throw std::runtime_error("a results file is a JSON object with 'context' and 'benchmarks'");
    for (const char* key : {"context", "benchmarks"})
        if (!doc.contains(key)) throw std::runtime_error(std::string("results file lacks '") + key + "'");
    run_result run;
    run.context = context_from_json(doc["context"]);
    const json& rows = doc["benchmarks"];
    if (!rows.is_array()) throw std::runtime_error("results file: 'benchmarks' is not an array");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (stop != nullptr && stop->load() != 0) throw_if_stopped(stop, not_read_to_the_end);
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
    // Text that is not UTF-8 (a label given on the command line is checked; a host name or
    // a compiler string is not) becomes U+FFFD instead of failing the whole file.
    return json{{"context", context_to_json(run.context)}, {"benchmarks", rows}}.dump(2, ' ', false,
                                                                                      json::error_handler_t::replace) +
           "\n";
}

}  // namespace contend::lab
