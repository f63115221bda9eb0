// Who touches what:
//   - The loop waits in epoll_wait and owns the connection table, accepting, and the end of
//     a connection (half-close, lingering, close). It is not a thread: each turn of it is a
//     pool item that posts the next turn (poll_turn), so one worker at a time runs it and
//     its state needs no lock. It does no I/O on a connection's socket while the
//     connection is open: readiness only schedules the connection's transport.
//   - The transport of a connection (its fd_to_pipe into `in` and pipe_to_fd out of `out`)
//     runs on the pool, one item at a time per connection: schedule() sets what is ready
//     (socket readable, socket writable) in one atomic word, and only the call that finds
//     the connection unscheduled posts an item, which runs until no news is left. A pump's
//     `wake` (a flush or read it left pending has completed) schedules the transport too.
//   - The parser runs on the pool as its own chain, at most one item per connection at a
//     time; it reads `in` and writes `out`. It never blocks: a read or flush that cannot
//     finish at once is left pending (read_async / flush_async) and its callback posts the
//     next item.
//   Every post from a worker goes on that worker's local queue, and a parser continuation
//   that a pump step completes runs in the transport's item right after that step
//   (inline_continuation): the socket read, the parse and the socket write of a request
//   usually run in one item on one worker, with no thread woken and nothing crossing to
//   the loop. When another worker steals one of them,
//   the transport and the parser run at once on two threads and meet in the pipes, the
//   shape of a System.IO.Pipelines server (Kestrel's socket transport and its HTTP layer).
// A connection ends in one place: when its `out` pump finishes (the parser completed the
// response stream, or the socket failed). The transport then completes the `in` writer,
// which ends a parser still waiting for a request, stops touching the socket and hands the
// connection to the loop, which half-closes the socket and drains what the client still
// sends for up to a second before closing, so that unread input does not turn the close
// into a reset that destroys the last response (the "lingering close" of RFC 9112 9.6).
#include "server.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "contend/mutex.hpp"
#include "contend/pipe_fd.hpp"
#include "http.hpp"

namespace json_server {
namespace {

using steady = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// epoll data: these three, then connection ids from first_connection_id up.
constexpr std::uint64_t listen_key = 0, wake_key = 1, signal_key = 2, first_connection_id = 16;

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

// The parser stamps a deadline at each request boundary, so it reads the coarse clock (a
// few nanoseconds from the vDSO, ticking every few milliseconds): plenty for timeouts of
// seconds. In nanoseconds since the clock's epoch.
std::int64_t coarse_now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

struct connection;

void poll_item(server::core& c);

struct server::core {
    server_options options;
    int listen_fd = -1, epoll_fd = -1, wake_fd = -1, signal_fd = -1;
    std::uint16_t port = 0;
    std::unique_ptr<contend::thread_pool> pool;

    std::atomic<std::uint64_t> requests{0}, status_200{0}, status_400{0}, status_404{0}, status_414{0}, status_431{0},
        status_501{0}, status_505{0};
    std::atomic<std::uint64_t> accepted{0}, released{0}, contentions{0}, acquisitions{0}, pauses{0};
    std::uint64_t header_timeouts = 0, idle_timeouts = 0;  // the loop's
    steady::time_point next_timeout_scan{};  // the loop's

    contend::mutex ready_lock;
    std::vector<std::uint64_t> ready;  // guarded by ready_lock: ids whose transport has ended

    // Set by the loop before it forces the last connections closed: no transport item is
    // posted any more, and one already queued returns at once.
    std::atomic<bool> halted{false};

    // The loop's (one turn at a time; run()'s thread once the loop has stopped).
    std::unordered_map<std::uint64_t, std::shared_ptr<connection>> connections;
    std::uint64_t next_id = first_connection_id;
    std::optional<steady::time_point> accept_resume_at;  // set while accepting is paused
    // Closing connections by deadline: one linger_limit for all, so the order they began to
    // close in. Ids of connections closed since are skipped.
    std::deque<std::uint64_t> lingering;
    steady::time_point start;
    std::optional<steady::time_point> stop_deadline;  // set once stopping has begun
    std::promise<void> stopped;  // the poller's last act: it has stopped, or failed

