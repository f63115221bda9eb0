// The json_server's connections: a transport moves bytes between each nonblocking socket
// and two contend::pipes (fd_to_pipe / pipe_to_fd), and a parser reads requests from the
// first pipe and writes responses to the second, both on the contend::thread_pool, whose
// workers also take turns at the epoll loop (server.cpp says who touches what). The parser
// never touches a socket and the transport never parses, which is the shape of a
// System.IO.Pipelines server (Kestrel's socket transport and its HTTP layer).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "contend/pipe.hpp"
#include "contend/thread_pool.hpp"

namespace json_server {

// The longest timeout and the longest duration the server takes (std::invalid_argument past
// them): a day and a year are well beyond any use, and the clock arithmetic on them (a
// deadline in nanoseconds, twice over; an elapsed time compared in nanoseconds) has room
// to spare. 0 is "no limit" for each.
inline constexpr std::chrono::seconds max_timeout{86'400};
inline constexpr std::chrono::seconds max_duration{365 * 86'400};

struct server_options {
    std::string address = "127.0.0.1";
    std::uint16_t port = 0;  // 0: the kernel picks a free one (server::port() tells)
    std::size_t threads = 0;  // the pool's size (min = max); 0: the pool's default
    contend::pipe_options pipe;  // thresholds and lock kind of both pipes of every connection
    std::size_t max_header_bytes = 8192;  // beyond: 431
    // A connection must send a request's whole header within header_timeout of its first
    // byte (for the first request, of the connection's accept), and may sit with no request
    // begun for idle_timeout after its last answer; past either it is shut down and closed,
    // without a response (what slow-header attacks and forgotten keep-alive connections
    // get from nginx, whose defaults are 60 s and 75 s; Kestrel's are 30 s and 130 s).
    // Zero: no limit; at most max_timeout. Checked about every quarter second.
    std::chrono::milliseconds header_timeout{30'000};
    std::chrono::milliseconds idle_timeout{75'000};
    std::uint64_t max_requests = 0;  // stop once this many were answered; 0: no limit
    std::chrono::milliseconds duration{0};  // stop after this long (at most max_duration); 0: no limit
};

struct server_totals {
    double seconds = 0;
    std::uint64_t requests = 0;  // responses written, errors included
    std::uint64_t status_200 = 0, status_400 = 0, status_404 = 0, status_414 = 0, status_431 = 0, status_501 = 0,
                  status_505 = 0;
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_released = 0;  // connection objects destroyed: == accepted, or a leak
    std::uint64_t header_timeouts = 0, idle_timeouts = 0;  // connections closed by each timeout
    std::uint64_t pipe_lock_contentions = 0;  // both pipes of every connection
    std::uint64_t pipe_lock_acquisitions = 0;  // the same: how often the pipes' slow paths took their lock
    std::uint64_t pipe_writer_pauses = 0;
    contend::thread_pool_stats pool;
};

class server {
public:
    // Binds and listens. Throws std::invalid_argument for options it cannot take (for an
    // address that is not numeric or cannot be listened on, it says which and why) and
    // std::system_error when the kernel refuses (naming the address and port). SIGINT and
    // SIGTERM must already be blocked in every thread (main does it before anything starts
    // threads): run() takes them from a signalfd.
    explicit server(server_options options);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    std::uint16_t port() const noexcept;
    // Serves until SIGINT/SIGTERM, max_requests or duration; then closes every connection
    // (waiting up to a second for them to finish) and the pool, and returns the totals.
    server_totals run();

    struct core;

private:
    std::unique_ptr<core> core_;
};

}  // namespace json_server
