// Reading the inputs of `contend compare`: the lab's JSON through the lab's own reader, and
// Google Benchmark's JSON row by row. Every refusal is an input_error (see inputs.hpp); a
// const nlohmann::json object is only looked into with find() and is_*(), never with a key
// through operator[] or at(), so that hostile input meets a check rather than an assertion or a stray exception.
#include "analyze/inputs.hpp"
#include "text/utf8.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include "results/statistics.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"
#include "store/results_io.hpp"

namespace contend::lab {

using nlohmann::json;

std::string_view to_string(input_error_kind kind) {
    switch (kind) {
        case input_error_kind::unreadable:
            return "unreadable";
        case input_error_kind::malformed_json:
            return "malformed_json";
        case input_error_kind::bad_shape:
            return "bad_shape";
        case input_error_kind::missing_field:
            return "missing_field";
        case input_error_kind::not_a_number:
            return "not_a_number";
        case input_error_kind::not_finite:
            return "not_finite";
        case input_error_kind::not_positive:
            return "not_positive";
        case input_error_kind::unknown_unit:
            return "unknown_unit";
        case input_error_kind::mixed_units:
            return "mixed_units";
        case input_error_kind::duplicate:
            return "duplicate";
        case input_error_kind::benchmark_error:
            return "benchmark_error";
        case input_error_kind::other:
            return "other";
    }
    return "other";
}

namespace {

// A name from a file may hold a NUL (which would cut the message where it is printed), a
// U+202E, or a megabyte: each part is escaped and cut short (output_file.hpp, message_text).
std::string describe(const std::string& source, const std::string& benchmark, const std::string& problem) {
    std::string s = message_text(source, 1000) + ": ";
    if (!benchmark.empty()) s += "benchmark '" + message_text(benchmark) + "': ";
    return s + message_text(problem, 1000);
}

}  // namespace

input_error::input_error(input_error_kind kind, std::string source, std::string benchmark, std::string problem)
    : std::runtime_error(describe(source, benchmark, problem)),
      kind_(kind),
      source_(std::move(source)),
      benchmark_(std::move(benchmark)),
      problem_(std::move(problem)) {}

void stop_if_asked(const std::atomic<int>* stop, const std::string& source) {
    if (stop != nullptr && stop->load() != 0)
        throw_if_stopped(stop, message_text(source, 1000) + " was not read to its end; nothing was stored or written");
}

namespace {

using kind = input_error_kind;

constexpr std::string_view lab_format = "contend-lab";
constexpr std::string_view gb_format = "google-benchmark";

// Google Benchmark's time units (benchmark::TimeUnit: kNanosecond ... kSecond); 0: unknown.
double ns_per(std::string_view unit) {
    if (unit == "ns") return 1;
    if (unit == "us") return 1e3;
    if (unit == "ms") return 1e6;
    if (unit == "s") return 1e9;
    return 0;
}

// Where errors are said: the file, and the row being read.
struct place {
    const std::string& source;
    std::string benchmark;

