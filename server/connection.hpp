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
//
// This header: the server's state (server::core) and a connection's, shared by the loop
// (loop.cpp), the transport (transport.cpp), the HTTP parser's side (parser.cpp) and the
// server's face (server.cpp). Internal to the server.
#pragma once

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "contend/mutex.hpp"
#include "contend/pipe_fd.hpp"
#include "http.hpp"
#include "server.hpp"

namespace json_server {

using steady = std::chrono::steady_clock;

[[noreturn]] inline void throw_errno(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// epoll data: these three, then connection ids from first_connection_id up.
constexpr std::uint64_t listen_key = 0, wake_key = 1, signal_key = 2, first_connection_id = 16;

// The parser stamps a deadline at each request boundary, so it reads the coarse clock (a
// few nanoseconds from the vDSO, ticking every few milliseconds): plenty for timeouts of
// seconds. In nanoseconds since the clock's epoch.
inline std::int64_t coarse_now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct connection;

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

}  // namespace json_server