    ~core() {
        for (int fd : {listen_fd, epoll_fd, wake_fd, signal_fd})
            if (fd >= 0) ::close(fd);
    }

    void notify(std::uint64_t id) {
        bool was_empty;
        {
            std::lock_guard g(ready_lock);
            was_empty = ready.empty();
            ready.push_back(id);
        }
        // Only the push onto an empty list pokes the loop: it takes the whole list at once.
        if (was_empty) {
            const std::uint64_t one = 1;
            [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
        }
    }
    void count(http_status status) {
        requests.fetch_add(1, std::memory_order_relaxed);
        switch (status) {
            case http_status::ok:
                status_200.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::bad_request:
                status_400.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::not_found:
                status_404.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::uri_too_long:
                status_414.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::headers_too_large:
                status_431.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::not_implemented:
                status_501.fetch_add(1, std::memory_order_relaxed);
                break;
            case http_status::version_not_supported:
                status_505.fetch_add(1, std::memory_order_relaxed);
                break;
        }
    }
};

struct connection {
    connection(server::core& c, std::uint64_t i, int f)
        : core(c), id(i), fd(f), in(c.options.pipe), out(c.options.pipe) {}
    ~connection() {
        const auto a = in.stats(), b = out.stats();
        core.contentions.fetch_add(a.lock_contentions + b.lock_contentions, std::memory_order_relaxed);
        core.acquisitions.fetch_add(a.lock_acquisitions + b.lock_acquisitions, std::memory_order_relaxed);
        core.pauses.fetch_add(a.writer_pauses + b.writer_pauses, std::memory_order_relaxed);
        core.released.fetch_add(1, std::memory_order_relaxed);
    }

    server::core& core;
    const std::uint64_t id;
    const int fd;  // used by the transport while open, by the loop once handed off; closed by the loop
    contend::pipe in;  // socket -> parser
    contend::pipe out;  // parser -> socket

    // The transport's (one pool item at a time, see schedule()).
    std::unique_ptr<contend::fd_to_pipe> in_pump;
    std::unique_ptr<contend::pipe_to_fd> out_pump;
    bool in_done = false, out_done = false, handed_off = false;
    bool hung_up = false;  // epoll said the peer closed (or failed): read to EOF from then on

    // What the transport has to look at, and whether an item for it is queued or running.
    static constexpr unsigned queued = 1, in_ready = 2, out_ready = 4, in_hangup = 8;
    std::atomic<unsigned> transport{0};

    // The loop's only.
    bool closing = false;
    bool timed_out = false;
    steady::time_point linger_deadline{};

    // When the connection times out (coarse_now_ns), times two, plus one if it is the header
    // timeout (a request has begun, or none has come yet), else the idle one; 0: never.
    // The parser writes it at request boundaries (and accept before the parser starts), the
    // loop reads it.
    std::atomic<std::int64_t> deadline{0};
    void set_deadline(bool header) {
        const auto limit = header ? core.options.header_timeout : core.options.idle_timeout;
        const std::int64_t at =
            limit.count() == 0 ? 0 : (coarse_now_ns() + std::chrono::nanoseconds(limit).count()) * 2 + (header ? 1 : 0);
        deadline.store(at, std::memory_order_relaxed);
    }

    // The parser's, one pool item at a time.
    std::string response;
    std::string scratch;  // a request split over segments, made contiguous
    bool close_after_flush = false;
    bool in_request = true;  // bytes of a request have come (or none yet): the header deadline runs

