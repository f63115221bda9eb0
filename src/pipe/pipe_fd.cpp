// fd_to_pipe and pipe_to_fd: the read(2)/writev(2) loops over the pipe's public API.
//
// The one subtle part is a flush or read left pending by step(). The callback may run inline
// (inside flush_async/read_async), on another thread before flush_async returns, or later.
// `phase` settles who handles the result: step() sets `issuing` before the call and tries to
// move it to `pending` after; the callback stores its result and swaps in `done`. If step()'s
// move fails, the callback already ran and step() goes on with its result; if the callback
// finds `pending`, step() has returned and only `wake` can tell the caller.
#include "contend/pipe_fd.hpp"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <utility>

#include "contend/condition_variable.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"

namespace contend {
namespace internal {

enum class fd_kind : std::uint8_t { socket, fifo, other };

struct fd_pump_state {
    enum : int { idle, issuing, pending, done };

    std::function<void()> wake;
    fd_kind kind = fd_kind::other;
    internal::atomic<int> phase{idle};
    flush_result flushed{};  // fd_to_pipe's pending flush, once `done`
    read_result read{};  // pipe_to_fd's pending read, once `done`
    contend::mutex m;  // only for run() waiting out a pending flush or read
    contend::condition_variable cv;
    bool finished = false;  // a terminal stop was reported; only the caller's thread touches it
    fd_stop final_stop = fd_stop::end_of_stream;
    int final_error = 0;
    std::exception_ptr writer_error;  // pipe_to_fd: the writer's error that ended the transfer

    // The callback's half of the hand-off above: its result is stored before the swap.
    void settle() {
        int before;
        {
            std::lock_guard lk(m);
            before = phase.exchange(done, std::memory_order_acq_rel);
        }
        cv.notify_all();
        if (before == pending && wake) wake();
    }
    // step()'s half: true if the call it just made is still pending (step must return).
    bool left_pending() {
        int expected = issuing;
        if (phase.compare_exchange_strong(expected, pending, std::memory_order_acq_rel)) return true;
        phase.store(idle, std::memory_order_relaxed);
        return false;
    }
    // run()'s wait for a callback that step() left pending; true if there was one.
    bool wait_settled() {
        if (phase.load(std::memory_order_acquire) == idle) return false;
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return phase.load(std::memory_order_acquire) == done; });
        phase.store(idle, std::memory_order_relaxed);
        return true;
    }
    fd_transfer finish(fd_transfer t, fd_stop stop, int error = 0) {
        finished = true;
        final_stop = t.stop = stop;
        final_error = t.error = error;
        return t;
    }
    // The terminal stop again; the writer's error is rethrown again (it was no fd's error,
    // so no stop with an errno could say it).
    fd_transfer final_result() const {
        if (writer_error) std::rethrow_exception(writer_error);
        return {0, final_stop, final_error};
    }
};

