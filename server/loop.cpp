// The event loop: accepting, readiness, timeouts, stopping, and the end of a connection.
#include "loop.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <algorithm>

#include "parser.hpp"
#include "transport.hpp"

namespace json_server {
namespace {

// How long a closing connection may keep sending before it is closed regardless, and how
// long a stop waits for open connections to finish.
constexpr auto linger_limit = std::chrono::seconds(1);
constexpr auto stop_limit = std::chrono::seconds(1);
// The loop's tick: how late a duration, request limit or linger deadline may be noticed.
constexpr int tick_ms = 50;
// How long accepting pauses when accept(2) runs out of descriptors or memory.
constexpr auto accept_pause = std::chrono::milliseconds(100);
// How often the loop looks for connections past their header or idle deadline.
constexpr auto timeout_scan_interval = std::chrono::milliseconds(250);

// The loop's half. A free-standing set of functions over core, so the class stays small.
struct loop {
    server::core& c;

    void accept_all() {
        for (;;) {
            const int fd = ::accept4(c.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pause_accepting();
                return;  // EAGAIN: all taken
            }
            // Responses are written whole, one flush per batch of requests: Nagle would
            // only delay the last segment of each batch.
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const std::uint64_t id = c.next_id++;
            auto conn = std::make_shared<connection>(c, id, fd);
            conn->in_pump =
                std::make_unique<contend::fd_to_pipe>(fd, conn->in.writer(), waker(conn, connection::in_ready));
            conn->out_pump =
                std::make_unique<contend::pipe_to_fd>(conn->out.reader(), fd, waker(conn, connection::out_ready));
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            ev.data.u64 = id;
            if (::epoll_ctl(c.epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
                ::close(fd);
                conn->in.writer().complete();
                conn->in.reader().complete();
                conn->out.writer().complete();
                conn->out.reader().complete();
                c.accepted.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            c.accepted.fetch_add(1, std::memory_order_relaxed);
            conn->set_deadline(true);  // the first request's header is due from now
            c.connections.emplace(id, conn);
            c.pool->post([conn] { parser_run(conn, std::nullopt); });
            schedule(conn, connection::in_ready | connection::out_ready, from::poller);
        }
    }

    // Out of descriptors or memory, the pending connection stays queued and the listening
    // socket stays readable: polling it level-triggered would spin the loop. It is left out
    // of the epoll set for a while, until connections have closed.
    void pause_accepting() {
        epoll_event ev{};
        ev.events = 0;
        ev.data.u64 = listen_key;
        ::epoll_ctl(c.epoll_fd, EPOLL_CTL_MOD, c.listen_fd, &ev);
        c.accept_resume_at = steady::now() + accept_pause;
    }
    void resume_accepting(steady::time_point now) {
        if (!c.accept_resume_at || now < *c.accept_resume_at || c.listen_fd < 0) return;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = listen_key;
        ::epoll_ctl(c.epoll_fd, EPOLL_CTL_MOD, c.listen_fd, &ev);
        c.accept_resume_at.reset();
    }

    // Readiness of an open connection's socket goes to its transport; of a closing one,
    // to the lingering drain.
    void service(std::uint64_t id, std::uint32_t events) {
        const auto it = c.connections.find(id);
        if (it == c.connections.end()) return;  // news for a connection already closed
        const auto conn = it->second;  // a copy: closing erases the entry
        if (conn->closing) {
            linger(*conn);
            return;
        }
        schedule(conn, ready_bits(events), from::poller);
    }

    // The transport has handed the connection over: no response will follow.
    void begin_close(connection& conn) {
        ::shutdown(conn.fd, SHUT_WR);
        conn.closing = true;
        c.lingering.push_back(conn.id);
        conn.linger_deadline = steady::now() + linger_limit;
        linger(conn);
    }

    // Discards what the client still sends; closes at its EOF, an error, or the deadline.
    void linger(connection& conn) {
        char sink[4096];
        for (;;) {
            const ssize_t n = ::read(conn.fd, sink, sizeof sink);
            if (n > 0) continue;
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && steady::now() < conn.linger_deadline) return;
            break;
        }
        finish(conn);
    }

    void finish(connection& conn) {
        ::close(conn.fd);  // also takes it out of the epoll set
        c.connections.erase(conn.id);  // the parser may still hold the object; it frees it
    }

    void expire_lingering(steady::time_point now) {
        while (!c.lingering.empty()) {
            const auto it = c.connections.find(c.lingering.front());
            if (it != c.connections.end()) {
                if (now < it->second->linger_deadline) return;
                finish(*it->second);
            }
            c.lingering.pop_front();
        }
    }

    // Past its header or idle deadline: shut down both ways, which ends it through the usual
    // path (the parser sees the end of input, the out pump's next write fails or finds
    // nothing left, the transport hands it back here and it closes).
    void expire_timed_out(steady::time_point now) {
        if (now < c.next_timeout_scan) return;
        c.next_timeout_scan = now + timeout_scan_interval;
        const std::int64_t now_ns = coarse_now_ns();
        for (const auto& [id, conn] : c.connections) {
            if (conn->closing || conn->timed_out) continue;
            const std::int64_t d = conn->deadline.load(std::memory_order_relaxed);
            if (d == 0 || d / 2 > now_ns) continue;
            conn->timed_out = true;
            ++((d & 1) != 0 ? c.header_timeouts : c.idle_timeouts);
            ::shutdown(conn->fd, SHUT_RDWR);
            schedule(conn, connection::in_hangup | connection::out_ready, from::poller);
        }
    }

    void take_ready() {
        std::uint64_t count;
        [[maybe_unused]] auto n = ::read(c.wake_fd, &count, sizeof count);
        std::vector<std::uint64_t> ids;
        {
            std::lock_guard g(c.ready_lock);
            ids.swap(c.ready);
        }
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        for (auto id : ids) {
            const auto it = c.connections.find(id);
            if (it != c.connections.end() && !it->second->closing) begin_close(*it->second);
        }
    }

    // Stops accepting and shuts every socket's reading side: each connection then ends as
    // if its client had finished sending (EOF), through the usual path, so the answers to
    // requests already read still go out.
    void begin_stop() {
        ::epoll_ctl(c.epoll_fd, EPOLL_CTL_DEL, c.listen_fd, nullptr);
        ::close(c.listen_fd);
        c.listen_fd = -1;
        for (const auto& [id, conn] : c.connections) {
            if (conn->closing) continue;
            ::shutdown(conn->fd, SHUT_RD);
            schedule(conn, connection::in_hangup, from::poller);
        }
    }

    // What begin_stop left after stop_limit: closed without waiting further. The transports
    // are stopped first (and the items in flight waited for), so that no worker uses a
    // socket or a pump's pipe side while they are closed here.
    void force_close_all() {
        c.halted.store(true, std::memory_order_release);
        c.pool->wait_idle();
        for (auto& [id, conn] : c.connections) {
            conn->in.writer().complete();
            conn->out.reader().complete();
            ::close(conn->fd);
        }
        c.connections.clear();
    }
};

// One turn of the event loop, as a pool item that posts the next turn: the loop is the
// poller of the pool, not a thread of its own. Whichever worker runs out of work first
// takes the turn and waits in epoll_wait; the items it posts for ready connections queue
// up, in order, before the next turn, which only runs once they have all been taken. So
// with one worker the server's whole path (wait, read, parse, write) runs on one thread
// with no hand-off, as a single-threaded event loop would, and with more the ready
// connections spread over the workers. Boost.Asio's scheduler does the same: its reactor
// is an operation in the handler queue, run by whichever thread dequeues it (see
// docs/references.md, asio-scheduler). The turn waits only when nothing else is queued
// for its worker (thread_pool::work_waiting), so that it never sits on work.
void poll_turn(server::core& c) {
    loop l{c};
    epoll_event events[128];
    const int n = ::epoll_wait(c.epoll_fd, events, 128, c.pool->work_waiting() ? 0 : tick_ms);
    if (n < 0 && errno != EINTR) throw_errno("epoll_wait");
    bool stop_requested = false;
    for (int i = 0; i < n; ++i) {
        const auto key = events[i].data.u64;
        if (key == listen_key) {
            l.accept_all();
        } else if (key == wake_key) {
            l.take_ready();
        } else if (key == signal_key) {
            signalfd_siginfo info;
            while (::read(c.signal_fd, &info, sizeof info) == sizeof info) stop_requested = true;
        } else {
            l.service(key, events[i].events);
        }
    }
    const auto now = steady::now();
    l.expire_lingering(now);
    l.expire_timed_out(now);
    l.resume_accepting(now);
    if (!c.stop_deadline) {
        const auto& o = c.options;
        if (o.max_requests != 0 && c.requests.load(std::memory_order_relaxed) >= o.max_requests) stop_requested = true;
        if (o.duration.count() != 0 && now - c.start >= o.duration) stop_requested = true;
        if (stop_requested) {
            c.stop_deadline = now + stop_limit;
            l.begin_stop();
        }
    }
    if (c.stop_deadline && (c.connections.empty() || now >= *c.stop_deadline)) {
        c.stopped.set_value();
        return;
    }
    c.pool->post([&c] { poll_item(c); });
}

}  // namespace

void poll_item(server::core& c) {
    try {
        poll_turn(c);
    } catch (...) {
        c.stopped.set_exception(std::current_exception());
    }
}

void force_close_all(server::core& c) { loop{c}.force_close_all(); }

}  // namespace json_server
