// The pipe suite: one writer thread and one reader thread move a checksummed byte stream in
// chunks of 64 B, 4 KiB and 64 KiB (pipe_workload.hpp). Rows: pipe/<transport>/chunk:<bytes>;
// each reports bytes_per_second, and the contend::pipe rows contentions_per_second, the
// figure the Pipelines contention PR set out to lower (dotnet-runtime-pipelines-contention in
// docs/references.md). This file holds contend::pipe with either lock, a mutex ring, a
// socketpair, the lock-free ideal hand-off and the memcpy reference; moodycamel's queue is a peer
// (suites/pipe_peers.cpp).
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "contend/pipe.hpp"
#include "measure/harness.hpp"
#include "suites/pipe_peers.hpp"
#include "suites/pipe_suite.hpp"
#include "suites/pipe_workload.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

using pipe_bench::aligned_bytes;
using pipe_bench::window_bytes;

// How long a transport's wait may last before it polls its stop or quit flag again: short
// enough that a stalled row ends soon after its deadline, long enough that a waiting thread
// almost never wakes for nothing.
constexpr auto poll_interval = std::chrono::milliseconds(10);

// contend::pipe as Pipelines is used: the writer takes a span, copies the chunk in,
// advances and flushes; the reader reads what is buffered, hands each segment on and
// advances past all of it. Default options (a 64 KiB pause threshold), with the lock the row
// names. flush() has no timeout, so the watchdog cancels it once the harness says stop.
class contend_pipe {
public:
    static constexpr bool needs_watchdog = true;

    contend_pipe(std::size_t, pipe_lock_kind lock) : pipe_(options(lock)) {}

    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>&) {
        pipe_writer& w = pipe_.writer();
        const std::span<std::byte> to = w.get_span(chunk.size());
        std::memcpy(to.data(), chunk.data(), chunk.size());
        w.advance(chunk.size());
        // A canceled flush still made the chunk readable: the bytes count, and the caller
        // finds the harness's stop raised (the only reason for a cancel) when it polls.
        if (w.flush().is_completed) throw std::runtime_error("the pipe's reader completed while the writer wrote");
        return chunk.size();
    }

    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        pipe_reader& r = pipe_.reader();
        for (;;) {
            const read_result got = r.read();
            for (const auto s : got.buffer.segments()) sink(s);
            r.advance_to(got.buffer.end());
            if (got.is_completed) return;
            if (got.is_canceled && quit.load()) return;
        }
    }
    void close() { pipe_.writer().complete(); }
    void cancel_writer() { pipe_.writer().cancel_pending_flush(); }

    void begin_window() { contentions_at_start_ = pipe_.stats().lock_contentions; }
    void end_window() { contentions_ = pipe_.stats().lock_contentions - contentions_at_start_; }
    void add_metrics(const repetition_facts& facts, metric_list& out) const {
        out.emplace_back("contentions_per_second",
                         facts.wall_ns > 0 ? static_cast<double>(contentions_) / (facts.wall_ns / 1e9) : 0);
    }

private:
    static pipe_options options(pipe_lock_kind lock) {
        pipe_options o;
        o.lock = lock;
        return o;
    }
    contend::pipe pipe_;
    std::uint64_t contentions_at_start_ = 0;
    std::uint64_t contentions_ = 0;
};

