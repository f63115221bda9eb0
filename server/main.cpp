// contend_json_server: the TechEmpower JSON and plaintext tests over contend's pipe,
// fd adapter and thread pool. README.md ("The server: server/") lists the flags.
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

#include "contend/mutex.hpp"
#include "server.hpp"

namespace {

constexpr const char* usage =
    "usage: contend_json_server [options]\n"
    "  --address A            numeric IPv4 or IPv6 address to bind (default 127.0.0.1)\n"
    "  --port N               port (default 0: pick a free one; the port is printed)\n"
    "  --threads N            thread pool size, at most 32767 (default: the pool's own, with\n"
    "                         hill climbing)\n"
    "  --pause-threshold N    bytes buffered in a pipe that pause its writer (default 65536)\n"
    "  --resume-threshold N   bytes below which a paused writer resumes (default 32768)\n"
    "  --pipe-lock K          contend | std: the lock inside every pipe (default contend)\n"
    "  --max-header-bytes N   request-line and headers larger than this get 431 (default 8192)\n"
    "  --header-timeout S     a request's header must arrive within S seconds of its first\n"
    "                         byte (the first request's: of the accept), else the\n"
    "                         connection is closed (default 30; 0: no limit; at most 86400)\n"
    "  --idle-timeout S       a kept-alive connection with no request begun is closed after\n"
    "                         S seconds (default 75; 0: no limit; at most 86400)\n"
    "  --max-requests N       stop after answering N requests (default 0: no limit)\n"
    "  --duration S           stop after S whole seconds, at most 31536000 (a year)\n"
    "                         (default 0: no limit)\n"
    "SIGINT or SIGTERM stop it; it then prints its totals.\n";

// The thread pool's own bound (contend::thread_pool refuses more).
constexpr std::uint64_t max_threads = 32'767;

[[noreturn]] void bad_usage(const std::string& what) {
    std::fprintf(stderr, "contend_json_server: %s\n%s", what.c_str(), usage);
    std::exit(2);
}

// A whole number in decimal from 0 to `max`.
std::uint64_t parse_number(std::string_view flag, std::string_view text,
                           std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool digits = end == text.data() + text.size() && end != text.data() && text.front() != '-';
    if (!digits || (ec != std::errc{} && ec != std::errc::result_out_of_range))
        bad_usage(std::string(flag) + " needs a non-negative integer, not '" + std::string(text) + "'");
    if (ec == std::errc::result_out_of_range || value > max)
        bad_usage(std::string(flag) + " must be at most " + std::to_string(max) + ", not '" + std::string(text) + "'");
    return value;
}

// Seconds, fractions allowed (0.5), as whole milliseconds; at most max_timeout (a day).
std::chrono::milliseconds parse_seconds(std::string_view flag, std::string_view text) {
    const double most = static_cast<double>(json_server::max_timeout.count());
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || !(value >= 0) || value > most)
        bad_usage(std::string(flag) + " needs a number of seconds from 0 to " +
                  std::to_string(json_server::max_timeout.count()) + ", not '" + std::string(text) + "'");
    const auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(value * 1000 + 0.5));
    if (value > 0 && ms.count() == 0) bad_usage(std::string(flag) + " must be 0 or at least 0.001");
    return ms;
}

json_server::server_options parse_flags(int argc, char** argv) {
    json_server::server_options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) bad_usage("unknown flag or missing value: " + std::string(flag));
        const std::string_view value = argv[++i];
        if (flag == "--address") {
            o.address = value;
        } else if (flag == "--port") {
            o.port = static_cast<std::uint16_t>(parse_number(flag, value, 65535));
        } else if (flag == "--threads") {
            o.threads = parse_number(flag, value, max_threads);
        } else if (flag == "--pause-threshold") {
            o.pipe.pause_writer_threshold = parse_number(flag, value);
        } else if (flag == "--resume-threshold") {
            o.pipe.resume_writer_threshold = parse_number(flag, value);
        } else if (flag == "--pipe-lock") {
            if (value == "contend") {
                o.pipe.lock = contend::pipe_lock_kind::contend_mutex;
            } else if (value == "std") {
                o.pipe.lock = contend::pipe_lock_kind::std_mutex;
            } else {
                bad_usage("--pipe-lock is contend or std, not '" + std::string(value) + "'");
            }
        } else if (flag == "--max-header-bytes") {
            o.max_header_bytes = parse_number(flag, value);
            if (o.max_header_bytes == 0) bad_usage("--max-header-bytes must be positive");
        } else if (flag == "--header-timeout") {
            o.header_timeout = parse_seconds(flag, value);
        } else if (flag == "--idle-timeout") {
            o.idle_timeout = parse_seconds(flag, value);
        } else if (flag == "--max-requests") {
            o.max_requests = parse_number(flag, value);
        } else if (flag == "--duration") {
            // Whole seconds, at most a year: 2^64 - 1 once overflowed into a negative count
            // of milliseconds, which stopped the server at once.
            o.duration = std::chrono::seconds(parse_number(flag, value, json_server::max_duration.count()));
        } else {
            bad_usage("unknown flag: " + std::string(flag));
        }
    }
    if (o.pipe.pause_writer_threshold != 0 && o.pipe.resume_writer_threshold > o.pipe.pause_writer_threshold)
        bad_usage("--resume-threshold must not exceed --pause-threshold");
    return o;
}

