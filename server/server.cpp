// The server's face: binds and listens, runs the loop until it stops, gathers the totals.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "connection.hpp"
#include "loop.hpp"

namespace json_server {
namespace {

// Why a numeric address cannot be listened on, found before the bind, whose EINVAL would
// not say; empty if nothing is known against it. An IPv6 socket here is IPv6 only (below),
// and the kernel refuses it a mapped IPv4 address; multicast addresses take no connections
// (Linux lets an IPv4 one be bound all the same, to no use); a link-local IPv6 address
// needs an interface, which --address cannot name. (Linux binds the IPv4 broadcast address
// too, to no use either.)
std::string unlistenable(const sockaddr_storage& addr) {
    if (addr.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(addr).sin_addr;
        if (IN_MULTICAST(ntohl(a.s_addr))) return "a multicast address; listen on a unicast one";
        if (a.s_addr == htonl(INADDR_BROADCAST)) return "the broadcast address; listen on a unicast one";
        return {};
    }
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
        char v4[INET_ADDRSTRLEN] = "";
        ::inet_ntop(AF_INET, &a.s6_addr[12], v4, sizeof v4);
        return std::string(
                   "an IPv4-mapped IPv6 address, which an IPv6-only socket cannot bind; give the IPv4 "
                   "address itself (--address ") +
               v4 + ")";
    }
    if (IN6_IS_ADDR_MULTICAST(&a)) return "a multicast address; listen on a unicast one";
    if (IN6_IS_ADDR_LINKLOCAL(&a))
        return "a link-local IPv6 address, which needs an interface the server cannot be given";
    return {};
}

// The failed bind or listen, naming the address, the port and the kernel's reason.
[[noreturn]] void throw_listen_error(const std::string& address, std::uint16_t port) {
    const int e = errno;
    std::string what = "cannot listen on " + address + " port " + std::to_string(port);
    if (e == EADDRNOTAVAIL) what += " (no interface of this host has that address)";
    throw std::system_error(e, std::generic_category(), what);
}

}  // namespace

server::server(server_options options) : core_(std::make_unique<core>()) {
    auto& c = *core_;
    c.options = std::move(options);
    if (c.options.max_header_bytes == 0) throw std::invalid_argument("max_header_bytes must be positive");
    for (const auto limit : {c.options.header_timeout, c.options.idle_timeout})
        if (limit.count() < 0 || limit > max_timeout)
            throw std::invalid_argument("header_timeout and idle_timeout must be from 0 to a day");
    if (c.options.duration.count() < 0 || c.options.duration > max_duration)
        throw std::invalid_argument("duration must be from 0 to a year");

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
        const auto& a = c.options.address;
        const char* hint = a.find('%') != std::string::npos ? " (an IPv6 scope such as %eth0 is not taken)"
                           : a.find_first_of("ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ") != std::string::npos
                               ? " (names are not looked up)"
                               : "";
        throw std::invalid_argument("not a numeric IPv4 or IPv6 address: '" + a + "'" + hint);
    }
    if (const auto why = unlistenable(addr); !why.empty())
        throw std::invalid_argument("cannot listen on " + c.options.address + ": " + why);
    c.listen_fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.listen_fd < 0) throw_errno("socket");
    const int one = 1;
    ::setsockopt(c.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // An IPv6 address means that address alone, not the IPv4 ones mapped into it.
    if (addr.ss_family == AF_INET6) ::setsockopt(c.listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(c.listen_fd, reinterpret_cast<sockaddr*>(&addr), len) != 0)
        throw_listen_error(c.options.address, c.options.port);
    if (::listen(c.listen_fd, SOMAXCONN) != 0) throw_listen_error(c.options.address, c.options.port);
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
