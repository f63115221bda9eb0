// The suite registry: every suite in the order --list shows them, each built once, in its
// own file (suite_parts.hpp); and the --contenders glob.
#include "suites/suites.hpp"

#include <string_view>

#include "suites/pipe_suite.hpp"
#include "suites/pool_suite.hpp"
#include "suites/programs_suite.hpp"
#include "suites/server_suite.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {

const std::vector<suite>& all_suites() {
    static const std::vector<suite> suites = [] {
        std::vector<suite> s;
        s.push_back(make_counter_suite());
        s.push_back(make_hold_suite());
        s.push_back(make_striped_suite());
        s.push_back(make_wait_policy_suite());
        s.push_back(make_probes_suite());
        s.push_back(make_sharing_suite());
        s.push_back(make_tax_suite());
        s.push_back(make_monitor_suite());
        s.push_back(make_cond_suite());
        s.push_back(make_sync_suite());
        s.push_back(make_rw_suite());
        s.push_back(make_pool_suite());
        s.push_back(make_pipe_suite());
        s.push_back(make_server_suite());
        s.push_back(make_programs_suite());
        s.push_back(make_selftest_suite());
        return s;
    }();
    return suites;
}

const suite* find_suite(const std::string& name) {
    for (const auto& s : all_suites())
        if (s.name == name) return &s;
    return nullptr;
}

namespace {

// Whether `name` matches all of `pattern`. Greedy, remembering only the last '*': on a
// mismatch, that star swallows one more character and matching resumes after it. Earlier
// stars never need to be revisited, since whatever they could have swallowed the last
// one can too. At worst O(pattern x name) steps; the recursive version this replaced
// tried every split of the name between the stars, exponential in their number
// ('**********!' ran for minutes).
bool glob_one(std::string_view pattern, std::string_view name) {
    constexpr auto none = std::string_view::npos;
    std::size_t p = 0, n = 0;
    std::size_t star = none;  // the pattern position just after the last star run seen
    std::size_t star_name = 0;  // where in the name that star's match ends so far
    while (n < name.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            while (p < pattern.size() && pattern[p] == '*') ++p;  // a run of stars is one star
            star = p;
            star_name = n;
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (star != none) {
            p = star;
            n = ++star_name;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

}  // namespace

bool glob_match(const std::string& patterns, const std::string& name) {
    std::string_view rest = patterns;
    for (;;) {
        const auto comma = rest.find(',');
        if (glob_one(rest.substr(0, comma), name)) return true;
        if (comma == std::string_view::npos) return false;
        rest.remove_prefix(comma + 1);
    }
}

}  // namespace contend::lab
