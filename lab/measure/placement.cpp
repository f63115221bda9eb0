#include "measure/placement.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace contend::lab {

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

std::vector<int> parse_cpu_list(const std::string& text) {
    std::vector<int> cpus;
    std::stringstream in(text);
    std::string part;
    auto number = [&](const std::string& s) {
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 6)
            throw std::invalid_argument("bad CPU list '" + text + "'");
        return std::stoi(s);
    };
    while (std::getline(in, part, ',')) {
        const auto dash = part.find('-');
        if (dash == std::string::npos) {
            cpus.push_back(number(part));
        } else {
            const int lo = number(part.substr(0, dash));
            const int hi = number(part.substr(dash + 1));
            if (hi < lo) throw std::invalid_argument("bad CPU range '" + part + "' in '" + text + "'");
            for (int c = lo; c <= hi; ++c) cpus.push_back(c);
        }
    }
    if (cpus.empty()) throw std::invalid_argument("empty CPU list");
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(cpus[i]);
        if (j > i) out += '-' + std::to_string(cpus[j]);
        i = j + 1;
    }
    return out;
}

std::vector<std::vector<int>> placement(const std::string& pin, std::int32_t workers) {
    std::vector<std::vector<int>> per_worker(static_cast<std::size_t>(workers));
    if (pin == "none") return per_worker;
    const std::vector<int> cpus = allowed_cpus();
    if (pin != "compact" && pin != "spread") {
        // A list: every CPU in it must be one this process may run on, or pinning fails late.
        const std::vector<int> wanted = parse_cpu_list(pin);
        for (const int cpu : wanted)
            if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end())
                throw std::invalid_argument("CPU " + std::to_string(cpu) + " is not one this process may run on (" +
                                            format_cpu_list(cpus) + ")");
    }
    const auto n = static_cast<std::int64_t>(cpus.size());
    for (std::int32_t w = 0; w < workers; ++w) {
        if (pin == "compact") {
            per_worker[static_cast<std::size_t>(w)] = {cpus[static_cast<std::size_t>(w % n)]};
        } else if (pin == "spread") {
            const std::int64_t stride = std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, workers));
            per_worker[static_cast<std::size_t>(w)] = {cpus[static_cast<std::size_t>((w * stride) % n)]};
        } else {
            per_worker[static_cast<std::size_t>(w)] = parse_cpu_list(pin);
        }
    }
    return per_worker;
}

std::string pin_self(const std::vector<int>& cpus) {
    if (cpus.empty()) return "";
    cpu_set_t want;
    CPU_ZERO(&want);
    for (int c : cpus) {
        if (c < 0 || c >= CPU_SETSIZE) return "cpu " + std::to_string(c) + " out of range";
        CPU_SET(c, &want);
    }
    if (pthread_setaffinity_np(pthread_self(), sizeof want, &want) != 0)
        return "could not pin to " + format_cpu_list(cpus);
    cpu_set_t got;
    CPU_ZERO(&got);
    if (pthread_getaffinity_np(pthread_self(), sizeof got, &got) != 0) return "could not read the mask back";
    if (!CPU_EQUAL(&want, &got)) {
        std::vector<int> seen;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &got)) seen.push_back(c);
        return "requested " + format_cpu_list(cpus) + ", observed " + format_cpu_list(seen);
    }
    return "";
}

}  // namespace contend::lab