// The plain byte pipe: a 64 KiB ring (the pipe's pause threshold, so both hold the same
// bytes before the writer waits) under one std::mutex, the writer waiting on not_full_ when
// it is full and the reader on not_empty_ when it is empty. The lock guards the two
// positions only: each side copies outside it, into or out of the part that is its own
// until it moves its position (one writer, one reader), as a careful hand-written ring does.
// The reader takes everything buffered, as the pipe's does.
class mutex_ring {
public:
    explicit mutex_ring(std::size_t) : ring_(window_bytes) {}

    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>& stop) {
        std::size_t done = 0;
        while (done < chunk.size()) {
            std::uint64_t tail = 0, room = 0;
            {
                std::unique_lock lk(m_);
                while ((room = window_bytes - (tail_ - head_)) == 0) {
                    if (stop.load(std::memory_order_relaxed)) return done;
                    not_full_.wait_for(lk, poll_interval);
                }
                tail = tail_;
            }
            const std::size_t n = std::min<std::uint64_t>(room, chunk.size() - done);
            copy_in(tail, chunk.subspan(done, n));
            {
                std::lock_guard lk(m_);
                tail_ += n;
            }
            not_empty_.notify_one();
            done += n;
        }
        return done;
    }

    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        for (;;) {
            std::uint64_t head = 0, ready = 0;
            {
                std::unique_lock lk(m_);
                while ((ready = tail_ - head_) == 0) {
                    if (closed_ || quit.load()) return;
                    not_empty_.wait_for(lk, poll_interval);
                }
                head = head_;
            }
            const std::size_t at = head % window_bytes;
            const std::size_t first = std::min<std::uint64_t>(ready, window_bytes - at);
            sink(std::span<const std::byte>(ring_.get() + at, first));
            if (first < ready) sink(std::span<const std::byte>(ring_.get(), ready - first));
            {
                std::lock_guard lk(m_);
                head_ += ready;
            }
            not_full_.notify_one();
        }
    }

    void close() {
        {
            std::lock_guard lk(m_);
            closed_ = true;
        }
        not_empty_.notify_all();
    }

private:
    void copy_in(std::uint64_t tail, std::span<const std::byte> bytes) {
        const std::size_t at = tail % window_bytes;
        const std::size_t first = std::min(bytes.size(), window_bytes - at);
        std::memcpy(ring_.get() + at, bytes.data(), first);
        std::memcpy(ring_.get(), bytes.data() + first, bytes.size() - first);
    }

    aligned_bytes ring_;
    std::mutex m_;
    std::condition_variable not_full_, not_empty_;
    std::uint64_t head_ = 0;  // bytes read since the start; under m_
    std::uint64_t tail_ = 0;  // bytes written since the start; under m_
    bool closed_ = false;
};

// The machine's limit for a two-thread hand-off: the same 64 KiB byte ring with no lock and
// no sleep. Each side publishes its position with one release store and polls the other's
// (acquire), yielding the CPU on every empty look, so that it also runs when both sides share
// one CPU. Nothing a real transport must have (sleeping when idle, more than one writer,
// cancellation), so no transport can beat it: the pipe's ratio to it says how much of what
// the machine allows the pipe gets (on the Intel Xeon VM a bare hand-off ran 1.6 to 5.4 GB/s
// as the host moved the vCPUs).
class spsc_ideal {
public:
    explicit spsc_ideal(std::size_t) : ring_(window_bytes) {}

    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>& stop) {
        std::size_t done = 0;
        const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        while (done < chunk.size()) {
            const std::uint64_t room = window_bytes - (tail + done - head_.load(std::memory_order_acquire));
            if (room == 0) {
                if (stop.load(std::memory_order_relaxed)) break;
                sched_yield();
                continue;
            }
            const std::size_t n = std::min<std::uint64_t>(room, chunk.size() - done);
            const std::size_t at = (tail + done) % window_bytes;
            const std::size_t first = std::min(n, window_bytes - at);
            std::memcpy(ring_.get() + at, chunk.data() + done, first);
            std::memcpy(ring_.get(), chunk.data() + done + first, n - first);
            done += n;
            tail_.store(tail + done, std::memory_order_release);
        }
        return done;
    }

    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        std::uint64_t head = head_.load(std::memory_order_relaxed);
        for (;;) {
            const std::uint64_t ready = tail_.load(std::memory_order_acquire) - head;
            if (ready == 0) {
                if (closed_.load(std::memory_order_acquire) && tail_.load(std::memory_order_acquire) == head) return;
                if (quit.load()) return;
                sched_yield();
                continue;
            }
            const std::size_t at = head % window_bytes;
            const std::size_t first = std::min<std::uint64_t>(ready, window_bytes - at);
            sink(std::span<const std::byte>(ring_.get() + at, first));
            if (first < ready) sink(std::span<const std::byte>(ring_.get(), ready - first));
            head += ready;
            head_.store(head, std::memory_order_release);
        }
    }

    void close() { closed_.store(true, std::memory_order_release); }

