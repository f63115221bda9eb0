#include "run/run_profile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include "measure/harness.hpp"
#include "model/statistics.hpp"
#include "os/child_process.hpp"
#include "store/results_io.hpp"
#include "text/numbers.hpp"
#include "text/utf8.hpp"

namespace contend::lab {
namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& why) { throw profile_error(why); }

const json& member(const json& object, const char* key, const std::string& where) {
    const auto it = object.find(key);
    if (it == object.end()) refuse(where + "no \"" + key + "\"");
    return *it;
}

std::uint64_t whole_number(const json& object, const char* key, const std::string& where = "") {
    const json& v = member(object, key, where);
    if (!v.is_number_unsigned()) refuse(where + "\"" + key + "\" is not a whole number >= 0 below 2^64");
    return v.get<std::uint64_t>();
}

std::string text(const json& object, const char* key, const std::string& where = "") {
    const json& v = member(object, key, where);
    if (!v.is_string()) refuse(where + "\"" + key + "\" is not a string");
    return v.get<std::string>();
}

// "0x" and 1 to 16 hex digits.
std::uint64_t hex_address(const json& object, const char* key, const std::string& where) {
    const std::string s = text(object, key, where);
    std::uint64_t value = 0;
    const bool prefixed = s.size() > 2 && s.size() <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const auto [end, error] =
        prefixed ? std::from_chars(s.data() + 2, s.data() + s.size(), value, 16) : std::from_chars_result{};
    if (!prefixed || error != std::errc() || end != s.data() + s.size())
        refuse(where + "\"" + key + "\" is not an address written 0x and hex digits: \"" + message_text(s, 40) + "\"");
    return value;
}

lock_profile parse_lock(const json& j, std::int64_t pid, std::size_t index) {
    const std::string where = "locks[" + std::to_string(index) + "]: ";
    if (!j.is_object()) refuse(where + "not an object");
    lock_profile l;
    l.pid = pid;
    l.address = hex_address(j, "address", where);
    l.acquisitions = whole_number(j, "acquisitions", where);
    l.contended = whole_number(j, "contended", where);
    l.wait_ns = whole_number(j, "wait_ns", where);
    l.wait_p99_ns = whole_number(j, "wait_p99_ns", where);
    l.wait_max_ns = whole_number(j, "wait_max_ns", where);
    l.hold_samples = whole_number(j, "hold_samples", where);
    l.hold_sampled_ns = whole_number(j, "hold_sampled_ns", where);
    l.hold_p99_ns = whole_number(j, "hold_p99_ns", where);
    const json& site = member(j, "site", where);
    const std::string in_site = where + "site: ";
    if (!site.is_object()) refuse(in_site + "not an object");
    l.site.address = hex_address(site, "address", in_site);
    l.site.module = text(site, "module", in_site);
    l.site.module_address = hex_address(site, "module_address", in_site);
    l.site.function = text(site, "function", in_site);
    return l;
}

// 1 to 10 digits at `from`, read as a number; false when there are none or more.
bool digits_at(std::string_view name, std::size_t& from, std::uint64_t& value) {
    const std::size_t start = from;
    while (from < name.size() && name[from] >= '0' && name[from] <= '9') ++from;
    if (from == start || from - start > 10) return false;
    value = std::stoull(std::string(name.substr(start, from - start)));
    return true;
}

// `<pid>.json` or `<pid>-<n>.json`: the pid, or 0 for any other name.
std::uint64_t profile_name_pid(std::string_view name) {
    std::size_t at = 0;
    std::uint64_t pid = 0, n = 0;
    if (!digits_at(name, at, pid)) return 0;
    if (at < name.size() && name[at] == '-' && !digits_at(name, ++at, n)) return 0;
    return name.substr(at) == ".json" ? pid : 0;
}

// The whole file, refused when it is not a regular file or too large.
std::string read_regular_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) refuse(std::string("cannot open: ") + std::strerror(errno));
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } close_it{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) refuse(std::string("cannot read: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) refuse("not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > max_profile_bytes)
        refuse("larger than " + std::to_string(max_profile_bytes >> 20) + " MiB");
    std::string bytes;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse(std::string("cannot read: ") + std::strerror(errno));
        if (n == 0) break;
        bytes.append(buf, static_cast<std::size_t>(n));
        if (bytes.size() > max_profile_bytes) refuse("larger than " + std::to_string(max_profile_bytes >> 20) + " MiB");
    }
    return bytes;
}

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

