// The suite registry: every suite in the order --list shows them, each built once, in its
// own file (suite_parts.hpp); and the --contenders glob.
#include "suites/suites.hpp"

#include "suites/suite_parts.hpp"

namespace contend::lab {

const std::vector<suite>& all_suites() {
    static const std::vector<suite> suites = [] {
        std::vector<suite> s;
        s.push_back(make_counter_suite());
        s.push_back(make_hold_suite());
        s.push_back(make_wait_policy_suite());
        s.push_back(make_probes_suite());
        s.push_back(make_sharing_suite());
        s.push_back(make_tax_suite());
        s.push_back(make_monitor_suite());
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
bool glob_one(const char* p, const char* s) {
    if (*p == '\0') return *s == '\0';
    if (*p == '*') return glob_one(p + 1, s) || (*s != '\0' && glob_one(p, s + 1));
    if (*s != '\0' && (*p == '?' || *p == *s)) return glob_one(p + 1, s + 1);
    return false;
}
}  // namespace

bool glob_match(const std::string& patterns, const std::string& name) {
    std::size_t start = 0;
    for (;;) {
        const auto comma = patterns.find(',', start);
        const std::string one = patterns.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (glob_one(one.c_str(), name.c_str())) return true;
        if (comma == std::string::npos) return false;
        start = comma + 1;
    }
}

}  // namespace contend::lab