double per_second(std::uint64_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0; }

}  // namespace

int main(int argc, char** argv) {
    const auto options = parse_flags(argc, argv);
    // Blocked before any thread starts, so every thread inherits the mask and the signals
    // wait for the loop's signalfd instead of interrupting a worker.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    try {
        const auto contentions_before = contend::lock_contention_count();
        json_server::server s(options);
        const char* lock = options.pipe.lock == contend::pipe_lock_kind::std_mutex ? "std" : "contend";
        // host:port, an IPv6 host in brackets (RFC 3986 3.2.2), as a URL names it.
        const bool v6 = options.address.find(':') != std::string::npos;
        const std::string host = v6 ? "[" + options.address + "]" : options.address;
        std::printf("contend_json_server listening on %s:%u (pipe lock %s, pause %zu, resume %zu)\n", host.c_str(),
                    static_cast<unsigned>(s.port()), lock, options.pipe.pause_writer_threshold,
                    options.pipe.resume_writer_threshold);
        std::fflush(stdout);
        const auto t = s.run();
        const auto all_contentions = contend::lock_contention_count() - contentions_before;
        std::printf("totals: %llu requests in %.2f s (%.0f/s)\n", static_cast<unsigned long long>(t.requests),
                    t.seconds, per_second(t.requests, t.seconds));
        std::printf("responses: 200: %llu, 400: %llu, 404: %llu, 414: %llu, 431: %llu, 501: %llu, 505: %llu\n",
                    static_cast<unsigned long long>(t.status_200), static_cast<unsigned long long>(t.status_400),
                    static_cast<unsigned long long>(t.status_404), static_cast<unsigned long long>(t.status_414),
                    static_cast<unsigned long long>(t.status_431), static_cast<unsigned long long>(t.status_501),
                    static_cast<unsigned long long>(t.status_505));
        std::printf("connections: accepted %llu, released %llu\n",
                    static_cast<unsigned long long>(t.connections_accepted),
                    static_cast<unsigned long long>(t.connections_released));
        std::printf("timeouts: header %llu, idle %llu\n", static_cast<unsigned long long>(t.header_timeouts),
                    static_cast<unsigned long long>(t.idle_timeouts));
        std::printf(
            "pipe locks (%s): %llu contentions (%.1f/s) in %llu acquisitions (%.1f/s), %llu writer pauses\n", lock,
            static_cast<unsigned long long>(t.pipe_lock_contentions), per_second(t.pipe_lock_contentions, t.seconds),
            static_cast<unsigned long long>(t.pipe_lock_acquisitions), per_second(t.pipe_lock_acquisitions, t.seconds),
            static_cast<unsigned long long>(t.pipe_writer_pauses));
        std::printf("contend locks, process-wide: %llu contentions (%.1f/s)\n",
                    static_cast<unsigned long long>(all_contentions), per_second(all_contentions, t.seconds));
        std::printf(
            "pool: threads %zu, completed %llu, steals %llu, starvation injections %llu, "
            "hill-climbing adjustments %llu\n",
            t.pool.threads, static_cast<unsigned long long>(t.pool.completed),
            static_cast<unsigned long long>(t.pool.steals),
            static_cast<unsigned long long>(t.pool.starvation_injections),
            static_cast<unsigned long long>(t.pool.hill_climbing_adjustments));
        std::fflush(stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contend_json_server: %s\n", e.what());
        return 1;
    }
    return 0;
}