    [[noreturn]] void fail(kind k, std::string problem) const {
        throw input_error(k, source, benchmark, std::move(problem));
    }
};

const json* member(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

std::string optional_text(const json& object, const char* key, const place& at) {
    const json* v = member(object, key);
    if (!v) return {};
    if (!v->is_string()) at.fail(kind::bad_shape, std::string("'") + key + "' is not a string");
    return v->get<std::string>();
}

std::string required_text(const json& object, const char* key, const place& at) {
    if (!member(object, key)) at.fail(kind::missing_field, std::string("lacks '") + key + "'");
    return optional_text(object, key, at);
}

// The row's unit, checked, in ns per unit.
double unit_scale(const std::string& unit, const place& at) {
    const double scale = ns_per(unit);
    if (scale == 0) at.fail(kind::unknown_unit, "unknown time_unit '" + unit + "' (known: ns, us, ms, s)");
    return scale;
}

// A time in ns: a finite, positive number. `what` names it in errors ("real_time", "sample 3").
double checked_ns(const json& v, const std::string& what, double scale, const place& at) {
    if (v.is_null()) at.fail(kind::not_a_number, what + " is null (not a number)");
    if (!v.is_number()) at.fail(kind::bad_shape, what + " is not a number");
    const double t = v.get<double>();
    if (!std::isfinite(t)) at.fail(kind::not_finite, what + " is not finite");
    if (!(t > 0)) at.fail(kind::not_positive, what + " = " + v.dump() + " is not positive");
    const double ns = t * scale;
    if (!std::isfinite(ns)) at.fail(kind::not_finite, what + " = " + v.dump() + " is too large to be finite in ns");
    return ns;
}

double required_ns(const json& row, const char* key, double scale, const place& at) {
    const json* v = member(row, key);
    if (!v) at.fail(kind::missing_field, std::string("lacks '") + key + "'");
    return checked_ns(*v, key, scale, at);
}

void read_context(const json& doc, comparison_input& in, const std::string& source) {
    const place at{source, {}};
    const json* context = member(doc, "context");
    if (!context) return;  // Google Benchmark always writes one; a hand-made file may not
    if (!context->is_object()) at.fail(kind::bad_shape, "'context' is not an object");
    in.label = optional_text(*context, "label", at);
    in.date = optional_text(*context, "date", at);
    in.cpu_model = optional_text(*context, "cpu_model", at);
    // The lab's field table spells it "contend_version"; Google Benchmark has none of its
    // own for the code measured, so a --benchmark_context=version=... is taken.
    in.version = optional_text(*context, member(*context, "contend_version") ? "contend_version" : "version", at);
}

// The row's name for errors before its fields are checked: its name when it has one.
std::string row_label(const json& row, std::size_t index, const char* key = "name") {
    if (row.is_object()) {
        const json* name = member(row, key);
        if (name && name->is_string() && !name->get_ref<const std::string&>().empty()) return name->get<std::string>();
    }
    return "benchmarks[" + std::to_string(index) + "]";
}

// --- contend-lab ----------------------------------------------------------------------------

void read_lab_rows(const json& rows, comparison_input& in, const std::atomic<int>* stop) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        stop_if_asked(stop, in.source);
        const json& row = rows[i];
        place at{in.source, row_label(row, i)};
        if (!row.is_object()) at.fail(kind::bad_shape, "row " + std::to_string(i) + " is not an object");
        const std::string written_name = required_text(row, "name", at);
        // The lab measures in ns and says so on every row; anything else is not its file.
        const std::string unit = required_text(row, "time_unit", at);
        if (unit_scale(unit, at) != 1) at.fail(kind::bad_shape, "a contend-lab row is in ns, not '" + unit + "'");
        if (!member(row, "real_time")) at.fail(kind::missing_field, "lacks 'real_time'");

        cell_result cell;
        try {
            cell = cell_from_json(row);
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const std::exception& e) {
            at.fail(kind::bad_shape, e.what());
        }
        const std::string name = cell.name();
        if (name != written_name)
            at.fail(kind::bad_shape, "its suite, contender, params and workers make '" + name + "'");
        if (!seen.insert(name).second) at.fail(kind::duplicate, "appears twice");

        if (!cell.valid()) {
            in.skipped.push_back(
                {name, cell.detail.empty() ? cell.status : cell.status + ": " + cell.detail, cell.status});
            continue;
        }
        benchmark_series s;
        s.name = name;
        for (std::size_t k = 0; k < cell.ns_per_op.size(); ++k) {
            const json& sample = *member(row, "samples");  // cell_from_json found it an array
            s.samples_ns.push_back(checked_ns(sample[k], "sample " + std::to_string(k), 1, at));
        }
        const double real_time = checked_ns(*member(row, "real_time"), "real_time", 1, at);
        if (s.samples_ns.empty()) {
            s.median_ns = real_time;
            s.note = "no samples: the row's median";
        } else {
            s.median_ns = median(s.samples_ns);
        }
        s.flagged_modal = cell.modal;
        s.others_cpu_share = cell.others_cpu_share;
        in.benchmarks.push_back(std::move(s));
    }
}

// --- Google Benchmark -----------------------------------------------------------------------

// One run_name's rows as they are met.
struct gb_series {
    benchmark_series series;
    std::string unit;  // of the first row that gave one
    std::set<std::string> repetition_indexes;  // as written: whole numbers of any size
    bool has_unindexed_iteration = false;
    std::optional<double> median_ns, mean_ns;  // the aggregates
};

// Files older than Google Benchmark 1.5 have no run_type and name an aggregate row
// "<run_name>_<aggregate>"; these suffixes are the ones it computed by default.
constexpr std::string_view legacy_aggregates[] = {"_mean", "_median", "_stddev", "_cv"};

struct gb_row {
    std::string run_name;
    bool iteration = true;
    std::string aggregate;  // for aggregates: "mean", "median", "stddev", "cv", "BigO", ...
};

gb_row classify(const json& row, const std::string& name, const place& at) {
    gb_row r;
    r.run_name = member(row, "run_name") ? required_text(row, "run_name", at) : name;
    if (r.run_name.empty()) at.fail(kind::bad_shape, "'run_name' is empty");
    if (!member(row, "run_type")) {
        for (const auto suffix : legacy_aggregates) {
            if (name.size() > suffix.size() && name.ends_with(suffix)) {
                r.iteration = false;
                r.run_name = name.substr(0, name.size() - suffix.size());
                r.aggregate = suffix.substr(1);
                break;
            }
        }
        return r;
    }
    const std::string type = required_text(row, "run_type", at);
    if (type == "iteration") return r;
    if (type != "aggregate") at.fail(kind::bad_shape, "unknown run_type '" + type + "' (iteration or aggregate)");
    r.iteration = false;
    r.aggregate = required_text(row, "aggregate_name", at);
    return r;
}

// Google Benchmark names a run of N threads ".../threads:N" and writes "threads": N; the
// history reads the worker count from the name. A row where the two disagree was edited.
void check_threads(const json& row, const std::string& run_name, const place& at) {
    const json* threads = member(row, "threads");
    if (!threads) return;
    if (!threads->is_number_integer() || threads->get<std::int64_t>() < 1)
        at.fail(kind::bad_shape, "'threads' is not a whole number >= 1");
    const std::string count = threads->dump();
    constexpr std::string_view marker = "/threads:";
    const std::size_t where = run_name.rfind(marker);
    const std::string named = where == std::string::npos ? "" : run_name.substr(where + marker.size());
    if (named.empty() ? count != "1" : named != count)
        at.fail(kind::bad_shape, "'threads' is " + count + " but the name says " +
                                     (named.empty() ? std::string("nothing of threads (one thread)")
                                                    : "/threads:" + message_text(named)));
}

void read_gb_rows(const json& rows, comparison_input& in, const std::atomic<int>* stop) {
    std::vector<gb_series> found;
    std::unordered_map<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        stop_if_asked(stop, in.source);
        const json& row = rows[i];
        place at{in.source, row_label(row, i, "run_name")};
        if (!row.is_object()) at.fail(kind::bad_shape, "row " + std::to_string(i) + " is not an object");
        const std::string name = required_text(row, "name", at);
        if (name.empty()) at.fail(kind::bad_shape, "'name' is empty");
        if (at.benchmark.starts_with("benchmarks[") && !name.empty()) at.benchmark = name;

        if (const json* failed = member(row, "error_occurred")) {
            if (!failed->is_boolean()) at.fail(kind::bad_shape, "'error_occurred' is not true or false");
            if (failed->get<bool>()) {
                const std::string message = optional_text(row, "error_message", at);
                at.fail(kind::benchmark_error, "the benchmark failed: " + (message.empty() ? "(no message)" : message));
            }
        }
        const gb_row r = classify(row, name, at);
        at.benchmark = r.run_name;
        check_threads(row, r.run_name, at);
        std::string unit;
        if (member(row, "time_unit")) {
            unit = required_text(row, "time_unit", at);
            unit_scale(unit, at);
        }
        // Only iteration rows and the median and mean aggregates make a series: the others
        // (stddev, cv, user statistics, BigO and RMS under the family's name) are not times
        // of a repetition.
        const bool median = r.aggregate == "median", mean = r.aggregate == "mean";
        if (!r.iteration && !median && !mean) continue;

        const auto [slot, added] = by_name.try_emplace(r.run_name, found.size());
        if (added) {
            found.emplace_back();
            found.back().series.name = r.run_name;
        }
        gb_series& g = found[slot->second];
        if (unit.empty()) at.fail(kind::missing_field, "lacks 'time_unit'");
        if (g.unit.empty()) g.unit = unit;
        if (unit != g.unit) at.fail(kind::mixed_units, "rows in both '" + g.unit + "' and '" + unit + "'");
        const double ns = required_ns(row, "real_time", ns_per(unit), at);

        if (median || mean) {
            auto& slot_ns = median ? g.median_ns : g.mean_ns;
            if (slot_ns) at.fail(kind::duplicate, "two '" + r.aggregate + "' aggregates");
            slot_ns = ns;
            continue;
        }
        if (const json* index = member(row, "repetition_index")) {
            const bool whole =
                index->is_number_unsigned() || (index->is_number_integer() && index->get<std::int64_t>() >= 0);
            if (!whole) at.fail(kind::bad_shape, "'repetition_index' is not a whole number >= 0");
            const std::string rep = index->dump();
            if (!g.repetition_indexes.insert(rep).second)
                at.fail(kind::duplicate, "repetition_index " + rep + " appears twice");
        } else {
            // Before repetition_index (Google Benchmark < 1.5) repetitions were rows of the same
            // name, each saying "repetitions": N > 1; one row said nothing of the kind.
            const json* reps = member(row, "repetitions");
            const bool repeated = reps && reps->is_number_integer() && reps->get<std::int64_t>() > 1;
            if (g.has_unindexed_iteration && !repeated) at.fail(kind::duplicate, "appears twice");
            g.has_unindexed_iteration = true;
        }
        g.series.samples_ns.push_back(ns);
    }

