#include "run/site_names.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <sstream>

#include "os/child_process.hpp"
#include "text/numbers.hpp"
#include "text/utf8.hpp"

namespace contend::lab {
namespace {

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
            throw std::runtime_error("addr2line printed what was not expected for address " + hex_text(addresses[a]));
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

std::vector<std::string> symbolize_sites(program_profile& profile, std::size_t limit, const std::string& tool,
                                         double timeout_s) {
    // Each top lock's site, and every frame of its stacks.
    std::map<std::string, std::vector<lock_site*>> by_module;
    const auto add = [&](lock_site& s) {
        if (!s.module.empty()) by_module[s.module].push_back(&s);
    };
    for (std::size_t i = 0; i < std::min(limit, profile.locks.size()); ++i) {
        auto& l = profile.locks[i];
        add(l.site);
        for (auto& stack : l.stacks)
            for (auto& f : stack.frames) add(f);
    }
    std::vector<std::string> failures;
    for (auto& [module, sites] : by_module) {
        struct stat st {};
        if (::stat(module.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            failures.push_back(message_text(module) +
                               ": not a regular file here; its sites are named as the library named them");
            continue;
        }
        std::vector<std::uint64_t> addresses;
        for (const auto* site : sites)
            if (std::find(addresses.begin(), addresses.end(), site->module_address) == addresses.end())
                addresses.push_back(site->module_address);
        std::vector<std::string> args = {tool, "-a", "-f", "-C", "-i", "-e", module};
        for (const auto a : addresses) args.push_back(hex_text(a));
        try {
            const auto frames = parse_addr2line(run_tool(args, timeout_s), addresses);
            for (auto* site : sites) {
                const auto at = std::find(addresses.begin(), addresses.end(), site->module_address);
                const auto& f = frames[static_cast<std::size_t>(at - addresses.begin())];
                if (f.empty() || f.front().function == "??") continue;
                site->symbol = f.front().function;
                site->source = source_of(f.front().source);
                if (f.size() > 1 && f.back().function != "??") site->inlined_in = f.back().function;
            }
        } catch (const std::exception& e) {
            failures.push_back(message_text(module) + ": " + e.what() +
                               "; its sites are named as the library named them");
        }
    }
    return failures;
}

}  // namespace contend::lab
