// The server suite: HTTP throughput of contend_json_server (server/) against a Boost.Asio server,
// measured from outside by wrk over 127.0.0.1. Rows: server/<implementation>/route:<json|
// plaintext>/connections:N/workers:W, W = the server's threads; wrk runs wrk_threads
// threads. Each reports requests_per_second, contentions_per_second and
// lock_acquisitions_per_second (contend's servers), p50_us, p99_us, cpu_ns_per_request and
// errors; ns/op is 1e9 / requests_per_second.
//
// The harness's repetition does not fit a server: its work is not a count of operations
// that workers run, but a load applied from another process for a fixed time. So these
// contenders measure their cells themselves (contender::measure_cell), keeping the rest
// of the harness's model: one repetition is one wrk run against a freshly started server
// (so that the server's totals and CPU time are that run's alone), the same number of
// repetitions and the same rule for stopping early, the median of every figure, and a
// failed check (a wrk error, a server that did not exit cleanly) makes the cell invalid
// with its reason. There is no calibration: wrk runs for a fixed time.
#include "suites/server_suite.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "measure/harness.hpp"
#include "os/child_process.hpp"
#include "results/statistics.hpp"
#include "text/utf8.hpp"

namespace contend::lab {

namespace {

using steady = std::chrono::steady_clock;

// wrk's threads: fixed, so that a row differs from another only in its server. Two, so
// that one client thread is not what limits a server on a small machine.
constexpr int wrk_threads = 2;
constexpr int route_connections[] = {16, 256};
// How long a server may take to print its port, and to exit after SIGTERM: both take
// milliseconds; the margin is for a loaded machine.
constexpr double start_limit_s = 10, stop_limit_s = 10;

// A child process with its standard output and error on one pipe.
struct child {
    child_process process;  // the destructor kills and reaps one still running
    std::string text;  // what it printed so far
};

// Starts argv[0] with PR_SET_PDEATHSIG, so that a cell's process killed for missing its
// deadline leaves no server or wrk behind. Returns an error message or nothing; a program
// that cannot be executed is not an error here: it prints nothing and ends (reap says how).
std::optional<std::string> start(const std::vector<std::string>& args, child& c) {
    child_spec spec;
    spec.argv = args;
    spec.output = child_stream::pipe;
    spec.errors = child_stream::pipe;
    spec.die_with_parent = true;
    try {
        c.process = child_process::start(spec);
    } catch (const std::system_error& e) {
        return std::string(std::string_view(e.what()).starts_with("fork") ? "fork: " : "pipe: ") +
               std::strerror(e.code().value());
    }
    return std::nullopt;
}

// Reads c's output until `done(text)` holds, the output ends, or `limit_s` pass. Returns
// whether `done` held.
template <class Done>
bool read_until(child& c, double limit_s, Done done) {
    const auto deadline =
        steady::now() + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(limit_s));
    while (!done(c.text)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
        if (left <= 0) return false;
        if (c.process.read_output(c.text, static_cast<int>(std::min<long long>(left, 1000))) ==
            child_process::read_result::end)
            return done(c.text);
    }
    return true;
}

// Reaps c within limit_s; kills it if it does not exit by then. How it ended, or nothing
// when it had to be killed. `cpu_ns`: the child's CPU time.
std::optional<child_exit> reap(child& c, double limit_s, double& cpu_ns) {
    if (c.process.pid() == 0) return child_exit{child_end::not_started, c.process.start_error(), 0};
    const auto ended = c.process.wait_for(limit_s);
    cpu_ns = ended ? ended->cpu_ns : c.process.kill_and_wait().cpu_ns;
    return ended;
}

// Kills and reaps what is left of c (after a failure).
void discard(child& c) { c = {}; }

// wrk prints times and rates with a unit: "161.00us", "1.26ms", "2.00s", "1.00m".
std::optional<double> seconds_of(double value, const std::string& unit) {
    if (unit == "us") return value / 1e6;
    if (unit == "ms") return value / 1e3;
    if (unit == "s") return value;
    if (unit == "m") return value * 60;
    if (unit == "h") return value * 3600;
    return std::nullopt;
}

std::optional<double> match_number(const std::string& text, const std::regex& re, int group = 1) {
    std::smatch m;
    if (!std::regex_search(text, m, re)) return std::nullopt;
    return std::stod(m[group].str());
}

// What one wrk run reports (wrk's text output with --latency).
struct wrk_report {
    double requests = 0;
    double seconds = 0;
    double requests_per_second = 0;
    double p50_s = 0, p99_s = 0;
    double socket_errors = 0;  // connect + read + write + timeout
    double non_2xx = 0;
};

std::optional<wrk_report> parse_wrk(const std::string& text) {
    wrk_report r;
    std::smatch m;
    static const std::regex done(R"((\d+) requests in ([0-9.]+)(us|ms|s|m|h),)");
    if (!std::regex_search(text, m, done)) return std::nullopt;
    r.requests = std::stod(m[1].str());
    const auto secs = seconds_of(std::stod(m[2].str()), m[3].str());
    if (!secs) return std::nullopt;
    r.seconds = *secs;
    static const std::regex rate(R"(Requests/sec:\s+([0-9.]+))");
    const auto rps = match_number(text, rate);
    if (!rps) return std::nullopt;
    r.requests_per_second = *rps;
    for (const auto& [pct, out] : {std::pair{"50", &r.p50_s}, std::pair{"99", &r.p99_s}}) {
        const std::regex line(std::string(R"(\n\s+)") + pct + R"(%\s+([0-9.]+)(us|ms|s|m|h))");
        if (!std::regex_search(text, m, line)) return std::nullopt;
        const auto s = seconds_of(std::stod(m[1].str()), m[2].str());
        if (!s) return std::nullopt;
        *out = *s;
    }
    static const std::regex errors(R"(Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+))");
    if (std::regex_search(text, m, errors))
        for (int g = 1; g <= 4; ++g) r.socket_errors += std::stod(m[g].str());
    static const std::regex non_2xx(R"(Non-2xx or 3xx responses: (\d+))");
    r.non_2xx = match_number(text, non_2xx).value_or(0);
    return r;
}

// What a server prints when it stops: "totals: N requests in S s (R/s)", and contend's
// servers "pipe locks (K): N contentions (X/s) in A acquisitions (Y/s), ...".
struct server_totals {
    double requests = 0;
    std::optional<double> pipe_contentions;
    std::optional<double> pipe_acquisitions;
};

std::optional<server_totals> parse_totals(const std::string& text) {
    static const std::regex totals(R"(totals: (\d+) requests in )");
    static const std::regex contentions(R"(pipe locks \([a-z]+\): (\d+) contentions)");
    static const std::regex acquisitions(R"(pipe locks \([a-z]+\): \d+ contentions \([^)]*\) in (\d+) acquisitions)");
    server_totals t;
    const auto requests = match_number(text, totals);
    if (!requests) return std::nullopt;
    t.requests = *requests;
    t.pipe_contentions = match_number(text, contentions);
    t.pipe_acquisitions = match_number(text, acquisitions);
    return t;
}

// How long one wrk run lasts: wrk takes whole seconds. --quick (repetitions of at most
// 10 ms) gets 1 s; otherwise the longest of 1..5 s that leaves a second of the repetition
// deadline for starting and stopping the server (a cell's process must report each
// repetition within the deadline: cell_runner.hpp).
int wrk_seconds(const harness_options& o) {
    if (o.min_time_s <= 0.01) return 1;
    return static_cast<int>(std::clamp(std::floor(o.deadline_s - 1), 1.0, 5.0));
}

struct server_kind {
    std::string name;
    std::string description;
    std::string executable;  // empty: not built
    std::vector<std::string> extra_args;
};

// One repetition: start the server, run wrk, stop the server. Fills `metrics` and returns
// the sample (ns per request), or sets status and detail and returns nothing.
std::optional<double> one_repetition(const server_kind& kind, const std::string& route, int connections,
                                     std::int32_t workers, const harness_options& o, metric_list& metrics,
                                     cell_result& cell) {
    const int seconds = wrk_seconds(o);
    // The server's own backstop: it stops by itself well after wrk should have finished.
    const std::string backstop = std::to_string(seconds + static_cast<int>(start_limit_s + stop_limit_s) + 30);
    std::vector<std::string> server_args{kind.executable,         "--port",     "0",     "--threads",
                                         std::to_string(workers), "--duration", backstop};
    server_args.insert(server_args.end(), kind.extra_args.begin(), kind.extra_args.end());
    auto fail = [&](const std::string& status, const std::string& detail) -> std::optional<double> {
        cell.status = status;
        cell.detail = detail;
        return std::nullopt;
    };

    child server;
    if (auto error = start(server_args, server)) return fail("server_failed", *error);
    static const std::regex listening(R"(listening on 127\.0\.0\.1:(\d+))");
    std::smatch m;
    if (!read_until(server, start_limit_s, [&](const std::string& t) { return std::regex_search(t, m, listening); })) {
        const std::string said = server.text;
        discard(server);
        return fail("server_failed", "the server printed no port: " + output_tail(said));
    }
    const std::string port = m[1].str();

    child wrk;
    const std::vector<std::string> wrk_args{"wrk",
                                            "-t" + std::to_string(wrk_threads),
                                            "-c" + std::to_string(connections),
                                            "-d" + std::to_string(seconds) + "s",
                                            "--latency",
                                            "http://127.0.0.1:" + port + "/" + route};
    if (auto error = start(wrk_args, wrk)) {
        discard(server);
        return fail("wrk_failed", *error);
    }
    read_until(wrk, seconds + stop_limit_s, [](const std::string&) { return false; });  // to the end
    double ignored = 0;
    const auto wrk_status = reap(wrk, 1, ignored);
    if (!wrk_status || wrk_status->end != child_end::exited || wrk_status->value != 0) {
        discard(server);
        // Not executed (not in PATH), or a wrapper that said so with the shell's 127.
        const bool missing = wrk_status && (wrk_status->end == child_end::not_started ||
                                            (wrk_status->end == child_end::exited && wrk_status->value == 127));
        return fail("wrk_failed", missing ? std::string("wrk not found: run scripts/setup.sh (Debian package wrk)")
                                          : "wrk did not finish cleanly: " + output_tail(wrk.text));
    }
    const auto report = parse_wrk(wrk.text);
    if (!report) {
        discard(server);
        return fail("wrk_failed", "wrk's output could not be read: " + output_tail(wrk.text));
    }

    server.process.signal(SIGTERM);
    read_until(server, stop_limit_s, [](const std::string&) { return false; });
    double cpu_ns = 0;
    const auto server_status = reap(server, 1, cpu_ns);
    const auto totals = parse_totals(server.text);
    const double errors = report->socket_errors + report->non_2xx;

    metrics.emplace_back("requests_per_second", report->requests_per_second);
    if (totals && totals->pipe_contentions)
        metrics.emplace_back("contentions_per_second", *totals->pipe_contentions / report->seconds);
    if (totals && totals->pipe_acquisitions)
        metrics.emplace_back("lock_acquisitions_per_second", *totals->pipe_acquisitions / report->seconds);
    metrics.emplace_back("p50_us", report->p50_s * 1e6);
    metrics.emplace_back("p99_us", report->p99_s * 1e6);
    metrics.emplace_back("cpu_ns_per_request",
                         totals && totals->requests > 0 ? cpu_ns / totals->requests : not_measured);
    metrics.emplace_back("errors", errors);

    if (!server_status) return fail("server_exit", "the server did not exit within 10 s of SIGTERM");
    if (server_status->end != child_end::exited || server_status->value != 0)
        return fail("server_exit", std::string("the server ended with ") +
                                       (server_status->end == child_end::exited ? "status " : "signal ") +
                                       std::to_string(server_status->value) + ": " + output_tail(server.text));
    if (!totals) return fail("server_exit", "the server printed no totals: " + output_tail(server.text));
    if (errors > 0) {
        char detail[160];
        std::snprintf(detail, sizeof detail, "wrk saw %.0f socket errors and %.0f non-2xx responses",
                      report->socket_errors, report->non_2xx);
        return fail("wrk_errors", detail);
    }
    if (report->requests_per_second <= 0) return fail("wrk_errors", "wrk completed no request");
    return 1e9 / report->requests_per_second;
}

cell_result measure_server_cell(const server_kind& kind, const std::string& route, int connections, const contender& c,
                                const std::string& suite, std::int32_t workers, const harness_options& o) {
    cell_result cell = new_cell(c, suite, workers);
    // wrk and the server share the machine: it is oversubscribed once their threads
    // together outnumber the CPUs (always, on 2 CPUs).
    cell.oversubscribed = workers + wrk_threads > static_cast<std::int32_t>(allowed_cpus().size());
    if (kind.executable.empty()) {
        cell.status = "server_failed";
        cell.detail = "the server was not built (CONTEND_BUILD_JSON_SERVER, Boost for asio)";
        return cell;
    }

    std::vector<double> cpu_per_request;
    std::vector<std::pair<std::string, std::vector<double>>> samples;
    double timed_ns = 0;
    for (std::int32_t rep = 0; rep < o.repetitions; ++rep) {
        metric_list metrics;
        const auto ns = one_repetition(kind, route, connections, workers, o, metrics, cell);
        if (o.on_repetition) o.on_repetition();
        if (!ns) {
            cell.metrics = std::move(metrics);  // the failed run's figures, errors among them
            return cell;
        }
        cell.ns_per_op.push_back(*ns);
        for (auto& [name, value] : metrics) {
            auto it = std::find_if(samples.begin(), samples.end(), [&](const auto& s) { return s.first == name; });
            if (it == samples.end()) it = samples.insert(samples.end(), {name, {}});
            it->second.push_back(value);
            if (name == "cpu_ns_per_request") cpu_per_request.push_back(value);
        }
        ++cell.repetitions;
        timed_ns += wrk_seconds(o) * 1e9;
        // The harness's rule for stopping early (harness.cpp, run_cell_in_process).
        if (cell.repetitions >= o.min_repetitions && cell.repetitions < o.repetitions) {
            if (settled(cell.ns_per_op, o.spread_to_stop) || timed_ns >= o.time_to_stop_s * 1e9) break;
        }
    }
    summarize_samples(cell);
    cell.cpu_ns_per_op = cpu_per_request.empty() ? not_measured : median(cpu_per_request);
    for (const auto& [name, values] : samples) cell.metrics.emplace_back(name, median(values));
    return cell;
}

}  // namespace