    for (gb_series& g : found) {
        benchmark_series& s = g.series;
        if (!s.samples_ns.empty()) {
            s.median_ns = median(s.samples_ns);
        } else if (g.median_ns) {
            s.median_ns = *g.median_ns;
            s.note = "aggregates only: median";
        } else {
            s.median_ns = *g.mean_ns;  // a series is only made by an iteration, a median or a mean
            s.note = "aggregates only: mean used (no median)";
        }
        in.benchmarks.push_back(std::move(s));
    }
}

}  // namespace

comparison_input parse_comparison_input(std::string_view text, const std::string& source,
                                        const std::atomic<int>* stop) {
    const place at{source, {}};
    json doc;
    try {
        doc = parse_json_refusing_duplicate_keys(text, stop);
    } catch (const interrupted&) {
        stop_if_asked(stop, source);  // again, naming the file
        throw;
    } catch (const json_duplicate_key& e) {
        at.fail(kind::duplicate, e.what());
    } catch (const json::out_of_range& e) {
        // nlohmann::json refuses a number that overflows a double (1e999) this way.
        at.fail(kind::not_finite, std::string("a number is too large: ") + e.what());
    } catch (const json::exception& e) {
        at.fail(kind::malformed_json, std::string("not JSON (malformed or truncated): ") + e.what());
    }
    if (!doc.is_object()) at.fail(kind::bad_shape, "not a JSON object with a 'benchmarks' array");
    const json* rows = member(doc, "benchmarks");
    if (!rows) at.fail(kind::bad_shape, "no 'benchmarks' array");
    if (!rows->is_array()) at.fail(kind::bad_shape, "'benchmarks' is not an array");

    comparison_input in;
    in.source = source;
    const json* context = member(doc, "context");
    const bool lab = context && context->is_object() && member(*context, "contend_version");
    in.format = lab ? lab_format : gb_format;
    read_context(doc, in, source);
    if (lab) {
        // The whole context through the lab's reader too: a lab file that lacks a field of
        // its own context is damaged, whatever the rows say.
        try {
            (void)context_from_json(*context);
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const std::exception& e) {
            at.fail(kind::bad_shape, e.what());
        }
        read_lab_rows(*rows, in, stop);
    } else {
        read_gb_rows(*rows, in, stop);
    }
    return in;
}

