// The server's face: binds and listens, runs the loop until it stops, gathers the totals.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <stdexcept>

#include "connection.hpp"
#include "loop.hpp"

namespace json_server {

server::server(server_options options) : core_(std::make_unique<core>()) {
    auto& c = *core_;
    c.options = std::move(options);
    if (c.options.max_header_bytes == 0) throw std::invalid_argument("max_header_bytes must be positive");

    // An IPv4 or an IPv6 address, numeric (no name lookup: the server binds what it is told).
    sockaddr_storage addr{};
    socklen_t len = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
    if (::inet_pton(AF_INET, c.options.address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(c.options.port);
        len = sizeof *v4;
    } else if (::inet_pton(AF_INET6, c.options.address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(c.options.port);
        len = sizeof *v6;
    } else {
        throw std::invalid_argument("not a numeric IPv4 or IPv6 address: " + c.options.address);
    }
    c.listen_fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.listen_fd < 0) throw_errno("socket");
    const int one = 1;
    ::setsockopt(c.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // An IPv6 address means that address alone, not the IPv4 ones mapped into it.
    if (addr.ss_family == AF_INET6) ::setsockopt(c.listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(c.listen_fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) throw_errno("bind");
    if (::listen(c.listen_fd, SOMAXCONN) != 0) throw_errno("listen");
    if (::getsockname(c.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
    c.port = ntohs(addr.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);

    c.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (c.epoll_fd < 0) throw_errno("epoll_create1");
    c.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c.wake_fd < 0) throw_errno("eventfd");
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    c.signal_fd = ::signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (c.signal_fd < 0) throw_errno("signalfd");
    for (auto [fd, key] : {std::pair{c.listen_fd, listen_key}, {c.wake_fd, wake_key}, {c.signal_fd, signal_key}}) {
        epoll_event ev{};
        ev.events = EPOLLIN;  // level-triggered: each is drained in turn
        ev.data.u64 = key;
        if (::epoll_ctl(c.epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) throw_errno("epoll_ctl");
    }

    contend::thread_pool_options pool_options;
    pool_options.name = "json";
    if (c.options.threads != 0) pool_options.min_threads = pool_options.max_threads = c.options.threads;
    c.pool = std::make_unique<contend::thread_pool>(pool_options);
}

server::~server() = default;

std::uint16_t server::port() const noexcept { return core_->port; }

server_totals server::run() {
    auto& c = *core_;
    c.start = steady::now();
    auto stopped = c.stopped.get_future();
    c.pool->post([&c] { poll_item(c); });
    std::exception_ptr failure;
    try {
        stopped.get();
    } catch (...) {
        failure = std::current_exception();
    }
    const auto start = c.start;
    force_close_all(c);

    server_totals t;
    t.pool = c.pool->stats();
    // The parsers still queued end on completed pipes; waiting before the destructor keeps
    // c.pool valid for any item that posts another.
    c.pool->wait_idle();
    c.pool.reset();
    if (failure) std::rethrow_exception(failure);
    t.seconds = std::chrono::duration<double>(steady::now() - start).count();
    t.requests = c.requests.load();
    t.status_200 = c.status_200.load();
    t.status_400 = c.status_400.load();
    t.status_404 = c.status_404.load();
    t.status_414 = c.status_414.load();
    t.status_431 = c.status_431.load();
    t.status_501 = c.status_501.load();
    t.status_505 = c.status_505.load();
    t.connections_accepted = c.accepted.load();
    t.connections_released = c.released.load();
    t.header_timeouts = c.header_timeouts;
    t.idle_timeouts = c.idle_timeouts;
    t.pipe_lock_contentions = c.contentions.load();
    t.pipe_lock_acquisitions = c.acquisitions.load();
    t.pipe_writer_pauses = c.pauses.load();
    return t;
}

}  // namespace json_server