private:
    aligned_bytes ring_;
    alignas(64) std::atomic<std::uint64_t> head_{0};  // bytes read; written by the reader
    alignas(64) std::atomic<std::uint64_t> tail_{0};  // bytes written; written by the writer
    std::atomic<bool> closed_{false};
};

// The kernel's pipe: an AF_UNIX SOCK_STREAM socketpair, the writer's blocking send() of each
// chunk, the reader's blocking recv() of up to 64 KiB (what is there, as the pipe's reader
// takes). Socket buffers as the kernel sizes them by default (net.core.wmem_default), as a
// program gets them. SO_SNDTIMEO and SO_RCVTIMEO bound every blocking call, so the loops
// poll their flags without a syscall more per chunk.
class socketpair_stream {
public:
    explicit socketpair_stream(std::size_t) : buffer_(window_bytes) {
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_) != 0)
            throw std::system_error(errno, std::generic_category(), "socketpair");
        const timeval timeout{0, static_cast<suseconds_t>(std::chrono::microseconds(poll_interval).count())};
        ::setsockopt(fds_[0], SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fds_[1], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    }
    ~socketpair_stream() {
        ::close(fds_[0]);
        ::close(fds_[1]);
    }
    socketpair_stream(const socketpair_stream&) = delete;
    socketpair_stream& operator=(const socketpair_stream&) = delete;

    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>& stop) {
        std::size_t done = 0;
        while (done < chunk.size()) {
            const ssize_t n = ::send(fds_[0], chunk.data() + done, chunk.size() - done, MSG_NOSIGNAL);
            if (n > 0) {
                done += static_cast<std::size_t>(n);
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                if (stop.load(std::memory_order_relaxed)) return done;
            } else {
                throw std::system_error(errno, std::generic_category(), "send");
            }
        }
        return done;
    }

    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        for (;;) {
            const ssize_t n = ::recv(fds_[1], buffer_.get(), window_bytes, 0);
            if (n > 0) {
                sink(std::span<const std::byte>(buffer_.get(), static_cast<std::size_t>(n)));
            } else if (n == 0) {
                return;  // the writer shut its side: close()
            } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                if (quit.load()) return;
            } else {
                throw std::system_error(errno, std::generic_category(), "recv");
            }
        }
    }
    void close() { ::shutdown(fds_[0], SHUT_WR); }

private:
    int fds_[2] = {-1, -1};
    aligned_bytes buffer_;  // the reader's
};

// The physical reference: the work of both sides on one thread with no hand-off. Each chunk
// is copied from the same pattern into a 64 KiB destination (the window the transports
// hold; one chunk at 64 KiB) and checksummed there, as the reader checksums what it gets.
class memcpy_reference final : public workload {
public:
    explicit memcpy_reference(std::size_t chunk) : chunk_(chunk), destination_(window_bytes) {}

    void reset() override { rep_chunks_ = 0; }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker != 0) return 0;  // one thread: the others return at once
        rep_chunks_ = run_polled(worker, ops, stop, progress, [this] {
            std::byte* to = destination_.get() + written_ % window_bytes;
            std::memcpy(to, source_.at(written_), chunk_);
            sum_.update({to, chunk_});
            written_ += chunk_;
        });
        return rep_chunks_;
    }
    check_result check(const std::vector<std::uint64_t>& completed) override {
        std::uint64_t reported = 0;
        for (const auto c : completed) reported += c;
        if (reported == 0) return {"no_bytes", "no chunk was copied"};
        if (reported != rep_chunks_)
            return {"wrong_count",
                    std::to_string(reported) + " chunks reported, " + std::to_string(rep_chunks_) + " copied"};
        const pipe_bench::stream_sum want = source_.expected(written_);
        if (sum_.bytes() != written_ || sum_.a() != want.a() || sum_.b() != want.b())
            return {"checksum_mismatch", "the bytes copied are not the pattern's"};
        return {};
    }
    void measure(const repetition_facts& facts, metric_list& out) override {
        pipe_bench::add_stream_metrics(facts, chunk_, out);
    }