std::string read_input_file(const std::string& path, const std::atomic<int>* stop) {
    const place at{path, {}};
    // Without O_NONBLOCK the open of a FIFO would wait for a writer, past any signal. A FIFO
    // opened so reads as at its end until a writer has come: poll() waits for one (Linux reports
    // no POLLHUP to a reader before a writer has come and gone).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) at.fail(kind::unreadable, std::string("cannot open: ") + std::strerror(errno));
    const struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } close_at_the_end{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) at.fail(kind::unreadable, std::string("cannot read: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) at.fail(kind::unreadable, "is a directory, not a file");
    // A regular file never waits, so it is read straight on; anything else (a FIFO, a pipe, a
    // terminal) is waited on in slices of 100 ms, the signal looked at after each: a signal that
    // came just before the wait would not end it.
    const bool may_wait = !S_ISREG(st.st_mode);
    // Straight into one string: a stream buffer and its str() copy held the text three times.
    std::string text;
    if (!may_wait && st.st_size > 0) text.reserve(static_cast<std::size_t>(st.st_size));
    char chunk[1 << 16];
    for (;;) {
        stop_if_asked(stop, path);
        if (may_wait) {
            pollfd p{fd, POLLIN, 0};
            const int ready = ::poll(&p, 1, stop ? 100 : -1);
            if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
            if (ready < 0) at.fail(kind::unreadable, std::string("cannot read: ") + std::strerror(errno));
        }
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n > 0) text.append(chunk, static_cast<std::size_t>(n));
        else if (n == 0) break;
        else if (errno != EINTR && errno != EAGAIN)
            at.fail(kind::unreadable, std::string("cannot read: ") + std::strerror(errno));
    }
    return text;
}

comparison_input read_comparison_input(const std::string& path, const std::atomic<int>* stop) {
    return parse_comparison_input(read_input_file(path, stop), path, stop);
}

}  // namespace contend::lab