template <class T>
void add_distinct(std::vector<T>& list, const T& value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// --- addr2line -------------------------------------------------------------------------------

struct frame {
    std::string function, source;
};

// "file:line", "file:line (discriminator 2)", "??:0", "??:?", "file:?": the file and line, or
// "" when addr2line knew no file.
std::string source_of(std::string location) {
    if (const auto d = location.find(" (discriminator "); d != std::string::npos) location.erase(d);
    const auto colon = location.rfind(':');
    const std::string file = location.substr(0, colon);
    if (file.empty() || file == "??") return "";
    if (colon == std::string::npos) return file;
    const std::string line = location.substr(colon + 1);
    if (line.empty() || line == "?" || line == "0") return file;
    return location;
}

// Runs the tool and returns what it printed on standard output; throws std::runtime_error
// saying why there is nothing to read.
std::string run_tool(const std::vector<std::string>& args, double timeout_s) {
    child_spec spec;
    spec.argv = args;
    spec.input = child_stream::null;
    spec.output = child_stream::pipe;
    spec.errors = child_stream::null;
    // In a process group of its own, so that a tool stopped for taking too long is stopped
    // with whatever it started (a wrapper script's children would keep running).
    spec.new_process_group = true;
    spec.timeout_s = timeout_s;
    spec.output_limit = std::size_t{16} << 20;  // far more than any table of sites
    child_result r = run_child(spec);
    switch (r.end) {
        case child_end::not_started:
            throw std::runtime_error(args[0] + " could not be started: " + std::strerror(r.value));
        case child_end::timed_out:
        case child_end::too_much_output:  // stopped the same way
            throw std::runtime_error(args[0] + " did not finish within " + format_fixed(timeout_s, 0) + " s");
        case child_end::signaled:
            throw std::runtime_error(args[0] + " was killed by signal " + std::to_string(r.value));
        case child_end::exited:
            if (r.value != 0) throw std::runtime_error(args[0] + " exited with status " + std::to_string(r.value));
    }
    return std::move(r.output);
}

// Splits addr2line's -a -f -i output into the frames of each address, in order: each address
// is a line "0x<hex>" of exactly that value, then (function, location) pairs.
std::vector<std::vector<frame>> parse_addr2line(const std::string& output,
                                                const std::vector<std::uint64_t>& addresses) {
    std::vector<std::string> lines;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    const auto is_address = [](const std::string& line, std::uint64_t want) {
        if (line.size() < 3 || line.size() > 18 || line[0] != '0' || line[1] != 'x') return false;
        std::uint64_t v = 0;
        const auto [end, error] = std::from_chars(line.data() + 2, line.data() + line.size(), v, 16);
        return error == std::errc() && end == line.data() + line.size() && v == want;
    };
    std::vector<std::vector<frame>> frames(addresses.size());
    std::size_t i = 0;
    for (std::size_t a = 0; a < addresses.size(); ++a) {
        if (i >= lines.size() || !is_address(lines[i], addresses[a]))
            throw std::runtime_error("addr2line printed what was not expected for address " + hex(addresses[a]));
        ++i;
        while (i < lines.size() && !(a + 1 < addresses.size() && is_address(lines[i], addresses[a + 1]))) {
            if (i + 1 >= lines.size()) throw std::runtime_error("addr2line's output ends in the middle of a frame");
            frames[a].push_back({lines[i], lines[i + 1]});
            i += 2;
        }
    }
    return frames;
}

}  // namespace

double lock_profile::estimated_hold_ns() const {
    if (hold_samples == 0) return not_measured;
    return static_cast<double>(hold_sampled_ns) / static_cast<double>(hold_samples) * static_cast<double>(acquisitions);
}

std::string lock_profile::site_text() const {
    std::string s;
    if (!site.symbol.empty()) {
        s = site.symbol;
        if (!site.source.empty()) s.append(" at ").append(site.source);
        if (!site.inlined_in.empty()) s.append(" (inlined in ").append(site.inlined_in).append(")");
        // Without line information addr2line names the nearest symbol before the address,
        // which in a stripped program may be another function: the place says where it is.
        if (site.source.empty() && !site.module.empty())
            s.append(" (")
                .append(std::filesystem::path(site.module).filename().string())
                .append("+")
                .append(hex(site.module_address))
                .append(")");
    } else if (!site.function.empty()) {
        s = site.function;
    } else if (!site.module.empty()) {
        s = std::filesystem::path(site.module).filename().string() + "+" + hex(site.module_address);
    } else {
        s = hex(site.address);
    }
    return message_text(s, 160);
}

