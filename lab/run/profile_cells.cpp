#include "run/profile_cells.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "measure/harness.hpp"
#include "results/lock_profile.hpp"
#include "results/statistics.hpp"
#include "store/results_io.hpp"
#include "text/fnv1a.hpp"
#include "text/numbers.hpp"

namespace contend::lab {

param_list program_params(const std::vector<std::string>& argv) {
    std::string name = argv.empty() ? "" : std::filesystem::path(argv.front()).filename().string();
    for (auto& c : name) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                           c == '_' || c == '+' || c == '-';
        if (!plain) c = '_';
    }
    if (name.size() > 64) name.resize(64);
    if (name.empty()) name.push_back('_');
    // Each argument's length (8 bytes, little-endian) and then its bytes, so that ("ab", "c")
    // and ("a", "bc") differ.
    std::uint64_t h = fnv1a_basis;
    for (std::size_t i = 1; i < argv.size(); ++i) {
        const std::uint64_t n = argv[i].size();
        char length[8];
        for (int b = 0; b < 8; ++b) length[b] = static_cast<char>(n >> (8 * b));
        h = fnv1a(argv[i], fnv1a(std::string_view(length, sizeof length), h));
    }
    char args[24];
    std::snprintf(args, sizeof args, "%012llx", static_cast<unsigned long long>(h >> 16));
    return {{"program", name}, {"args", args}};
}

namespace {

metric_list profile_metrics(const program_profile& p) {
    const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e3; };
    metric_list m;
    // contentions_per_second under the name contend run has always published (docs/lab.md).
    m.emplace_back("contentions_per_s", p.contentions_per_second());
    m.emplace_back("acquisitions", static_cast<double>(p.acquisitions));
    m.emplace_back("contended", static_cast<double>(p.contended));
    m.emplace_back("trylock_busy", static_cast<double>(p.trylock_busy));
    m.emplace_back("timeouts", static_cast<double>(p.timeouts));
    m.emplace_back("wait_ms", ms(p.wait_ns));
    std::uint64_t worst_p99 = 0;
    for (const auto& l : p.locks) worst_p99 = std::max(worst_p99, l.wait_p99_ns);
    m.emplace_back("wait_p99_us", p.locks.empty() ? not_measured : us(worst_p99));
    m.emplace_back("locks_contended", static_cast<double>(p.locks.size()));
    m.emplace_back("locks_dropped", static_cast<double>(p.locks_dropped));
    m.emplace_back("processes", static_cast<double>(p.processes));
    // A program's rwlocks, each mode apart, only when it took one (so a program of mutexes only
    // has the row it had before rwlocks were profiled).
    if (p.read_acquisitions + p.write_acquisitions > 0) {
        std::uint64_t read_contended = 0, write_contended = 0, read_wait = 0, write_wait = 0;
        for (const auto& l : p.locks) {
            read_contended += l.read_contended;
            write_contended += l.write_contended;
            read_wait += l.read_wait_ns;
            write_wait += l.write_wait_ns;
        }
        m.emplace_back("rwlock_read_acquisitions", static_cast<double>(p.read_acquisitions));
        m.emplace_back("rwlock_write_acquisitions", static_cast<double>(p.write_acquisitions));
        m.emplace_back("rwlock_read_contended", static_cast<double>(read_contended));
        m.emplace_back("rwlock_write_contended", static_cast<double>(write_contended));
        m.emplace_back("rwlock_read_wait_ms", ms(read_wait));
        m.emplace_back("rwlock_write_wait_ms", ms(write_wait));
    }
    if (!p.locks.empty()) {
        const auto& t = p.locks.front();
        m.emplace_back("top_lock_acquisitions", static_cast<double>(t.acquisitions));
        m.emplace_back("top_lock_contended", static_cast<double>(t.contended));
        m.emplace_back("top_lock_wait_ms", ms(t.wait_ns));
        m.emplace_back("top_lock_wait_p50_us", us(t.wait_p50_ns));
        m.emplace_back("top_lock_wait_p90_us", us(t.wait_p90_ns));
        m.emplace_back("top_lock_wait_p99_us", us(t.wait_p99_ns));
        m.emplace_back("top_lock_wait_max_us", us(t.wait_max_ns));
        m.emplace_back("top_lock_hold_p50_us", t.hold_samples ? us(t.hold_p50_ns) : not_measured);
        m.emplace_back("top_lock_hold_p90_us", t.hold_samples ? us(t.hold_p90_ns) : not_measured);
        m.emplace_back("top_lock_hold_p99_us", t.hold_samples ? us(t.hold_p99_ns) : not_measured);
        m.emplace_back("top_lock_hold_max_us", t.hold_samples ? us(t.hold_max_ns) : not_measured);
        m.emplace_back("top_lock_hold_ms", t.estimated_hold_ns() / 1e6);
    }
    return m;
}