namespace {

fd_kind kind_of(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fd_kind::other;  // the error shows on the first I/O
    if (S_ISSOCK(st.st_mode)) return fd_kind::socket;
    if (S_ISFIFO(st.st_mode)) return fd_kind::fifo;
    return fd_kind::other;
}

// writev without SIGPIPE. Sockets have a flag for it. A FIFO does not: SIGPIPE is blocked in
// this thread for the call and, if the call raised it (and it was not already pending), taken
// back with a zero-timeout sigtimedwait, so nothing process-wide changes.
ssize_t write_vector(int fd, fd_kind kind, const iovec* iov, int count) {
    if (kind == fd_kind::socket) {
        msghdr msg{};
        msg.msg_iov = const_cast<iovec*>(iov);
        msg.msg_iovlen = static_cast<std::size_t>(count);
        return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    }
    if (kind == fd_kind::other) return ::writev(fd, iov, count);
    sigset_t sigpipe_only, old;
    sigemptyset(&sigpipe_only);
    sigaddset(&sigpipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_only, &old);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    const ssize_t n = ::writev(fd, iov, count);
    const int error = errno;
    if (!was_pending) {
        // Not only on EPIPE: a write the reader's close cut short returns the bytes it wrote
        // and raises SIGPIPE all the same.
        sigemptyset(&pending);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            const timespec zero{};
            while (sigtimedwait(&sigpipe_only, nullptr, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = error;
    return n;
}

void wait_ready(int fd, short events) {
    pollfd p{fd, events, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
}

std::exception_ptr fd_error(int error, const char* what) {
    return std::make_exception_ptr(std::system_error(error, std::generic_category(), what));
}

// Segments per writev: enough that a full pipe (64 KiB in 4 KiB segments is 16) goes in one call.
constexpr int max_iov = 64;

}  // namespace
}  // namespace internal

const char* to_string(fd_stop stop) noexcept {
    switch (stop) {
        case fd_stop::would_block:
            return "would_block";
        case fd_stop::end_of_stream:
            return "end_of_stream";
        case fd_stop::writer_paused:
            return "writer_paused";
        case fd_stop::pipe_empty:
            return "pipe_empty";
        case fd_stop::peer_completed:
            return "peer_completed";
        case fd_stop::canceled:
            return "canceled";
        case fd_stop::error:
            return "error";
    }
    return "?";
}

// --- fd_to_pipe ------------------------------------------------------------------------

fd_to_pipe::fd_to_pipe(int fd, pipe_writer& writer, std::function<void()> wake, std::size_t read_size)
    : fd_(fd),
      writer_(&writer),
      read_size_(read_size == 0 ? 1 : read_size),
      state_(std::make_shared<internal::fd_pump_state>()) {
    state_->wake = std::move(wake);
    state_->kind = internal::kind_of(fd);
}

fd_to_pipe::~fd_to_pipe() = default;

bool fd_to_pipe::flush_ended(fd_transfer& t, const flush_result& r) {
    if (r.is_completed) {
        // Nothing written now can be read: the transfer is over on both sides.
        writer_->complete();
        t = state_->finish(t, fd_stop::peer_completed);
        return true;
    }
    if (r.is_canceled) {
        t.stop = fd_stop::canceled;
        return true;
    }
    return false;
}

bool fd_to_pipe::failed(fd_transfer& t, int error) {
    writer_->complete(internal::fd_error(error, "contend::fd_to_pipe: read"));
    t = state_->finish(t, fd_stop::error, error);
    return true;
}

fd_transfer fd_to_pipe::step(fd_read_until until) {
    auto& st = *state_;
    if (st.finished) return st.final_result();
    fd_transfer t;
    switch (st.phase.load(std::memory_order_acquire)) {
        case internal::fd_pump_state::pending:
            t.stop = fd_stop::writer_paused;
            return t;
        case internal::fd_pump_state::done:
            st.phase.store(internal::fd_pump_state::idle, std::memory_order_relaxed);
            if (flush_ended(t, st.flushed)) return t;
            break;
        default:
            break;
    }
    for (;;) {
        const auto span = writer_->get_span(read_size_);
        const ssize_t n = ::read(fd_, span.data(), span.size());
        if (n < 0) {
            const int error = errno;
            if (error == EINTR) continue;
            if (error == EAGAIN || error == EWOULDBLOCK) {
                t.stop = fd_stop::would_block;
                return t;
            }
            failed(t, error);
            return t;
        }
        if (n == 0) {
            writer_->complete();
            return st.finish(t, fd_stop::end_of_stream);
        }
        const bool drained = until == fd_read_until::short_read && static_cast<std::size_t>(n) < span.size();
        writer_->advance(static_cast<std::size_t>(n));
        t.bytes += static_cast<std::size_t>(n);
        st.phase.store(internal::fd_pump_state::issuing, std::memory_order_relaxed);
        try {
            writer_->flush_async([s = state_](flush_result r) {
                s->flushed = r;
                s->settle();
            });
        } catch (...) {
            st.phase.store(internal::fd_pump_state::idle, std::memory_order_relaxed);
            throw;
        }
        if (st.left_pending()) {
            t.stop = fd_stop::writer_paused;
            return t;
        }
        if (flush_ended(t, st.flushed)) return t;
        if (drained) {
            t.stop = fd_stop::would_block;
            return t;
        }
    }
}

fd_transfer fd_to_pipe::run() {
    auto& st = *state_;
    if (st.finished) return st.final_result();
    fd_transfer t;
    if (st.wait_settled() && flush_ended(t, st.flushed)) return t;
    for (;;) {
        const auto span = writer_->get_span(read_size_);
        const ssize_t n = ::read(fd_, span.data(), span.size());
        if (n < 0) {
            const int error = errno;
            if (error == EINTR) continue;
            if (error == EAGAIN || error == EWOULDBLOCK) {
                internal::wait_ready(fd_, POLLIN);
                continue;
            }
            failed(t, error);
            return t;
        }
        if (n == 0) {
            writer_->complete();
            return st.finish(t, fd_stop::end_of_stream);
        }
        writer_->advance(static_cast<std::size_t>(n));
        t.bytes += static_cast<std::size_t>(n);
        if (flush_ended(t, writer_->flush())) return t;
    }
}

// --- pipe_to_fd ------------------------------------------------------------------------

pipe_to_fd::pipe_to_fd(pipe_reader& reader, int fd, std::function<void()> wake)
    : reader_(&reader), fd_(fd), state_(std::make_shared<internal::fd_pump_state>()) {
    state_->wake = std::move(wake);
    state_->kind = internal::kind_of(fd);
}

pipe_to_fd::~pipe_to_fd() = default;

bool pipe_to_fd::drain(const read_result& r, fd_transfer& t, bool blocking) {
    if (r.is_canceled) {
        reader_->advance_to(r.buffer.start());
        t.stop = fd_stop::canceled;
        return true;
    }
    const byte_sequence& buffer = r.buffer;
    const std::size_t size = buffer.size();
    std::size_t written = 0;
    while (written < size) {
        iovec iov[internal::max_iov];
        int count = 0;
        for (const auto segment : buffer.slice(written, size - written).segments()) {
            iov[count++] = {const_cast<std::byte*>(segment.data()), segment.size()};
            if (count == internal::max_iov) break;
        }
        const ssize_t n = internal::write_vector(fd_, state_->kind, iov, count);
        if (n >= 0) {
            written += static_cast<std::size_t>(n);
            continue;
        }
        const int error = errno;
        if (error == EINTR) continue;
        if ((error == EAGAIN || error == EWOULDBLOCK) && blocking) {
            internal::wait_ready(fd_, POLLOUT);
            continue;
        }
        // What was written is consumed; the rest stays for the next step (EAGAIN) or is
        // dropped with the reader (an error).
        reader_->advance_to(buffer.position(written));
        t.bytes += written;
        if (error == EAGAIN || error == EWOULDBLOCK) {
            t.stop = fd_stop::would_block;
            return true;
        }
        reader_->complete(internal::fd_error(error, "contend::pipe_to_fd: write"));
        t = state_->finish(t, fd_stop::error, error);
        return true;
    }
    reader_->advance_to(buffer.end());
    t.bytes += size;
    if (!r.is_completed) return false;
    reader_->complete();
    t = state_->finish(t, fd_stop::end_of_stream);
    return true;
}

read_result pipe_to_fd::read_rethrowing(bool blocking, bool& got) {
    read_result r;
    try {
        if (blocking) {
            r = reader_->read();
            got = true;
        } else {
            got = reader_->try_read(r);
        }
    } catch (const pipe_error&) {
        throw;  // misuse of the reader: the caller's to fix, the pipe is as it was
    } catch (...) {
        // The writer's error: nothing more will come, so the reader is done too.
        reader_->complete();
        state_->finish({}, fd_stop::error);
        state_->writer_error = std::current_exception();
        throw;
    }
    return r;
}

read_result pipe_to_fd::take_parked() {
    read_result r = std::move(state_->read);
    if (!r.is_completed || r.is_canceled || !r.buffer.empty()) return r;
    // An end delivered to a read_async callback cannot carry the writer's error, and then its
    // result may not be a read to advance past. try_read rethrows the error, or gives the
    // same empty, completed result as a read to advance past.
    try {
        reader_->advance_to(r.buffer.end());
    } catch (const pipe_error&) {
    }
    bool got = false;
    read_result again = read_rethrowing(false, got);
    return got ? again : r;
}

fd_transfer pipe_to_fd::step() {
    auto& st = *state_;
    if (st.finished) return st.final_result();
    fd_transfer t;
    read_result r;
    bool have = false;
    switch (st.phase.load(std::memory_order_acquire)) {
        case internal::fd_pump_state::pending:
            t.stop = fd_stop::pipe_empty;
            return t;
        case internal::fd_pump_state::done:
            st.phase.store(internal::fd_pump_state::idle, std::memory_order_relaxed);
            r = take_parked();
            have = true;
            break;
        default:
            break;
    }
    for (;;) {
        if (!have) {
            bool got = false;
            r = read_rethrowing(false, got);
            if (!got) {
                if (!st.wake) {
                    t.stop = fd_stop::pipe_empty;
                    return t;
                }
                st.phase.store(internal::fd_pump_state::issuing, std::memory_order_relaxed);
                try {
                    reader_->read_async([s = state_](read_result rr) {
                        s->read = std::move(rr);
                        s->settle();
                    });
                } catch (...) {
                    st.phase.store(internal::fd_pump_state::idle, std::memory_order_relaxed);
                    throw;
                }
                if (st.left_pending()) {
                    t.stop = fd_stop::pipe_empty;
                    return t;
                }
                r = take_parked();
            }
        }
        have = false;
        if (drain(r, t, false)) return t;
    }
}

fd_transfer pipe_to_fd::run() {
    auto& st = *state_;
    if (st.finished) return st.final_result();
    fd_transfer t;
    read_result r;
    bool have = st.wait_settled();
    if (have) r = take_parked();
    for (;;) {
        if (!have) {
            bool got = false;
            r = read_rethrowing(true, got);
        }
        have = false;
        if (drain(r, t, true)) return t;
    }
}

fd_transfer copy_fd_to_pipe(int fd, pipe_writer& writer) { return fd_to_pipe(fd, writer).run(); }

fd_transfer copy_pipe_to_fd(pipe_reader& reader, int fd) { return pipe_to_fd(reader, fd).run(); }

}  // namespace contend
