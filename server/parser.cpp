// The HTTP side of a connection: requests in, answers out, and the connection's deadlines.
#include "parser.hpp"

#include <cstring>
#include <span>
#include <string_view>

#include "transport.hpp"

namespace json_server {

// Nothing more will be read or written by the parser: the transport's `out` pump sees the end
// once it has written what is buffered, and an `in` pump still reading stops.
static void parser_finish(connection& c) {
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
static std::string_view contiguous(const contend::byte_sequence& buffer, std::size_t offset, std::size_t want,
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
static parser_next answer(const std::shared_ptr<connection>& c, const contend::read_result& r) {
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
        // byte set. A request begins here when none was under way, or when this read
        // answered one and holds the start of the next (pipelining across reads): that
        // one's first byte came in this read, so its deadline is not its predecessor's.
        const bool partial = offset < buffer.size();
        const bool answered = offset > 0;
        if (!partial || answered || !c->in_request) c->set_deadline(partial);
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

}  // namespace json_server
