// The transport: moves bytes between a connection's socket and its two pipes.
#include "transport.hpp"

#include <sys/epoll.h>

#include <utility>

#include "parser.hpp"

namespace json_server {

thread_local inline_continuation inline_here;

// Marks this thread as running c's pump steps (see inline_continuation) for its life.
namespace {
struct pump_scope {
    explicit pump_scope(const connection& c) noexcept { inline_here.transport_of = &c; }
    ~pump_scope() { inline_here.transport_of = nullptr; }
    pump_scope(const pump_scope&) = delete;
    pump_scope& operator=(const pump_scope&) = delete;
};
}  // namespace

// The parser continuation a pump step completed, if any, run now that the step is over.
static void run_due_continuation(const std::shared_ptr<connection>& c) {
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
static void transport_pass(const std::shared_ptr<connection>& cp, unsigned bits) {
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

static void transport_run(const std::shared_ptr<connection>& c) {
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

}  // namespace json_server
