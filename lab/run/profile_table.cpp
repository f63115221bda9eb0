#include "run/profile_table.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "results/results.hpp"
#include "results/statistics.hpp"
#include "text/numbers.hpp"
#include "text/utf8.hpp"

namespace contend::lab {
namespace {

template <class T>
void add_distinct(std::vector<T>& list, const T& value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// The line under a rwlock's row: each mode's acquisitions, contended ones, wait and timeouts.
std::string rwlock_line(const lock_profile& l) {
    const auto mode = [](const char* name, std::uint64_t acquisitions, std::uint64_t contended, std::uint64_t wait_ns,
                         std::uint64_t timeouts) {
        std::string s = std::string(name) + " " + std::to_string(acquisitions) + " (" + std::to_string(contended) +
                        " contended, " + format_fixed(static_cast<double>(wait_ns) / 1e6, 3) + " ms";
        if (timeouts > 0) s += ", " + std::to_string(timeouts) + " timed out";
        return s + ")";
    };
    return "        rwlock: " + mode("reads", l.read_acquisitions, l.read_contended, l.read_wait_ns, l.read_timeouts) +
           ", " + mode("writes", l.write_acquisitions, l.write_contended, l.write_wait_ns, l.write_timeouts) + "\n";
}

// The row's distributions: its waits and its sampled holds at p50, p90, p99 and the longest,
// in us; "" for a file written before the library recorded the p50s and p90s.
std::string distribution_line(const lock_profile& l) {
    if (l.wait_p50_ns == 0 && l.wait_p90_ns == 0 && l.hold_p50_ns == 0 && l.hold_max_ns == 0) return "";
    const auto us = [](std::uint64_t ns, int digits) { return format_fixed(static_cast<double>(ns) / 1e3, digits); };
    std::string s = "        wait us: p50 " + us(l.wait_p50_ns, 1) + ", p90 " + us(l.wait_p90_ns, 1) + ", p99 " +
                    us(l.wait_p99_ns, 1) + ", max " + us(l.wait_max_ns, 1);
    if (l.hold_samples > 0)
        s += "; hold us: p50 " + us(l.hold_p50_ns, 3) + ", p90 " + us(l.hold_p90_ns, 3) + ", p99 " +
             us(l.hold_p99_ns, 3) + ", max " + us(l.hold_max_ns, 3);
    return s + "\n";
}

// The lines under a row for its sampled waits' call stacks: the first `stacks` of them (most
// wait first), each with its share of the sampled waits' time and its first `frames` frames,
// innermost first; "" when the file has none.
std::string stack_lines(const lock_profile& l, std::size_t stacks = 2, std::size_t frames = 6) {
    if (l.stacks.empty()) return "";
    std::uint64_t samples = 0, wait = 0;
    for (const auto& st : l.stacks) {
        samples += st.samples;
        wait += st.wait_ns;
    }
    std::string s;
    for (std::size_t i = 0; i < std::min(stacks, l.stacks.size()); ++i) {
        const auto& st = l.stacks[i];
        const double share = wait ? 100.0 * static_cast<double>(st.wait_ns) / static_cast<double>(wait) : 0;
        // A share rounded to 100 or to 0 while other stacks waited, or this one did, says so.
        std::string share_text = format_fixed(share, 0);
        if (share_text == "100" && st.wait_ns < wait) share_text = ">99";
        else if (share_text == "0" && st.wait_ns > 0) share_text = "<1";
        s += "        stack " + std::to_string(i + 1) + " of " + std::to_string(l.stacks.size()) + ": " + share_text +
             " % of the sampled waits' time (" + std::to_string(st.samples) + " of " + std::to_string(samples) +
             " sampled waits)\n";
        for (std::size_t f = 0; f < std::min(frames, st.frames.size()); ++f)
            s += "          " + st.frames[f].text() + "\n";
        if (st.frames.size() > frames)
            s += "          ... " + std::to_string(st.frames.size() - frames) + " more frames\n";
    }
    return s;
}

}  // namespace

double program_profile::contentions_per_second() const {
    return seconds > 0 ? static_cast<double>(contended) / seconds : not_measured;
}

program_profile merge_profiles(const std::vector<process_profile>& processes, std::int64_t main_pid) {
    program_profile m;
    m.main_pid = main_pid;
    m.processes = processes.size();
    for (const auto& p : processes) {
        if (m.executable.empty() || p.pid == main_pid) m.executable = p.executable;
        add_distinct(m.locks_named, p.lock);
        add_distinct(m.hold_sample_periods, p.hold_sample_period);
        if (p.stack_sample_period != 0) add_distinct(m.stack_sample_periods, p.stack_sample_period);
        m.seconds = std::max(m.seconds, p.seconds);
        // Saturating: a hostile file's counts may be near 2^64.
        const auto add = [](std::uint64_t& to, std::uint64_t v) { to = v > UINT64_MAX - to ? UINT64_MAX : to + v; };
        add(m.acquisitions, p.acquisitions);
        add(m.contended, p.contended);
        add(m.trylock_busy, p.trylock_busy);
        add(m.timeouts, p.timeouts);
        add(m.wait_ns, p.wait_ns);
        add(m.locks_dropped, p.locks_dropped);
        add(m.read_acquisitions, p.read_acquisitions);
        add(m.write_acquisitions, p.write_acquisitions);
        m.locks.insert(m.locks.end(), p.locks.begin(), p.locks.end());
    }
    std::sort(m.locks.begin(), m.locks.end(), [](const lock_profile& a, const lock_profile& b) {
        if (a.wait_ns != b.wait_ns) return a.wait_ns > b.wait_ns;
        if (a.contended != b.contended) return a.contended > b.contended;
        if (a.pid != b.pid) return a.pid < b.pid;
        return a.address < b.address;
    });
    return m;
}

std::string profile_table(const program_profile& p, std::size_t top) {
    std::ostringstream out;
    const auto joined = [](const auto& list) {
        std::string s;
        for (const auto& v : list) {
            if (!s.empty()) s += ", ";
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) s += message_text(v, 60);
            else s += std::to_string(v);
        }
        return s;
    };
    const double contended_pct =
        p.acquisitions ? 100.0 * static_cast<double>(p.contended) / static_cast<double>(p.acquisitions) : 0;
    out << "\ncontend run --profile: " << message_text(p.executable.empty() ? "(unknown executable)" : p.executable)
        << ", lock " << joined(p.locks_named) << ", " << p.processes << (p.processes == 1 ? " process" : " processes")
        << (p.processes_lost ? " (" + std::to_string(p.processes_lost) + " more lost: the figures are theirs only)"
                             : std::string())
        << ", " << format_fixed(p.seconds, 3) << " s\n"
        << "  " << p.acquisitions << " acquisitions, " << p.contended << " contended ("
        << format_fixed(contended_pct, 2) << " %), " << format_fixed(p.contentions_per_second(), 0)
        << " contentions/s, " << format_fixed(static_cast<double>(p.wait_ns) / 1e6, 3) << " ms waited in all; "
        << p.trylock_busy << " trylock busy, " << p.timeouts << " timeouts\n";
    if (p.read_acquisitions + p.write_acquisitions > 0)
        out << "  of the acquisitions, rwlock reads " << p.read_acquisitions << " and writes " << p.write_acquisitions
            << "\n";
    out << "  holds timed on 1 in " << joined(p.hold_sample_periods)
        << " acquisitions on average (random gaps), of locks once contended\n";
    if (p.locks.empty()) {
        out << "  no lock was contended\n";
    } else {
        const bool several = p.processes > 1;
        char line[512];
        std::snprintf(line, sizeof line, "\n %4s  %-18s %s%14s %19s %11s %12s %12s %13s  %s\n", "rank", "lock",
                      several ? "     pid " : "", "acquisitions", "contended", "wait ms", "p99 wait us", "p99 hold us",
                      "est. hold ms", "site");
        out << line;
        const std::size_t shown = std::min(top, p.locks.size());
        for (std::size_t i = 0; i < shown; ++i) {
            const auto& l = p.locks[i];
            const double pct =
                l.acquisitions ? 100.0 * static_cast<double>(l.contended) / static_cast<double>(l.acquisitions) : 0;
            const std::string contended = std::to_string(l.contended) + " (" + format_fixed(pct, 1) + " %)";
            const std::string pid = several ? std::to_string(l.pid) : "";
            std::snprintf(line, sizeof line, " %4zu  %-18s %*s%s%14llu %19s %11s %12s %12s %13s  ", i + 1,
                          hex_text(l.address).c_str(), several ? 8 : 0, pid.c_str(), several ? " " : "",
                          static_cast<unsigned long long>(l.acquisitions), contended.c_str(),
                          format_fixed(static_cast<double>(l.wait_ns) / 1e6, 3).c_str(),
                          format_fixed(static_cast<double>(l.wait_p99_ns) / 1e3, 1).c_str(),
                          l.hold_samples ? format_fixed(static_cast<double>(l.hold_p99_ns) / 1e3, 3).c_str() : "-",
                          format_fixed(l.estimated_hold_ns() / 1e6, 3).c_str());
            out << line << l.site_text() << "\n";
            out << distribution_line(l);
            if (l.rwlock) out << rwlock_line(l);
            out << stack_lines(l);
        }
        if (p.locks.size() > shown) {
            std::uint64_t rest_wait = 0;
            for (std::size_t i = shown; i < p.locks.size(); ++i) rest_wait += p.locks[i].wait_ns;
            out << "  ... and " << p.locks.size() - shown << " more contended lock"
                << (p.locks.size() - shown == 1 ? "" : "s") << " ("
                << format_fixed(static_cast<double>(rest_wait) / 1e6, 3) << " ms of wait)\n";
        }
        out << "  wait: time in contended acquisitions; p99 from the library's histogram (within ~6 %); hold p99 "
               "from the sampled holds; est. hold = sampled mean hold x acquisitions; the line under a row, its "
               "waits' and sampled holds' p50, p90, p99 and longest (the longest wait exact, the rest within ~6 %)\n";
        if (std::any_of(p.locks.begin(), p.locks.end(), [](const lock_profile& l) { return !l.stacks.empty(); }))
            out << "  stacks: the call stacks of sampled contended waits (one in " << joined(p.stack_sample_periods)
                << " per thread), from the lock's caller outwards, most wait first\n";
        if (std::any_of(p.locks.begin(), p.locks.end(), [](const lock_profile& l) { return l.rwlock; }))
            out << "  a rwlock's row counts its reads and writes together (p99 over both; no hold timed); the line "
                   "under it, each mode\n";
    }
    if (p.locks_dropped > 0)
        out << "  " << p.locks_dropped
            << " more contended locks did not fit the library's table: their contentions are in the totals only\n";
    return out.str();
}

}  // namespace contend::lab
