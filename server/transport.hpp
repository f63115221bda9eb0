// A connection's transport: its fd_to_pipe and pipe_to_fd pumps, run on the pool one item
// at a time per connection (connection.hpp says who touches what).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "connection.hpp"

namespace json_server {

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
extern thread_local inline_continuation inline_here;

// Notes what is ready (connection::in_ready, out_ready, in_hangup) and makes sure one
// transport item will look: only the call that finds the connection unscheduled posts one.
enum class from { poller, worker };
void schedule(const std::shared_ptr<connection>& c, unsigned bits, from who);

// A pump's wake: schedules the transport for `bits`, unless the connection is gone.
std::function<void()> waker(const std::shared_ptr<connection>& c, unsigned bits);

// epoll events as transport bits.
unsigned ready_bits(std::uint32_t events);

}  // namespace json_server
