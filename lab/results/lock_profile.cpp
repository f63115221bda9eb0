#include "results/lock_profile.hpp"

#include <nlohmann/json.hpp>

namespace contend::lab {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& what) { throw lock_profile_error("lock profile: " + what); }

const json& member(const json& object, const char* key, const std::string& where) {
    const auto it = object.find(key);
    if (it == object.end()) refuse(where + " lacks '" + key + "'");
    return *it;
}

std::uint64_t count(const json& v, const std::string& what) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    refuse(what + " is not a whole number of 0 or more");
}

std::uint64_t count_of(const json& object, const char* key, const std::string& where) {
    return count(member(object, key, where), where + "." + key);
}

std::string name(const json& v, const std::string& what) {
    if (!v.is_string()) refuse(what + " is not a string");
    std::string s = v.get<std::string>();
    if (s.empty() || s.size() > lock_profile_max_name_bytes)
        refuse(what + " is empty or longer than " + std::to_string(lock_profile_max_name_bytes) + " bytes");
    return s;
}

const json& array_of(const json& object, const char* key, const std::string& where, std::size_t most) {
    const json& a = member(object, key, where);
    if (!a.is_array()) refuse(where + "." + key + " is not an array");
    if (a.size() > most) refuse(where + "." + key + " holds more than " + std::to_string(most));
    return a;
}

profiled_lock lock_from_json(const json& j, const std::string& where) {
    if (!j.is_object()) refuse(where + " is not an object");
    profiled_lock l;
    l.site = name(member(j, "site", where), where + ".site");
    const json& kind = member(j, "kind", where);
    if (kind != "mutex" && kind != "rwlock") refuse(where + ".kind is neither \"mutex\" nor \"rwlock\"");
    l.rwlock = kind == "rwlock";
    l.acquisitions = count_of(j, "acquisitions", where);
    l.contended = count_of(j, "contended", where);
    l.wait_ns = count_of(j, "wait_ns", where);
    l.wait_p50_ns = count_of(j, "wait_p50_ns", where);
    l.wait_p90_ns = count_of(j, "wait_p90_ns", where);
    l.wait_p99_ns = count_of(j, "wait_p99_ns", where);
    l.wait_max_ns = count_of(j, "wait_max_ns", where);
    const json& buckets = array_of(j, "wait_histogram", where, lock_profile_max_buckets);
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        const std::string at = where + ".wait_histogram[" + std::to_string(i) + "]";
        if (!buckets[i].is_array() || buckets[i].size() != 2) refuse(at + " is not a pair [low_ns, count]");
        const std::uint64_t low = count(buckets[i][0], at + " low_ns");
        if (!l.wait_histogram.empty() && low <= l.wait_histogram.back().first)
            refuse(at + " does not start above the bucket before it");
        l.wait_histogram.emplace_back(low, count(buckets[i][1], at + " count"));
    }
    const json& stacks = array_of(j, "stacks", where, lock_profile_max_stacks);
    for (std::size_t i = 0; i < stacks.size(); ++i) {
        const std::string at = where + ".stacks[" + std::to_string(i) + "]";
        if (!stacks[i].is_object()) refuse(at + " is not an object");
        waiting_stack s;
        const json& frames = array_of(stacks[i], "frames", at, lock_profile_max_frames);
        if (frames.empty()) refuse(at + ".frames is empty");
        for (std::size_t f = 0; f < frames.size(); ++f)
            s.frames.push_back(name(frames[f], at + ".frames[" + std::to_string(f) + "]"));
        s.samples = count_of(stacks[i], "samples", at);
        s.wait_ns = count_of(stacks[i], "wait_ns", at);
        l.stacks.push_back(std::move(s));
    }
    l.stacks_seen = count_of(j, "stacks_seen", where);
    l.sampled_waits = count_of(j, "sampled_waits", where);
    l.sampled_wait_ns = count_of(j, "sampled_wait_ns", where);
    if (l.stacks_seen < l.stacks.size()) refuse(where + ".stacks_seen is fewer than its stacks");
    return l;
}

}  // namespace

std::string lock_profile_text(const lock_profile_data& profile) {
    if (profile.locks.empty()) return {};
    json locks = json::array();
    for (const auto& l : profile.locks) {
        json buckets = json::array();
        for (const auto& [low, n] : l.wait_histogram) buckets.push_back({low, n});
        json stacks = json::array();
        for (const auto& s : l.stacks)
            stacks.push_back({{"frames", s.frames}, {"samples", s.samples}, {"wait_ns", s.wait_ns}});
        locks.push_back({{"site", l.site},
                         {"kind", l.rwlock ? "rwlock" : "mutex"},
                         {"acquisitions", l.acquisitions},
                         {"contended", l.contended},
                         {"wait_ns", l.wait_ns},
                         {"wait_p50_ns", l.wait_p50_ns},
                         {"wait_p90_ns", l.wait_p90_ns},
                         {"wait_p99_ns", l.wait_p99_ns},
                         {"wait_max_ns", l.wait_max_ns},
                         {"wait_histogram", std::move(buckets)},
                         {"stacks", std::move(stacks)},
                         {"stacks_seen", l.stacks_seen},
                         {"sampled_waits", l.sampled_waits},
                         {"sampled_wait_ns", l.sampled_wait_ns}});
    }
    // Names are the program's (its symbols, its files): invalid UTF-8 is replaced, not refused.
    return json{{"stack_sample_period", profile.stack_sample_period}, {"locks", std::move(locks)}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
}

lock_profile_data lock_profile_from_text(std::string_view text) {
    lock_profile_data out;
    if (text.empty()) return out;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        refuse(std::string("not JSON: ") + e.what());
    }
    if (!j.is_object()) refuse("not an object");
    out.stack_sample_period = count_of(j, "stack_sample_period", "the profile");
    const json& locks = array_of(j, "locks", "the profile", lock_profile_max_locks);
    if (locks.empty()) refuse("the profile's locks are empty (no lock is written as no profile)");
    for (std::size_t i = 0; i < locks.size(); ++i)
        out.locks.push_back(lock_from_json(locks[i], "locks[" + std::to_string(i) + "]"));
    return out;
}

}  // namespace contend::lab