    // Who goes on after a read_async or flush_async: the parser item that issued it, if the
    // callback ran before the item looked (`issuing` -> `done`), or a new item that the
    // callback posts (`pending` -> `done`). The result is stored before the exchange.
    enum : int { idle, issuing, pending, done };
    std::atomic<int> handoff{idle};
    contend::read_result parked_read;
    contend::flush_result parked_flush;

    // True if the call just issued is still pending (the callback will post the next item).
    bool left_pending() {
        int expected = issuing;
        if (handoff.compare_exchange_strong(expected, pending, std::memory_order_acq_rel)) return true;
        handoff.store(idle, std::memory_order_relaxed);
        return false;
    }
};

namespace {

enum class parser_next { read_more, waiting, finished };

// A parser continuation that completes inside a pump's step (the transport's flush of `in`
// finds the parser's read pending, or its read of `out` releases the parser's paused flush)
// is not posted: it is noted here, and the transport runs it as soon as that step has
// returned, on the same thread. The same as posting it on the local queue and popping it at
// once, without the item; never inside the pump's call, where the other side of the pipe
// is in the middle of an operation.
struct inline_continuation {
    const connection* transport_of = nullptr;  // set around a pump step of this connection
    enum : std::uint8_t { none, read, flush } due = none;
};
thread_local inline_continuation inline_here;

void parser_run(const std::shared_ptr<connection>& c, std::optional<contend::read_result> first);

// Nothing more will be read or written by the parser: the transport's `out` pump sees the end
// once it has written what is buffered, and an `in` pump still reading stops.
void parser_finish(connection& c) {
    c.out.writer().complete();
    c.in.reader().complete();
}

parser_next after_flush(connection& c, const contend::flush_result& r) {
    // is_completed: the socket failed and the `out` pump gave up; nothing more can be sent.
    if (r.is_completed || c.close_after_flush) return parser_next::finished;
    return parser_next::read_more;
}

void resume(const std::shared_ptr<connection>& c, parser_next next) {
    if (next == parser_next::finished) {
        parser_finish(*c);
    } else if (next == parser_next::read_more) {
        parser_run(c, std::nullopt);
    }
}

// The bytes at `offset`, contiguous, at least min(rest, want) of them: the segment itself
// when it holds that many (the common case), else a copy of `want` bytes.
std::string_view contiguous(const contend::byte_sequence& buffer, std::size_t offset, std::size_t want,
                            std::string& scratch) {
    const auto rest = buffer.slice(offset, buffer.size() - offset);
    const std::size_t need = std::min(rest.size(), want);
    const auto first = *rest.segments().begin();
    if (first.size() >= need) return {reinterpret_cast<const char*>(first.data()), first.size()};
    scratch.resize(need);
    rest.copy_to(std::as_writable_bytes(std::span<char>(scratch)));
    return scratch;
}

// Answers every complete request in r, in order, and flushes the answers.
parser_next answer(const std::shared_ptr<connection>& c, const contend::read_result& r) {
    auto& core = c->core;
    const auto& buffer = r.buffer;
    const std::size_t limit = core.options.max_header_bytes;
    std::size_t offset = 0;
    c->response.clear();
    while (offset < buffer.size()) {
        const auto parsed = parse_request(contiguous(buffer, offset, limit, c->scratch), limit);
        if (parsed.status == parse_status::incomplete) break;
        if (parsed.status == parse_status::complete) {
            core.count(append_response(c->response, parsed.request));
            offset += parsed.consumed;
            if (!parsed.request.keep_alive) {
                c->close_after_flush = true;
                break;
            }
            continue;
        }
        const auto status = error_status(parsed.status);
        append_error_response(c->response, status);
        core.count(status);
        c->close_after_flush = true;  // the stream's framing is lost: nothing after can be trusted
        break;
    }
    // A client that closed (or failed) mid-request has its partial request dropped.
    if (r.is_completed) c->close_after_flush = true;
    if (!c->close_after_flush) {
        // The idle deadline restarts with every answer; the header deadline only when a
        // request begins, so a header trickling in byte by byte keeps the one its first
        // byte set.
        const bool partial = offset < buffer.size();
        if (!partial || !c->in_request) c->set_deadline(partial);
        c->in_request = partial;
        // Examined to the end: the next read waits for new bytes, and a request larger than
        // the pause threshold still flows (what is examined no longer holds the writer back).
        c->in.reader().advance_to(buffer.position(offset), buffer.end());
    }
    if (c->response.empty()) return c->close_after_flush ? parser_next::finished : parser_next::read_more;

    auto& writer = c->out.writer();
    const auto span = writer.get_span(c->response.size());
    std::memcpy(span.data(), c->response.data(), c->response.size());
    writer.advance(c->response.size());
    c->handoff.store(connection::issuing, std::memory_order_relaxed);
    writer.flush_async([c](contend::flush_result fr) {
        c->parked_flush = fr;
        if (c->handoff.exchange(connection::done, std::memory_order_acq_rel) == connection::pending) {
            if (inline_here.transport_of == c.get()) {
                inline_here.due = inline_continuation::flush;
                return;
            }
            c->core.pool->post_local([c] {
                c->handoff.store(connection::idle, std::memory_order_relaxed);
                resume(c, after_flush(*c, c->parked_flush));
            });
        }
    });
    if (c->left_pending()) return parser_next::waiting;
    return after_flush(*c, c->parked_flush);
}

// One pool item: reads and answers until a read or flush must wait, or the connection ends.
void parser_run(const std::shared_ptr<connection>& c, std::optional<contend::read_result> first) {
    for (;;) {
        contend::read_result r;
        if (first) {
            r = std::move(*first);
            first.reset();
        } else {
            bool got;
            try {
                got = c->in.reader().try_read(r);
            } catch (...) {
                // The socket's read failed (a reset): fd_to_pipe completed `in` with the error.
                parser_finish(*c);
                return;
            }
            if (!got) {
                c->handoff.store(connection::issuing, std::memory_order_relaxed);
                c->in.reader().read_async([c](contend::read_result rr) {
                    c->parked_read = std::move(rr);
                    if (c->handoff.exchange(connection::done, std::memory_order_acq_rel) == connection::pending) {
                        if (inline_here.transport_of == c.get()) {
                            inline_here.due = inline_continuation::read;
                            return;
                        }
                        c->core.pool->post_local([c] {
                            c->handoff.store(connection::idle, std::memory_order_relaxed);
                            parser_run(c, std::move(c->parked_read));
                        });
                    }
                });
                if (c->left_pending()) return;
                r = std::move(c->parked_read);
            }
        }
        if (r.is_canceled) {
            // Nobody cancels the parser's reads; were one canceled, it is read again.
            c->in.reader().advance_to(r.buffer.start());
            continue;
        }
        const auto next = answer(c, r);
        if (next == parser_next::waiting) return;
        if (next == parser_next::finished) {
            parser_finish(*c);
            return;
        }
    }
}

// Marks this thread as running c's pump steps (see inline_continuation) for its life.
struct pump_scope {
    explicit pump_scope(const connection& c) noexcept { inline_here.transport_of = &c; }
    ~pump_scope() { inline_here.transport_of = nullptr; }
    pump_scope(const pump_scope&) = delete;
    pump_scope& operator=(const pump_scope&) = delete;
};

// The parser continuation a pump step completed, if any, run now that the step is over.
void run_due_continuation(const std::shared_ptr<connection>& c) {
    const auto due = std::exchange(inline_here.due, inline_continuation::none);
    if (due == inline_continuation::none) return;
    c->handoff.store(connection::idle, std::memory_order_relaxed);
    if (due == inline_continuation::read) parser_run(c, std::move(c->parked_read));
    else resume(c, after_flush(*c, c->parked_flush));
}

// The transport: one pass over what `bits` says is ready. The `in` pump reads the socket
// when it is readable (epoll) or a flush it left pending has completed; the `out` pump
// writes when the socket is writable or a read it left pending found bytes (or the end).
// A request read by the first then usually runs its parser right here, whose flush marks
// `out` ready: the next pass writes the response, all in this one item.
void transport_pass(const std::shared_ptr<connection>& cp, unsigned bits) {
    connection& c = *cp;
    if ((bits & connection::in_hangup) != 0) c.hung_up = true;
    if ((bits & (connection::in_ready | connection::in_hangup)) != 0 && !c.in_done) {
        pump_scope scope(c);
        try {
            // A read that comes back short ends the step: the next bytes raise an edge. Not
            // after a hang-up, whose EOF may sit behind the last bytes and raises none.
            const auto t =
                c.in_pump->step(c.hung_up ? contend::fd_read_until::would_block : contend::fd_read_until::short_read);
            using enum contend::fd_stop;
            if (t.stop == end_of_stream || t.stop == peer_completed || t.stop == error) c.in_done = true;
        } catch (...) {
            c.in_done = true;
            c.in.writer().complete();
        }
    }
    run_due_continuation(cp);
    if ((bits & connection::out_ready) != 0 && !c.out_done) {
        pump_scope scope(c);
        try {
            const auto t = c.out_pump->step();
            if (t.stop == contend::fd_stop::end_of_stream || t.stop == contend::fd_stop::error) c.out_done = true;
        } catch (...) {
            c.out_done = true;
            c.out.reader().complete();
        }
    }
    run_due_continuation(cp);
    if (c.out_done && !c.handed_off) {
        // Nothing more goes out: a parser waiting for a request sees the end, and the socket
        // is the loop's from here on.
        c.in.writer().complete();
        c.out.reader().complete();
        c.handed_off = true;
        c.core.notify(c.id);
    }
}

void transport_run(const std::shared_ptr<connection>& c) {
    for (;;) {
        if (c->core.halted.load(std::memory_order_acquire)) return;
        const unsigned bits = c->transport.exchange(connection::queued, std::memory_order_acq_rel);
        if (!c->handed_off) transport_pass(c, bits);
        // Idle again unless news came during the pass; then another pass, in this item.
        unsigned expected = connection::queued;
        if (c->transport.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
    }
}

// Notes what is ready and makes sure one transport item will look: only the call that
// finds the connection unscheduled posts one. The poller posts on the global queue: FIFO,
// so the connections it found ready are served in turn, and the next poll queues up
// behind them (its worker's deque would be LIFO: under a steady stream of readiness the
// first connections dispatched would wait behind every later one). A pump's wake posts on
// the caller's local queue: it comes from the parser's flush, and the socket write then
// runs next on the same thread.
enum class from { poller, worker };
void schedule(const std::shared_ptr<connection>& c, unsigned bits, from who) {
    const unsigned before = c->transport.fetch_or(bits | connection::queued, std::memory_order_acq_rel);
    if ((before & connection::queued) != 0 || c->core.halted.load(std::memory_order_acquire)) return;
    if (who == from::poller) c->core.pool->post([c] { transport_run(c); });
    else c->core.pool->post_local([c] { transport_run(c); });
}

// A pump's wake: it may run after the loop dropped the connection, from a pipe being torn
// down; then there is nothing to schedule.
std::function<void()> waker(const std::shared_ptr<connection>& c, unsigned bits) {
    return [w = std::weak_ptr<connection>(c), bits] {
        if (auto c = w.lock()) schedule(c, bits, from::worker);
    };
}

unsigned ready_bits(std::uint32_t events) {
    unsigned bits = 0;
    if ((events & EPOLLIN) != 0) bits |= connection::in_ready;
    if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) bits |= connection::in_hangup;
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) bits |= connection::out_ready;
    return bits;
}

}  // namespace

namespace {

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

}  // namespace

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

namespace {

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

server_totals server::run() {
    auto& c = *core_;
    loop l{c};
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
    l.force_close_all();

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
