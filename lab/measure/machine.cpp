#include "measure/machine.hpp"

#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <vector>

#include "contend/wait_backend.hpp"
#include "os/child_process.hpp"
#include "results/statistics.hpp"
#include "results/version.hpp"

#ifndef CONTEND_LAB_BUILD_FLAGS
#define CONTEND_LAB_BUILD_FLAGS "unknown"
#endif
#ifndef CONTEND_LAB_SOURCE_DIR
#define CONTEND_LAB_SOURCE_DIR "."
#endif

namespace contend::lab {
namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    }
    return "unknown";
}

// What the program printed on standard output, its trailing newlines removed; "" when it
// could not run. Run without a shell; its standard error goes to /dev/null.
std::string command_output(const std::vector<std::string>& argv) {
    child_spec spec;
    spec.argv = argv;
    spec.output = child_stream::pipe;
    spec.errors = child_stream::null;
    std::string out;
    try {
        out = run_child(spec).output;
    } catch (const std::exception&) {
        return "";  // no pipe, no fork: no label, as when git is missing
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

std::string read_build_flags() { return CONTEND_LAB_BUILD_FLAGS; }

double measure_nanosleep_1ns_us(int samples) {
    std::vector<double> us;
    for (int i = 0; i < samples; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const timespec one{0, 1};
        nanosleep(&one, nullptr);
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(us);
}

machine_context read_machine_context(const std::string& label, const std::string& cpu_list) {
    machine_context c;
    c.date = utc_now();
    c.label = label.empty()
                  ? command_output({"git", "-C", CONTEND_LAB_SOURCE_DIR, "describe", "--always", "--dirty", "--tags"})
                  : label;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    c.host_name = host;
    c.cpu_model = cpu_model();
    c.logical_cpus = static_cast<std::int32_t>(sysconf(_SC_NPROCESSORS_ONLN));
    c.cpu_list = cpu_list;
    utsname u{};
    if (uname(&u) == 0) c.kernel = std::string(u.sysname) + " " + u.release;
#if defined(__clang__)
    c.compiler = std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
    c.compiler = std::string("GCC ") + __VERSION__;
#endif
    c.version = version_text();
    c.build_flags = CONTEND_LAB_BUILD_FLAGS;
#ifdef NDEBUG
    c.library_build_type = "release";
#else
    c.library_build_type = "debug";  // assertions on: figures are not representative
#endif
    c.governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    c.wait_backend = contend::wait_backend_name();
    c.timer_slack_ns = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    c.nanosleep_1ns_us = measure_nanosleep_1ns_us();
    return c;
}

}  // namespace contend::lab