suite make_server_suite() {
    suite s{"server",
            "HTTP requests per second of contend_json_server (contend's pipes and thread pool) and of a Boost.Asio "
            "server, loaded by wrk (" +
                std::to_string(wrk_threads) +
                " threads) over 127.0.0.1; workers = the server's threads. wrk and the server share the machine's "
                "CPUs: on 2 CPUs every cell is oversubscribed and wrk's own cost is part of what is measured",
            {},
            {static_cast<std::int32_t>(allowed_cpus().size())}};
    const std::vector<server_kind> kinds{
        {"contend",
         "contend_json_server, contend::mutex in its pipes",
         CONTEND_LAB_JSON_SERVER,
         {"--pipe-lock", "contend"}},
        {"contend_std_mutex",
         "contend_json_server, std::mutex in its pipes",
         CONTEND_LAB_JSON_SERVER,
         {"--pipe-lock", "std"}},
        {"asio",
         "Boost.Asio: one io_context run by the workers (lab/suites/asio_json_server.cpp)",
         CONTEND_LAB_ASIO_SERVER,
         {}},
    };
    // The VM's throughput moves between states for seconds at a time, all servers alike:
    // the rows run in rounds, and the rows compared (one route and connection count) run
    // back to back within a round.
    s.interleave_rounds = true;
    for (const std::string route : {"json", "plaintext"}) {
        for (const int connections : route_connections) {
            for (const auto& kind : kinds) {
                contender c;
                c.name = kind.name;
                c.description =
                    kind.description + ", GET /" + route + ", " + std::to_string(connections) + " connections";
                c.params = {{"route", route}, {"connections", std::to_string(connections)}};
                c.operation = "request";
                // No make() and no workload_type: the work runs in the server's process, not
                // in a workload of this one (so `contend disasm` has no hot loop to show).
                c.measure_cell = [kind, route, connections](const contender& self, const std::string& suite_name,
                                                            std::int32_t workers, const harness_options& o) {
                    return measure_server_cell(kind, route, connections, self, suite_name, workers, o);
                };
                s.contenders.push_back(std::move(c));
            }
        }
    }
    // contend's server at the lighter load beside a nice-19 busy loop, run in the same rounds.
    add_busy_loop_row(s, "contend/route:json/connections:16");
    // And beside one at normal priority, which takes a CPU's fair share.
    add_busy_loop_row(s, "contend/route:json/connections:16", 1, 0);
    return s;
}

}  // namespace contend::lab
