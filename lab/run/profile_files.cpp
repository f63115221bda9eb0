#include "run/profile_files.hpp"

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
#include <set>
#include <system_error>

#include "results/statistics.hpp"
#include "store/results_io.hpp"
#include "text/numbers.hpp"
#include "text/utf8.hpp"

namespace contend::lab {
namespace {

// The file's fields and names, declared once with the writer's (src/interpose/format/).
using namespace contend::interpose::profile_format;

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

// A count a file from before rwlocks were profiled does not have: 0 when absent.
std::uint64_t optional_whole_number(const json& object, const char* key, const std::string& where = "") {
    return object.contains(key) ? whole_number(object, key, where) : 0;
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

// A rwlock's counts by mode, each a field of the file and a member of lock_profile.
constexpr std::pair<const char*, std::uint64_t lock_profile::*> rwlock_counts[] = {
    {fields::read_acquisitions, &lock_profile::read_acquisitions},
    {fields::read_contended, &lock_profile::read_contended},
    {fields::read_timeouts, &lock_profile::read_timeouts},
    {fields::read_wait_ns, &lock_profile::read_wait_ns},
    {fields::write_acquisitions, &lock_profile::write_acquisitions},
    {fields::write_contended, &lock_profile::write_contended},
    {fields::write_timeouts, &lock_profile::write_timeouts},
    {fields::write_wait_ns, &lock_profile::write_wait_ns},
};

// A file's frames per stack at most (the library writes up to 16).
constexpr std::size_t max_frames = 64;

lock_site parse_site(const json& site, const std::string& where) {
    if (!site.is_object()) refuse(where + "not an object");
    lock_site s;
    s.address = hex_address(site, fields::address, where);
    s.module = text(site, fields::module, where);
    s.module_address = hex_address(site, fields::module_address, where);
    s.function = text(site, fields::function, where);
    return s;
}

lock_profile parse_lock(const json& j, std::int64_t pid, std::size_t index) {
    const std::string where = "locks[" + std::to_string(index) + "]: ";
    if (!j.is_object()) refuse(where + "not an object");
    lock_profile l;
    l.pid = pid;
    l.address = hex_address(j, fields::address, where);
    l.acquisitions = whole_number(j, fields::acquisitions, where);
    l.contended = whole_number(j, fields::contended, where);
    l.wait_ns = whole_number(j, fields::wait_ns, where);
    l.wait_p99_ns = whole_number(j, fields::wait_p99_ns, where);
    l.wait_max_ns = whole_number(j, fields::wait_max_ns, where);
    l.hold_samples = whole_number(j, fields::hold_samples, where);
    l.hold_sampled_ns = whole_number(j, fields::hold_sampled_ns, where);
    l.hold_p99_ns = whole_number(j, fields::hold_p99_ns, where);
    l.wait_p50_ns = optional_whole_number(j, fields::wait_p50_ns, where);
    l.wait_p90_ns = optional_whole_number(j, fields::wait_p90_ns, where);
    l.hold_p50_ns = optional_whole_number(j, fields::hold_p50_ns, where);
    l.hold_p90_ns = optional_whole_number(j, fields::hold_p90_ns, where);
    l.hold_max_ns = optional_whole_number(j, fields::hold_max_ns, where);
    l.site = parse_site(member(j, fields::site, where), where + "site: ");
    if (j.contains(fields::stacks)) {
        const json& stacks = j[fields::stacks];
        if (!stacks.is_array()) refuse(where + "\"" + fields::stacks + "\" is not an array");
        for (std::size_t s = 0; s < stacks.size(); ++s) {
            const std::string in_stack = where + "stacks[" + std::to_string(s) + "]: ";
            const json& stack = stacks[s];
            if (!stack.is_object()) refuse(in_stack + "not an object");
            lock_stack st;
            const json& frames = member(stack, fields::frames, in_stack);
            if (!frames.is_array() || frames.empty() || frames.size() > max_frames)
                refuse(in_stack + "\"frames\" is not an array of 1 to " + std::to_string(max_frames) + " sites");
            for (std::size_t f = 0; f < frames.size(); ++f)
                st.frames.push_back(parse_site(frames[f], in_stack + "frames[" + std::to_string(f) + "]: "));
            st.samples = whole_number(stack, fields::samples, in_stack);
            st.wait_ns = whole_number(stack, fields::wait_ns, in_stack);
            l.stacks.push_back(std::move(st));
        }
    }
    if (j.contains(fields::wait_histogram)) {
        const json& h = j[fields::wait_histogram];
        const std::string in_h = where + "\"" + fields::wait_histogram + "\": ";
        if (!h.is_array()) refuse(in_h + "not an array");
        for (const json& bucket : h) {
            if (!bucket.is_array() || bucket.size() != 2 || !bucket[0].is_number_unsigned() ||
                !bucket[1].is_number_unsigned())
                refuse(in_h + "a bucket is not a pair of whole numbers [lower bound in ns, count]");
            const auto low = bucket[0].get<std::uint64_t>(), count = bucket[1].get<std::uint64_t>();
            if (!l.wait_histogram.empty() && low <= l.wait_histogram.back().first)
                refuse(in_h + "the buckets are not in increasing order");
            l.wait_histogram.emplace_back(low, count);
        }
    }
    if (j.contains(fields::kind)) {
        const std::string kind = text(j, fields::kind, where);
        if (kind != fields::rwlock_kind)
            refuse(where + "\"" + fields::kind + "\" is \"" + message_text(kind, 40) + "\", not \"" +
                   fields::rwlock_kind + "\"");
        l.rwlock = true;
        for (const auto& [name, member] : rwlock_counts) l.*member = whole_number(j, name, where);
    }
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
    if (at < name.size() && name[at] == image_separator && !digits_at(name, ++at, n)) return 0;
    return name.substr(at) == profile_suffix ? pid : 0;
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

}  // namespace

std::string hex_text(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

double lock_profile::estimated_hold_ns() const {
    if (hold_samples == 0) return not_measured;
    return static_cast<double>(hold_sampled_ns) / static_cast<double>(hold_samples) * static_cast<double>(acquisitions);
}

std::string lock_site::text() const {
    std::string s;
    if (!symbol.empty()) {
        s = symbol;
        if (!source.empty()) s.append(" at ").append(source);
        if (!inlined_in.empty()) s.append(" (inlined in ").append(inlined_in).append(")");
        // Without line information addr2line names the nearest symbol before the address,
        // which in a stripped program may be another function: the place says where it is.
        if (source.empty() && !module.empty())
            s.append(" (")
                .append(std::filesystem::path(module).filename().string())
                .append("+")
                .append(hex_text(module_address))
                .append(")");
    } else if (!function.empty()) {
        s = function;
    } else if (!module.empty()) {
        s = std::filesystem::path(module).filename().string() + "+" + hex_text(module_address);
    } else {
        s = hex_text(address);
    }
    return message_text(s, 160);
}

std::string lock_profile::site_text() const { return site.text(); }

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
    const std::string format = text(j, fields::format);
    if (format != profile_format_name)
        refuse("\"format\" is \"" + message_text(format, 60) + "\", not \"" + std::string(profile_format_name) +
               "\" (a library of another version of contend?)");
    process_profile p;
    const std::uint64_t pid = whole_number(j, fields::pid);
    if (pid == 0 || pid > 0x7fffffff) refuse("\"pid\" " + std::to_string(pid) + " is not a process id");
    p.pid = static_cast<std::int64_t>(pid);
    p.executable = text(j, fields::executable);
    p.lock = text(j, fields::lock);
    const json& seconds = member(j, fields::seconds, "");
    if (!seconds.is_number() || !std::isfinite(seconds.get<double>()) || seconds.get<double>() < 0)
        refuse("\"seconds\" is not a number >= 0");
    p.seconds = seconds.get<double>();
    p.hold_sample_period = whole_number(j, fields::hold_sample_period);
    p.stack_sample_period = optional_whole_number(j, fields::stack_sample_period);
    p.acquisitions = whole_number(j, fields::acquisitions);
    p.contended = whole_number(j, fields::contended);
    p.trylock_busy = whole_number(j, fields::trylock_busy);
    p.timeouts = whole_number(j, fields::timeouts);
    p.wait_ns = whole_number(j, fields::wait_ns);
    p.locks_dropped = whole_number(j, fields::locks_dropped);
    p.read_acquisitions = optional_whole_number(j, fields::read_acquisitions);
    p.write_acquisitions = optional_whole_number(j, fields::write_acquisitions);
    const json& locks = member(j, fields::locks, "");
    if (!locks.is_array()) refuse("\"locks\" is not an array");
    std::set<std::uint64_t> seen;
    for (std::size_t i = 0; i < locks.size(); ++i) {
        p.locks.push_back(parse_lock(locks[i], p.pid, i));
        if (!seen.insert(p.locks.back().address).second)
            refuse("locks[" + std::to_string(i) + "]: the lock " + hex_text(p.locks.back().address) +
                   " is listed twice");
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
        const std::string_view loaded = loaded_infix;
        if (rest == running_suffix) markers.unfinished.push_back(static_cast<std::int64_t>(pid));
        else if (rest.starts_with(loaded))
            markers.loaded.emplace_back(static_cast<std::int64_t>(pid), std::string(rest.substr(loaded.size())));
    }
    std::sort(markers.loaded.begin(), markers.loaded.end());
    std::sort(markers.unfinished.begin(), markers.unfinished.end());
    return markers;
}

}  // namespace contend::lab
