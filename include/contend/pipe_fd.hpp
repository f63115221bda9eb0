// contend::fd_to_pipe and contend::pipe_to_fd: moving bytes between a file descriptor and a
// contend::pipe (sockets, FIFOs, files).
//
// Two ways to drive one, on the same object:
//   - run(): for a blocking fd (or from a thread that may block): loops until the stream
//     ends, the other side of the pipe completes, a cancel, or an error. An fd that turns
//     out to be nonblocking still works: on EAGAIN run() waits in poll(2).
//   - step(): for a nonblocking fd in the caller's epoll loop: moves what it can without
//     blocking and says why it stopped (fd_stop). It never blocks on the pipe either: a
//     flush that backpressure holds back, or a read that finds the pipe empty, is left
//     pending (flush_async / read_async) and `wake` runs once it completes, from the thread
//     that completed it (the other side's advance_to or flush, a cancel, or a pool worker).
//     `wake` should only nudge the loop (write an eventfd, set a flag): it must not call
//     step() itself, as it may run inside the other side's call.
// They are classes, not free functions, because step() has state between calls: a flush or
// read left pending, the kind of fd (how to write without SIGPIPE), and a finished transfer.
//
// Only the pipe's public API is used. Each object owns its side of the pipe for its life
// (one thread at a time may use a pipe side) and never closes the fd: the caller owns it.
//
// Errors:
//   - EINTR is retried; EAGAIN/EWOULDBLOCK is reported (step) or waited out (run).
//   - fd_to_pipe: EOF completes the writer; a read(2) error completes the writer with a
//     std::system_error (the reader's read() then rethrows it) and is reported.
//   - pipe_to_fd: a write error (EPIPE, ECONNRESET...) completes the reader with a
//     std::system_error (the writer's flush then returns is_completed) and is reported.
//   - No SIGPIPE: sockets are written with send(MSG_NOSIGNAL); FIFOs with SIGPIPE blocked in
//     the calling thread for the write and a SIGPIPE it raised taken back (sigtimedwait), so
//     neither the process's disposition nor other threads are touched. Other fds (files,
//     terminals) do not raise SIGPIPE.
//   - A writer that completed with an error: pipe_to_fd completes the reader and rethrows
//     the writer's exception from step()/run(), as pipe_reader::read() does, and from
//     every later call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "contend/pipe.hpp"

namespace contend {

// Why a step() or run() returned.
enum class fd_stop : std::uint8_t {
    would_block,  // the fd said EAGAIN (or a read came back short, fd_read_until::short_read): wait for
                  // epoll readiness, then step() again
    end_of_stream,  // fd_to_pipe: the fd hit EOF, the writer is completed.
                    // pipe_to_fd: the writer completed and every byte is written; the reader is completed
    writer_paused,  // fd_to_pipe: a flush waits for the reader (backpressure); `wake` runs when it ends
    pipe_empty,  // pipe_to_fd: nothing to read yet; `wake` runs when data or a completion arrives
    peer_completed,  // fd_to_pipe: the pipe's reader completed; the writer is completed too
    canceled,  // cancel_pending_flush / cancel_pending_read ended the flush or read; step() again to go on
    error,  // the fd failed (fd_transfer::error holds errno); that side of the pipe is completed
};

const char* to_string(fd_stop stop) noexcept;

// When fd_to_pipe::step() stops reading an fd that still returns bytes.
enum class fd_read_until : std::uint8_t {
    // Until read(2) says EAGAIN: right whoever drives step(), and the only way to see an
    // end of stream that arrived with the last bytes.
    would_block,
    // Also after a read that returned fewer bytes than it asked for, reported as
    // would_block: the fd had no more at that moment, and epoll reports the next bytes
    // (level-triggered: still readable; edge-triggered: each arrival is a new edge, on
    // Linux). It saves the read that would only say EAGAIN, one syscall per burst of a
    // request-response protocol, as Boost.Asio's reactor does. The caller must go back to
    // would_block when epoll reports a hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR): an EOF
    // queued behind the last bytes raises no further edge.
    short_read,
};

struct fd_transfer {
    std::size_t bytes = 0;  // moved by this call
    fd_stop stop = fd_stop::would_block;
    int error = 0;  // errno, for fd_stop::error
};

namespace internal {
struct fd_pump_state;
}

// Reads an fd into a pipe_writer. After end_of_stream, peer_completed or error, step() and
// run() return that stop again with 0 bytes.
class fd_to_pipe {
public:
    // read_size: the span asked of the writer for each read(2); 16 KiB is four of the pipe's
    // default segments, few syscalls without making the writer overshoot the pause
    // threshold by much (backpressure is checked per flush, one flush per read).
    explicit fd_to_pipe(int fd, pipe_writer& writer, std::function<void()> wake = {}, std::size_t read_size = 16384);
    ~fd_to_pipe();
    fd_to_pipe(const fd_to_pipe&) = delete;
    fd_to_pipe& operator=(const fd_to_pipe&) = delete;

    // Reads until EAGAIN (or as `until` says), EOF, an error, or a flush that cannot
    // complete at once. Each read is flushed before the next, so a reader sees bytes as
    // they come.
    fd_transfer step(fd_read_until until = fd_read_until::would_block);
    // Blocks until end_of_stream, peer_completed, canceled or error (waiting first for a
    // flush a step() left pending).
    fd_transfer run();

private:
    // True when r ends this call (completion or cancel), with t set to say why.
    bool flush_ended(fd_transfer& t, const flush_result& r);
    bool failed(fd_transfer& t, int error);

    int fd_;
    pipe_writer* writer_;
    std::size_t read_size_;
    std::shared_ptr<internal::fd_pump_state> state_;
};

// Writes what a pipe_reader reads to an fd. After end_of_stream or error, step() and run()
// return that stop again with 0 bytes; after the writer's error they rethrow it again. A pending read left by step()
// (pipe_empty) stays outstanding if the object is destroyed: cancel_pending_read() first to end it.
class pipe_to_fd {
public:
    explicit pipe_to_fd(pipe_reader& reader, int fd, std::function<void()> wake = {});
    ~pipe_to_fd();
    pipe_to_fd(const pipe_to_fd&) = delete;
    pipe_to_fd& operator=(const pipe_to_fd&) = delete;

    // Writes until EAGAIN (the bytes written so far are consumed, the rest stay in the pipe),
    // an empty pipe, the end of the stream, or an error.
    fd_transfer step();
    // Blocks until end_of_stream, canceled or error.
    fd_transfer run();

private:
    // Hands on one read, the same for step() and run(): a canceled read gives its bytes back to
    // the reader; otherwise r's buffer is written and the reader advanced past what was
    // written, and a completed read then ends the stream. True when that ends this call (a
    // cancel, EAGAIN in step(), an error, the end of the stream), with t set to say why.
    bool drain(const read_result& r, fd_transfer& t, bool blocking);
    read_result read_rethrowing(bool blocking, bool& got);
    read_result take_parked();  // the result a read_async callback left

    pipe_reader* reader_;
    int fd_;
    std::shared_ptr<internal::fd_pump_state> state_;
};

// Blocking one-shot forms: fd_to_pipe(fd, writer).run() and pipe_to_fd(reader, fd).run().
fd_transfer copy_fd_to_pipe(int fd, pipe_writer& writer);
fd_transfer copy_pipe_to_fd(pipe_reader& reader, int fd);

}  // namespace contend