process_profile parse_profile(std::string_view bytes) {
    json j;
    try {
        j = parse_json_refusing_duplicate_keys(bytes);
    } catch (const json_duplicate_key& e) {
        refuse(e.what());
    } catch (const std::exception& e) {
        refuse(std::string("not JSON: ") + message_text(e.what(), 160));
    }
    if (!j.is_object()) refuse("not a JSON object");
    const std::string format = text(j, "format");
    if (format != profile_format_name)
        refuse("\"format\" is \"" + message_text(format, 60) + "\", not \"" + std::string(profile_format_name) +
               "\" (a library of another version of contend?)");
    process_profile p;
    const std::uint64_t pid = whole_number(j, "pid");
    if (pid == 0 || pid > 0x7fffffff) refuse("\"pid\" " + std::to_string(pid) + " is not a process id");
    p.pid = static_cast<std::int64_t>(pid);
    p.executable = text(j, "executable");
    p.lock = text(j, "lock");
    const json& seconds = member(j, "seconds", "");
    if (!seconds.is_number() || !std::isfinite(seconds.get<double>()) || seconds.get<double>() < 0)
        refuse("\"seconds\" is not a number >= 0");
    p.seconds = seconds.get<double>();
    p.hold_sample_period = whole_number(j, "hold_sample_period");
    p.acquisitions = whole_number(j, "acquisitions");
    p.contended = whole_number(j, "contended");
    p.trylock_busy = whole_number(j, "trylock_busy");
    p.timeouts = whole_number(j, "timeouts");
    p.wait_ns = whole_number(j, "wait_ns");
    p.locks_dropped = whole_number(j, "locks_dropped");
    const json& locks = member(j, "locks", "");
    if (!locks.is_array()) refuse("\"locks\" is not an array");
    std::set<std::uint64_t> seen;
    for (std::size_t i = 0; i < locks.size(); ++i) {
        p.locks.push_back(parse_lock(locks[i], p.pid, i));
        if (!seen.insert(p.locks.back().address).second)
            refuse("locks[" + std::to_string(i) + "]: the lock " + hex(p.locks.back().address) + " is listed twice");
    }
    return p;
}

profile_folder read_profile_folder(const std::string& folder) {
    profile_folder result;
    std::error_code ec;
    std::vector<std::string> names;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
        if (const std::string name = it->path().filename().string(); profile_name_pid(name) != 0) names.push_back(name);
    if (ec) result.errors.push_back(folder + ": cannot list the folder: " + ec.message());
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;  // by pid
    });
    for (const auto& name : names) {
        try {
            process_profile p = parse_profile(read_regular_file(folder + "/" + name));
            if (static_cast<std::uint64_t>(p.pid) != profile_name_pid(name))
                refuse("its \"pid\" is " + std::to_string(p.pid) + ", not the one in its name");
            result.processes.push_back(std::move(p));
        } catch (const profile_error& e) {
            result.errors.push_back(name + ": " + e.what());
        }
    }
    return result;
}

run_markers read_run_markers(const std::string& folder) {
    run_markers markers;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::size_t at = 0;
        std::uint64_t pid = 0;
        if (!digits_at(name, at, pid) || pid == 0) continue;
        const std::string_view rest = std::string_view(name).substr(at);
        if (rest == ".running") markers.unfinished.push_back(static_cast<std::int64_t>(pid));
        else if (rest.starts_with(".loaded."))
            markers.loaded.emplace_back(static_cast<std::int64_t>(pid), std::string(rest.substr(8)));
    }
    std::sort(markers.loaded.begin(), markers.loaded.end());
    std::sort(markers.unfinished.begin(), markers.unfinished.end());
    return markers;
}

profile_directory::profile_directory(bool writable_by_all) {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t && *t == '/') base = t;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    std::string pattern = base + "/contend-run-profile.XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw std::system_error(errno, std::generic_category(), "cannot create a profile folder in " + base);
    path_ = pattern;
    if (writable_by_all && ::chmod(path_.c_str(), 0733) != 0) {
        const int e = errno;
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
        throw std::system_error(e, std::generic_category(),
                                "cannot open the profile folder " + path_ + " to all users");
    }
}

profile_directory::~profile_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

