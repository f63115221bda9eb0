#include "run/cell_runner.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "os/child_process.hpp"
#include "store/results_io.hpp"
#include "suites/suites.hpp"

namespace contend::lab {
namespace {

cell_result failed_cell(const cell_settings& s, std::string status, std::string detail) {
    cell_result c;
    c.suite = s.suite;
    try {
        auto id = parse_id(s.contender);
        c.contender = std::move(id.name);
        c.params = std::move(id.params);
    } catch (const std::invalid_argument&) {
        c.contender = s.contender;
    }
    // Named as run_cell_in_process names it: with the run's co-tenant, so that a cell that crashed beside
    // busy loops is the same series as the cells that did not.
    const param_list added = added_cotenant_params(c.params, s.harness.cotenant);
    c.params.insert(c.params.end(), added.begin(), added.end());
    c.workers = s.workers;
    c.status = std::move(status);
    c.detail = std::move(detail);
    return c;
}

std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

}  // namespace

nlohmann::json settings_to_json(const cell_settings& s) {
    const harness_options& h = s.harness;
    return {{"suite", s.suite},
            {"contender", s.contender},
            {"workers", s.workers},
            {"min_time_s", h.min_time_s},
            {"repetitions", h.repetitions},
            {"round", h.round},
            {"min_repetitions", h.min_repetitions},
            {"spread_to_stop", h.spread_to_stop},
            {"time_to_stop_s", h.time_to_stop_s},
            {"deadline_s", h.deadline_s},
            {"pin", h.pin},
            {"busy_loops", h.cotenant.busy_loops},
            {"busy_nice", h.cotenant.busy_nice},
            {"one_cpu", h.cotenant.one_cpu},
            {"burn_per_us", s.burn_per_us},
            {"parent_pid", s.parent_pid}};
}

cell_settings settings_from_json(const nlohmann::json& j) {
    try {
        cell_settings s;
        harness_options& h = s.harness;
        s.suite = j.at("suite").get<std::string>();
        s.contender = j.at("contender").get<std::string>();
        s.workers = j.at("workers").get<std::int32_t>();
        h.min_time_s = j.at("min_time_s").get<double>();
        h.repetitions = j.at("repetitions").get<std::int32_t>();
        h.round = j.at("round").get<std::int32_t>();
        h.min_repetitions = j.at("min_repetitions").get<std::int32_t>();
        h.spread_to_stop = j.at("spread_to_stop").get<double>();
        h.time_to_stop_s = j.at("time_to_stop_s").get<double>();
        h.deadline_s = j.at("deadline_s").get<double>();
        h.pin = j.at("pin").get<std::string>();
        h.cotenant.busy_loops = j.at("busy_loops").get<std::int32_t>();
        h.cotenant.busy_nice = j.at("busy_nice").get<std::int32_t>();
        h.cotenant.one_cpu = j.at("one_cpu").get<bool>();
        s.burn_per_us = j.at("burn_per_us").get<double>();
        s.parent_pid = j.at("parent_pid").get<std::int64_t>();
        return s;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("malformed cell settings: ") + e.what());
    }
}

std::optional<cell_result> run_cell_in_child(const std::string& executable, const cell_settings& settings,
                                             const std::atomic<int>* stop) {
    // The settings: one line on its standard input, then end of file. A child that died at
    // once leaves the pipe without a reader: the write fails, and the child's exit tells the rest.
    child_spec spec;
    // The file itself, never looked up in PATH.
    spec.argv = {executable.find('/') == std::string::npos ? "./" + executable : executable, "__cell"};
    spec.input = child_stream::pipe;
    spec.input_text = settings_to_json(settings).dump() + "\n";
    spec.output = child_stream::pipe;
    child_process child = child_process::start(spec);
    if (child.start_error() != 0)
        return failed_cell(settings, "crashed", std::string("could not start: ") + std::strerror(child.start_error()));

    // A repetition (or calibration step) must finish within the deadline; allow the child
    // some grace on top to notice its own deadline and report.
    const auto silence_limit =
        std::chrono::duration<double>(settings.harness.deadline_s + 2.0 + settings.harness.deadline_s * 0.25);
    std::string buffer, result_line;
    bool killed = false, stopped = false;
    auto last_news = std::chrono::steady_clock::now();
    for (;;) {
        if (stop && stop->load() != 0) {
            stopped = true;
            break;
        }
        const auto waited = std::chrono::steady_clock::now() - last_news;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(silence_limit - waited).count();
        if (left <= 0) {
            killed = true;
            break;
        }
        // Short polls: a stop request is noticed within 100 ms.
        const auto read = child.read_output(buffer, static_cast<int>(std::min<long long>(left, 100)));
        if (read == child_process::read_result::end) break;  // the child closed its end: it is done
        if (read == child_process::read_result::idle) continue;
        std::size_t newline;
        while ((newline = buffer.find('\n')) != std::string::npos) {
            const std::string line = buffer.substr(0, newline);
            buffer.erase(0, newline + 1);
            last_news = std::chrono::steady_clock::now();
            if (line.rfind("cell ", 0) == 0) result_line = line.substr(5);
        }
    }
    const child_exit ended = killed || stopped ? child.kill_and_wait() : child.wait();
    if (stopped) return std::nullopt;
    if (killed)
        return failed_cell(settings, "timed_out",
                           "no repetition finished within " + format_seconds(silence_limit.count()) +
                               " s; the cell's process was killed");
    if (!result_line.empty()) {
        try {
            return cell_from_json(nlohmann::json::parse(result_line));
        } catch (const std::exception& e) {
            return failed_cell(settings, "crashed", std::string("unreadable result: ") + e.what());
        }
    }
    if (ended.end == child_end::signaled)
        return failed_cell(settings, "crashed", "killed by signal " + std::to_string(ended.value));
    return failed_cell(settings, "crashed", "exited with status " + std::to_string(ended.value) + " and no result");
}

int cell_child_main() {
    // Die with the parent; if it is already gone (it died before this line), stop now.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::string line;
    if (!std::getline(std::cin, line)) {
        std::fprintf(stderr, "contend __cell: no settings on standard input\n");
        return 2;
    }
    cell_settings s;
    try {
        s = settings_from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contend __cell: %s\n", e.what());
        return 2;
    }
    if (s.parent_pid != 0 && getppid() != static_cast<pid_t>(s.parent_pid)) return 2;
    if (s.burn_per_us > 0) set_burn_iterations_per_us(s.burn_per_us);
    const suite* found = find_suite(s.suite);
    if (!found) {
        std::fprintf(stderr, "contend __cell: unknown suite '%s'\n", s.suite.c_str());
        return 2;
    }
    for (const auto& c : found->contenders) {
        if (c.id() != s.contender) continue;
        harness_options opts = s.harness;
        opts.on_repetition = [] {
            std::fputs("rep\n", stdout);
            std::fflush(stdout);
        };
        const cell_result cell = run_cell_in_process(c, s.suite, s.workers, opts);
        std::printf("cell %s\n",
                    cell_to_json(cell).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        std::fflush(stdout);
        return 0;
    }
    std::fprintf(stderr, "contend __cell: unknown contender '%s' in suite '%s'\n", s.contender.c_str(),
                 s.suite.c_str());
    return 2;
}

}  // namespace contend::lab