private:
    const std::size_t chunk_;
    const pipe_bench::pattern_source source_;
    aligned_bytes destination_;
    pipe_bench::stream_sum sum_;
    std::uint64_t written_ = 0;
    std::uint64_t rep_chunks_ = 0;
};

}  // namespace

suite make_pipe_suite() {
    suite s{"pipe",
            "a byte stream from one writer thread to one reader thread in chunks of 64 B, 4 KiB and 64 KiB, "
            "every byte checksummed (the reader:count rows, the natural pattern on one CPU, count the bytes and "
            "check each run's ends); workers = the writer and the reader",
            {},
            {2}};
    append_pipe_rows<contend_pipe>(s.contenders, "contend", "contend::pipe, default options (contend::mutex)",
                                   pipe_lock_kind::contend_mutex);
    append_pipe_rows<contend_pipe>(s.contenders, "contend_std_mutex", "contend::pipe with std::mutex as its lock",
                                   pipe_lock_kind::std_mutex);
    append_pipe_rows<mutex_ring>(s.contenders, "mutex_ring",
                                 "a 64 KiB byte ring under std::mutex + condition_variable, copies outside the lock");
    append_pipe_rows<socketpair_stream>(s.contenders, "socketpair",
                                        "AF_UNIX SOCK_STREAM socketpair, blocking send and recv");
    append_pipe_rows<spsc_ideal>(s.contenders, "spsc_ideal",
                                 "the machine's hand-off limit: a 64 KiB byte ring, no lock, no sleep, each side "
                                 "polling the other's position and yielding when there is nothing to do");
    append_peer_pipes(s.contenders);
    for (const std::size_t chunk : pipe_bench::chunk_sizes) {
        contender c;
        c.name = "memcpy";
        c.description = "the same bytes copied and checksummed by one thread, no hand-off, chunks of " +
                        std::to_string(chunk) + " bytes";
        c.params = {{"chunk", std::to_string(chunk)}};
        c.operation = "chunk";
        c.workload_type = demangled_type_name<memcpy_reference>();
        c.make = [chunk] { return std::make_unique<memcpy_reference>(chunk); };
        s.contenders.push_back(std::move(c));
    }
    // The pipe at its minimum segment beside a nice-19 busy loop: how the hand-off between
    // its two threads holds up when a co-tenant takes the CPU one of them wanted.
    add_busy_loop_row(s, "contend/chunk:4096");
    // The natural pattern on one CPU (a writer flushing every 4 KiB, a reader counting what
    // it got), for contend::pipe and the two transports it is compared with.
    append_natural_one_cpu_row<contend_pipe>(s.contenders, "contend", "contend::pipe, default options",
                                             pipe_lock_kind::contend_mutex);
    append_natural_one_cpu_row<mutex_ring>(s.contenders, "mutex_ring", "a 64 KiB byte ring under std::mutex");
    append_natural_one_cpu_row<socketpair_stream>(s.contenders, "socketpair", "AF_UNIX SOCK_STREAM socketpair");
    // Beside one busy loop at normal priority: the writer and the reader then often share one
    // CPU. The mutex ring and the socketpair too, for the comparison.
    for (const char* id : {"contend/chunk:4096", "mutex_ring/chunk:4096", "socketpair/chunk:4096"})
        add_busy_loop_row(s, id, 1, 0);
    return s;
}

}  // namespace contend::lab