// The locks of one run's profile that waited most, as the row keeps them (at most
// lock_profile_max_locks, each with its first lock_profile_max_stacks stacks).
lock_profile_data top_locks(const program_profile& p) {
    lock_profile_data out;
    out.stack_sample_period = p.stack_sample_periods.empty() ? 0 : p.stack_sample_periods.front();
    for (const auto& l : p.locks) {
        if (out.locks.size() == lock_profile_max_locks) break;
        profiled_lock k;
        k.site = l.site_text();
        if (k.site.empty()) k.site = hex_text(l.address);
        if (k.site.size() > lock_profile_max_name_bytes) k.site.resize(lock_profile_max_name_bytes);
        k.rwlock = l.rwlock;
        k.acquisitions = l.acquisitions;
        k.contended = l.contended;
        k.wait_ns = l.wait_ns;
        k.wait_p50_ns = l.wait_p50_ns;
        k.wait_p90_ns = l.wait_p90_ns;
        k.wait_p99_ns = l.wait_p99_ns;
        k.wait_max_ns = l.wait_max_ns;
        for (const auto& bucket : l.wait_histogram) {
            if (k.wait_histogram.size() == lock_profile_max_buckets) break;
            k.wait_histogram.push_back(bucket);
        }
        k.stacks_seen = l.stacks.size();
        for (const auto& s : l.stacks) {
            k.sampled_waits += s.samples;
            k.sampled_wait_ns += s.wait_ns;
        }
        for (const auto& s : l.stacks) {
            if (k.stacks.size() == lock_profile_max_stacks) break;
            waiting_stack w;
            w.samples = s.samples;
            w.wait_ns = s.wait_ns;
            for (const auto& frame : s.frames) {
                if (w.frames.size() == lock_profile_max_frames) break;
                std::string name = frame.text();
                if (name.empty()) name = hex_text(frame.address);
                if (name.size() > lock_profile_max_name_bytes) name.resize(lock_profile_max_name_bytes);
                w.frames.push_back(std::move(name));
            }
            if (!w.frames.empty()) k.stacks.push_back(std::move(w));
        }
        out.locks.push_back(std::move(k));
    }
    return out;
}

void set_status(cell_result& cell, const program_run& run) {
    const program_status& s = run.status;
    if (!run.not_interposed.empty() && s.start_error == 0 && !s.signalled && s.value == 0) {
        cell.status = "not_interposed";
        cell.detail = run.not_interposed;
    } else if (s.start_error != 0) {
        cell.status = "crashed";
        cell.detail = std::string("could not start: ") + std::strerror(s.start_error);
    } else if (s.signalled) {
        cell.status = "crashed";
        cell.detail = "killed by signal " + std::to_string(s.value);
        if (const char* name = strsignal(s.value)) cell.detail.append(" (").append(name).append(")");
    } else if (s.value != 0) {
        cell.status = "failed";
        cell.detail = "exit status " + std::to_string(s.value);
    }
}

}  // namespace

cell_result run_cell(const run_record_input& in) {
    cell_result cell;
    cell.suite = "run";
    cell.contender = in.lock;
    cell.params = program_params(in.argv);
    if (in.profiled) cell.params.emplace_back("profile", "on");
    cell.workers = 1;
    cell.operation = "run";
    cell.ops_per_worker = 1;
    cell.repetitions = static_cast<std::int32_t>(in.runs.size());
    std::vector<double> cpu;
    // Each metric's values over the runs, in the order the first run that has it named it.
    std::vector<std::pair<std::string, std::vector<double>>> metrics;
    double lost = 0;
    for (const auto& run : in.runs) {
        cell.ns_per_op.push_back(run.wall_ns);
        cpu.push_back(run.status.cpu_ns);
        if (cell.valid()) set_status(cell, run);
        if (in.profiled) lost = std::max(lost, static_cast<double>(run.processes_lost));
        if (!run.profile) continue;
        for (const auto& [name, value] : profile_metrics(*run.profile)) {
            auto it = std::find_if(metrics.begin(), metrics.end(), [&](const auto& m) { return m.first == name; });
            if (it == metrics.end()) it = metrics.insert(metrics.end(), {name, {}});
            if (!std::isnan(value)) it->second.push_back(value);
        }
    }
    summarize_samples(cell);
    cell.cpu_ns_per_op = cpu.empty() ? 0 : median(cpu);
    for (auto& [name, values] : metrics) {
        check_metric_name(name);
        cell.metrics.emplace_back(name, values.empty() ? not_measured : median(values));
    }
    // Not a median: one run's loss is the row's.
    if (in.profiled) cell.metrics.emplace_back("processes_lost", lost);
    // Its locks from one run, whole (a median of histograms and stacks would be no run's):
    // the profiled run whose total wait is the median of theirs (the lower middle of an even
    // count).
    std::vector<const program_profile*> profiles;
    for (const auto& run : in.runs)
        if (run.profile) profiles.push_back(&*run.profile);
    if (!profiles.empty()) {
        std::stable_sort(profiles.begin(), profiles.end(),
                         [](const program_profile* a, const program_profile* b) { return a->wait_ns < b->wait_ns; });
        cell.lock_profile = lock_profile_text(top_locks(*profiles[(profiles.size() - 1) / 2]));
    }
    return cell;
}

}  // namespace contend::lab