double program_profile::contentions_per_s() const {
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
        m.seconds = std::max(m.seconds, p.seconds);
        // Saturating: a hostile file's counts may be near 2^64.
        const auto add = [](std::uint64_t& to, std::uint64_t v) { to = v > UINT64_MAX - to ? UINT64_MAX : to + v; };
        add(m.acquisitions, p.acquisitions);
        add(m.contended, p.contended);
        add(m.trylock_busy, p.trylock_busy);
        add(m.timeouts, p.timeouts);
        add(m.wait_ns, p.wait_ns);
        add(m.locks_dropped, p.locks_dropped);
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

std::vector<std::string> symbolize_sites(program_profile& profile, std::size_t limit, const std::string& tool,
                                         double timeout_s) {
    std::map<std::string, std::vector<lock_profile*>> by_module;
    for (std::size_t i = 0; i < std::min(limit, profile.locks.size()); ++i)
        if (auto& l = profile.locks[i]; !l.site.module.empty()) by_module[l.site.module].push_back(&l);
    std::vector<std::string> failures;
    for (auto& [module, locks] : by_module) {
        struct stat st {};
        if (::stat(module.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            failures.push_back(message_text(module) +
                               ": not a regular file here; its sites are named as the library named them");
            continue;
        }
        std::vector<std::uint64_t> addresses;
        for (const auto* l : locks) add_distinct(addresses, l->site.module_address);
        std::vector<std::string> args = {tool, "-a", "-f", "-C", "-i", "-e", module};
        for (const auto a : addresses) args.push_back(hex(a));
        try {
            const auto frames = parse_addr2line(run_tool(args, timeout_s), addresses);
            for (auto* l : locks) {
                const auto at = std::find(addresses.begin(), addresses.end(), l->site.module_address);
                const auto& f = frames[static_cast<std::size_t>(at - addresses.begin())];
                if (f.empty() || f.front().function == "??") continue;
                l->site.symbol = f.front().function;
                l->site.source = source_of(f.front().source);
                if (f.size() > 1 && f.back().function != "??") l->site.inlined_in = f.back().function;
            }
        } catch (const std::exception& e) {
            failures.push_back(message_text(module) + ": " + e.what() +
                               "; its sites are named as the library named them");
        }
    }
    return failures;
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
        << format_fixed(contended_pct, 2) << " %), " << format_fixed(p.contentions_per_s(), 0) << " contentions/s, "
        << format_fixed(static_cast<double>(p.wait_ns) / 1e6, 3) << " ms waited in all; " << p.trylock_busy
        << " trylock busy, " << p.timeouts << " timeouts\n"
        << "  holds timed on 1 in " << joined(p.hold_sample_periods)
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
                          hex(l.address).c_str(), several ? 8 : 0, pid.c_str(), several ? " " : "",
                          static_cast<unsigned long long>(l.acquisitions), contended.c_str(),
                          format_fixed(static_cast<double>(l.wait_ns) / 1e6, 3).c_str(),
                          format_fixed(static_cast<double>(l.wait_p99_ns) / 1e3, 1).c_str(),
                          l.hold_samples ? format_fixed(static_cast<double>(l.hold_p99_ns) / 1e3, 3).c_str() : "-",
                          format_fixed(l.estimated_hold_ns() / 1e6, 3).c_str());
            out << line << l.site_text() << "\n";
        }
        if (p.locks.size() > shown) {
            std::uint64_t rest_wait = 0;
            for (std::size_t i = shown; i < p.locks.size(); ++i) rest_wait += p.locks[i].wait_ns;
            out << "  ... and " << p.locks.size() - shown << " more contended lock"
                << (p.locks.size() - shown == 1 ? "" : "s") << " ("
                << format_fixed(static_cast<double>(rest_wait) / 1e6, 3) << " ms of wait)\n";
        }
        out << "  wait: time in contended acquisitions; p99 from the library's histogram (within ~6 %); hold p99 "
               "from the sampled holds; est. hold = sampled mean hold x acquisitions\n";
    }
    if (p.locks_dropped > 0)
        out << "  " << p.locks_dropped
            << " more contended locks did not fit the library's table: their contentions are in the totals only\n";
    return out.str();
}

param_list program_params(const std::vector<std::string>& argv) {
    std::string name = argv.empty() ? "" : std::filesystem::path(argv.front()).filename().string();
    for (auto& c : name) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                           c == '_' || c == '+' || c == '-';
        if (!plain) c = '_';
    }
    if (name.size() > 64) name.resize(64);
    if (name.empty()) name = "_";
    std::uint64_t h = 0xcbf29ce484222325ULL;
    const auto mix = [&h](unsigned char byte) {
        h ^= byte;
        h *= 0x100000001b3ULL;
    };
    for (std::size_t i = 1; i < argv.size(); ++i) {
        const std::uint64_t n = argv[i].size();
        for (int b = 0; b < 8; ++b) mix(static_cast<unsigned char>(n >> (8 * b)));
        for (const char c : argv[i]) mix(static_cast<unsigned char>(c));
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
    m.emplace_back("contentions_per_s", p.contentions_per_s());
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
    if (!p.locks.empty()) {
        const auto& t = p.locks.front();
        m.emplace_back("top_lock_acquisitions", static_cast<double>(t.acquisitions));
        m.emplace_back("top_lock_contended", static_cast<double>(t.contended));
        m.emplace_back("top_lock_wait_ms", ms(t.wait_ns));
        m.emplace_back("top_lock_wait_p99_us", us(t.wait_p99_ns));
        m.emplace_back("top_lock_hold_p99_us", t.hold_samples ? us(t.hold_p99_ns) : not_measured);
        m.emplace_back("top_lock_hold_ms", t.estimated_hold_ns() / 1e6);
    }
    return m;
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
    return cell;
}

}  // namespace contend::lab
