// contend::fd_to_pipe and contend::pipe_to_fd: blocking copies through socketpairs and
// files, nonblocking steps in an epoll loop, EOF, read and write errors (EPIPE with no
// SIGPIPE), a completed reader, a canceled read. Loopback only (AF_UNIX socketpairs, FIFOs,
// temporary files); every wait is bounded.
#include "contend/pipe_fd.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace contend_test;
using contend::fd_read_until;
using contend::fd_stop;
using contend::fd_to_pipe;
using contend::fd_transfer;
using contend::pipe_error;
using contend::pipe_options;
using contend::pipe_to_fd;
using contend::read_result;
using byte_pipe = contend::pipe;

namespace {

// Closes what it holds; -1 is nothing.
struct fd_closer {
    int fd = -1;
    ~fd_closer() {
        if (fd >= 0) ::close(fd);
    }
    void close() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

struct socket_pair {
    fd_closer a, b;
    explicit socket_pair(int flags = 0) {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | flags, 0, fds) != 0)
            throw std::system_error(errno, std::generic_category());
        a.fd = fds[0];
        b.fd = fds[1];
    }
};

struct temp_file {
    fd_closer fd;
    std::string path;
    temp_file() {
        char name[] = "/tmp/contend-pipe-fd-XXXXXX";
        fd.fd = ::mkstemp(name);
        if (fd.fd < 0) throw std::system_error(errno, std::generic_category(), "mkstemp");
        path = name;
    }
    ~temp_file() { ::unlink(path.c_str()); }
};

struct fnv1a {
    std::uint64_t value = 14695981039346656037ull;
    void add(std::span<const std::byte> bytes) {
        for (const std::byte b : bytes) value = (value ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
    }
};

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t state) {
    std::vector<std::byte> out(n);
    for (auto& b : out) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        b = static_cast<std::byte>(state >> 56);
    }
    return out;
}

std::string text_of(const contend::byte_sequence& b) {
    std::string s(b.size(), '\0');
    b.copy_to(std::as_writable_bytes(std::span(s.data(), s.size())));
    return s;
}

void send_all(int fd, std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        ASSERT_GT(n, 0) << std::strerror(errno);
        bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
}

pipe_options never_pausing() {
    pipe_options o;
    o.pause_writer_threshold = 0;
    o.resume_writer_threshold = 0;
    return o;
}

}  // namespace

// Blocking: bytes -> pipe 1 -> socket -> pipe 2 -> checksum, a thread per copy.
TEST(PipeFd, ASocketpairRoundTripKeepsEveryByteInOrder) {
    watchdog dog(180s);
    const std::size_t total = static_cast<std::size_t>(scaled(64l << 20));  // 8 MiB under sanitizers
    const std::vector<std::byte> payload = random_bytes(total, 1);
    fnv1a sent, received;
    sent.add(payload);
    std::size_t received_bytes = 0;
    fd_transfer to_socket, from_socket;
    byte_pipe outbound, inbound;
    socket_pair sockets;
    std::thread producer([&] {
        for (std::size_t at = 0; at < total;) {
            const std::size_t n = std::min<std::size_t>(total - at, 1 + (at * 7919) % 50'000);
            if (outbound.writer().write(std::span(payload).subspan(at, n)).is_completed) break;
            at += n;
        }
        outbound.writer().complete();
    });
    std::thread sender([&] {
        to_socket = contend::copy_pipe_to_fd(outbound.reader(), sockets.a.fd);
        ::shutdown(sockets.a.fd, SHUT_WR);  // the peer's EOF
    });
    std::thread receiver([&] { from_socket = contend::copy_fd_to_pipe(sockets.b.fd, inbound.writer()); });
    for (;;) {
        const read_result r = inbound.reader().read();
        for (const auto s : r.buffer.segments()) received.add(s);
        received_bytes += r.buffer.size();
        inbound.reader().advance_to(r.buffer.end());
        if (r.is_completed) break;
    }
    producer.join();
    sender.join();
    receiver.join();
    EXPECT_EQ(received_bytes, total);
    EXPECT_EQ(received.value, sent.value);
    EXPECT_EQ(to_socket.stop, fd_stop::end_of_stream) << to_string(to_socket.stop) << " errno " << to_socket.error;
    EXPECT_EQ(to_socket.bytes, total);
    EXPECT_EQ(from_socket.stop, fd_stop::end_of_stream)
        << to_string(from_socket.stop) << " errno " << from_socket.error;
    EXPECT_EQ(from_socket.bytes, total);
}

// Nonblocking: feed -> socket -> fd_to_pipe -> pipe -> pipe_to_fd -> socket -> collect, all
// in one thread driven by epoll (edge-triggered: every pass steps everything) and an
// eventfd that the pumps' `wake` writes. Nothing is collected until the sink has found its
// socket full (would_block) and the source has found the pipe full (writer_paused).
TEST(PipeFd, NonblockingStepsInAnEpollLoopMoveEveryByte) {
    watchdog dog(120s);
    const std::size_t total = static_cast<std::size_t>(scaled(16l << 20));
    const std::vector<std::byte> payload = random_bytes(total, 2);
    fnv1a sent, received;
    sent.add(payload);
    socket_pair in(SOCK_NONBLOCK), out(SOCK_NONBLOCK);
    fd_closer wake_fd{::eventfd(0, EFD_NONBLOCK)};
    fd_closer ep{::epoll_create1(0)};
    ASSERT_GE(wake_fd.fd, 0);
    ASSERT_GE(ep.fd, 0);
    for (const int fd : {in.a.fd, in.b.fd, out.a.fd, out.b.fd, wake_fd.fd}) {
        epoll_event e{};
        e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        e.data.fd = fd;
        ASSERT_EQ(::epoll_ctl(ep.fd, EPOLL_CTL_ADD, fd, &e), 0);
    }
    std::atomic<int> wakes{0};
    const auto wake = [&] {
        wakes.fetch_add(1);
        const std::uint64_t one = 1;
        (void)!::write(wake_fd.fd, &one, sizeof one);
    };
    byte_pipe p;
    fd_to_pipe source(in.b.fd, p.writer(), wake);
    pipe_to_fd sink(p.reader(), out.a.fd, wake);
    std::map<fd_stop, int> source_stops, sink_stops;
    std::size_t fed = 0, collected = 0, source_bytes = 0, sink_bytes = 0;
    bool fed_all = false, sink_done = false;
    // Nothing sent yet: the source's first step finds the socket empty.
    const fd_transfer first = source.step();
    EXPECT_EQ(first.stop, fd_stop::would_block) << to_string(first.stop);
    ++source_stops[first.stop];
    const auto deadline = steady::now() + 90s;
    while (!(sink_done && collected == total) && steady::now() < deadline) {
        bool progress = false;
        while (fed < total) {
            const ssize_t n = ::send(in.a.fd, payload.data() + fed, total - fed, MSG_NOSIGNAL);
            if (n <= 0) break;
            fed += static_cast<std::size_t>(n);
            progress = true;
        }
        if (fed == total && !fed_all) {
            ::shutdown(in.a.fd, SHUT_WR);
            fed_all = true;
        }
        const fd_transfer s = source.step();
        ++source_stops[s.stop];
        source_bytes += s.bytes;
        progress |= s.bytes > 0;
        const fd_transfer k = sink.step();
        ++sink_stops[k.stop];
        sink_bytes += k.bytes;
        progress |= k.bytes > 0;
        if (k.stop == fd_stop::end_of_stream) sink_done = true;
        if (source_stops[fd_stop::writer_paused] > 0 && sink_stops[fd_stop::would_block] > 0) {
            std::array<std::byte, 65536> buffer;
            for (;;) {
                const ssize_t n = ::recv(out.b.fd, buffer.data(), buffer.size(), 0);
                if (n <= 0) break;
                received.add(std::span(buffer).first(static_cast<std::size_t>(n)));
                collected += static_cast<std::size_t>(n);
                progress = true;
            }
        }
        if (!progress) {
            epoll_event events[8];
            ::epoll_wait(ep.fd, events, 8, 100);
            std::uint64_t count;
            (void)!::read(wake_fd.fd, &count, sizeof count);
        }
    }
    ASSERT_EQ(collected, total) << "fed " << fed << ", source " << source_bytes << ", sink " << sink_bytes;
    EXPECT_EQ(received.value, sent.value);
    EXPECT_EQ(source_bytes, total);
    EXPECT_EQ(sink_bytes, total);
    EXPECT_GT(source_stops[fd_stop::would_block], 0);
    EXPECT_GT(source_stops[fd_stop::writer_paused], 0);
    EXPECT_GE(source_stops[fd_stop::end_of_stream], 1);
    EXPECT_GT(sink_stops[fd_stop::would_block], 0) << "the sink's socket filled while nothing was collected";
    EXPECT_TRUE(sink_done);
    EXPECT_GT(wakes.load(), 0);
    EXPECT_EQ(source.step().stop, fd_stop::end_of_stream) << "a finished transfer says so again";
    EXPECT_EQ(sink.step().stop, fd_stop::end_of_stream);
}

TEST(PipeFd, AFileCopiesThroughAPipeIntoAnotherFile) {
    watchdog dog(120s);
    const std::size_t total = 3 * 1024 * 1024 + 12345;
    const std::vector<std::byte> payload = random_bytes(total, 3);
    temp_file source, target;
    ASSERT_EQ(::write(source.fd.fd, payload.data(), total), static_cast<ssize_t>(total));
    ASSERT_EQ(::lseek(source.fd.fd, 0, SEEK_SET), 0);
    byte_pipe p;
    fd_transfer in;
    std::thread reader([&] { in = contend::copy_fd_to_pipe(source.fd.fd, p.writer()); });
    const fd_transfer out = contend::copy_pipe_to_fd(p.reader(), target.fd.fd);
    reader.join();
    EXPECT_EQ(in.stop, fd_stop::end_of_stream);
    EXPECT_EQ(in.bytes, total);
    EXPECT_EQ(out.stop, fd_stop::end_of_stream);
    EXPECT_EQ(out.bytes, total);
    std::vector<std::byte> copy(total + 1);
    ASSERT_EQ(::pread(target.fd.fd, copy.data(), copy.size(), 0), static_cast<ssize_t>(total));
    copy.resize(total);
    EXPECT_TRUE(copy == payload) << "the copy differs";
}

TEST(PipeFd, EndOfFileCompletesTheWriter) {
    watchdog dog(30s);
    socket_pair s;
    byte_pipe p;
    send_all(s.a.fd, std::as_bytes(std::span("hello", 5)));
    ::shutdown(s.a.fd, SHUT_WR);
    fd_to_pipe source(s.b.fd, p.writer());
    const fd_transfer t = source.run();
    EXPECT_EQ(t.stop, fd_stop::end_of_stream);
    EXPECT_EQ(t.bytes, 5u);
    const read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "hello");
    EXPECT_TRUE(r.is_completed);
    p.reader().advance_to(r.buffer.end());
    EXPECT_THROW((void)p.writer().get_span(1), pipe_error) << "the writer was not completed";
    const fd_transfer again = source.run();
    EXPECT_EQ(again.stop, fd_stop::end_of_stream);
    EXPECT_EQ(again.bytes, 0u);
}

TEST(PipeFd, ANonblockingSourceReportsWouldBlockThenDataThenEndOfStream) {
    watchdog dog(30s);
    socket_pair s(SOCK_NONBLOCK);
    byte_pipe p;
    fd_to_pipe source(s.b.fd, p.writer());
    fd_transfer t = source.step();
    EXPECT_EQ(t.stop, fd_stop::would_block);
    EXPECT_EQ(t.bytes, 0u);
    send_all(s.a.fd, std::as_bytes(std::span("abcdef", 6)));
    t = source.step();
    EXPECT_EQ(t.stop, fd_stop::would_block);
    EXPECT_EQ(t.bytes, 6u);
    read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "abcdef");
    EXPECT_FALSE(r.is_completed);
    p.reader().advance_to(r.buffer.end());
    ::shutdown(s.a.fd, SHUT_WR);
    t = source.step();
    EXPECT_EQ(t.stop, fd_stop::end_of_stream);
    r = p.reader().read();
    EXPECT_TRUE(r.is_completed);
    p.reader().advance_to(r.buffer.end());
}

// fd_read_until::short_read stops at a read that came back short, before the EOF queued
// behind it, which only a step that reads until EAGAIN (the default) sees at once.
TEST(PipeFd, AShortReadEndsAStepOnlyWhenAskedTo) {
    watchdog dog(30s);
    for (const auto until : {fd_read_until::short_read, fd_read_until::would_block}) {
        socket_pair s(SOCK_NONBLOCK);
        byte_pipe p;
        fd_to_pipe source(s.b.fd, p.writer());
        send_all(s.a.fd, std::as_bytes(std::span("abcdef", 6)));
        ::shutdown(s.a.fd, SHUT_WR);
        fd_transfer t = source.step(until);
        EXPECT_EQ(t.bytes, 6u);
        if (until == fd_read_until::short_read) {
            EXPECT_EQ(t.stop, fd_stop::would_block);
            t = source.step(fd_read_until::would_block);  // as after EPOLLRDHUP
            EXPECT_EQ(t.bytes, 0u);
        }
        EXPECT_EQ(t.stop, fd_stop::end_of_stream);
        const read_result r = p.reader().read();
        EXPECT_EQ(text_of(r.buffer), "abcdef");
        EXPECT_TRUE(r.is_completed);
        p.reader().advance_to(r.buffer.end());
    }
}

TEST(PipeFd, APeerClosingEarlyIsAnErrorNotACrash) {
    watchdog dog(30s);
    socket_pair s;
    s.b.close();
    byte_pipe p(never_pausing());
    const std::vector<std::byte> data = random_bytes(256 * 1024, 4);
    ASSERT_FALSE(p.writer().write(data).is_completed);
    pipe_to_fd sink(p.reader(), s.a.fd);
    const fd_transfer t = sink.run();
    EXPECT_EQ(t.stop, fd_stop::error) << to_string(t.stop);
    EXPECT_TRUE(t.error == EPIPE || t.error == ECONNRESET) << std::strerror(t.error);
    // The reader was completed: the writer learns it from its next flush.
    EXPECT_TRUE(p.writer().write(data).is_completed);
    EXPECT_EQ(sink.run().stop, fd_stop::error);
}

TEST(PipeFd, AFifoWhoseReaderClosedGivesEpipeWithoutSigpipe) {
    watchdog dog(30s);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    fd_closer read_end{fds[0]}, write_end{fds[1]};
    read_end.close();
    byte_pipe p;
    const std::vector<std::byte> data = random_bytes(1000, 5);
    p.writer().write(data);
    // SIGPIPE's default action would end this process here; the test passing is the proof.
    pipe_to_fd sink(p.reader(), write_end.fd);
    const fd_transfer t = sink.step();
    EXPECT_EQ(t.stop, fd_stop::error);
    EXPECT_EQ(t.error, EPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "a SIGPIPE was left pending";
    EXPECT_TRUE(p.writer().write(data).is_completed);
}

// A FIFO's reader that reads a little and closes while a write is blocked cuts the write
// short: writev returns the bytes it wrote, and the kernel raises SIGPIPE all the same. It
// must be taken back too (the process died with 141 when only EPIPE was handled).
TEST(PipeFd, AFifoWriteCutShortByTheReadersCloseRaisesNoSigpipe) {
    watchdog dog(30s);
    for (int round = 0; round < 5; ++round) {
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        fd_closer read_end{fds[0]}, write_end{fds[1]};
        byte_pipe p(never_pausing());
        const std::vector<std::byte> data = random_bytes(1024 * 1024, 6);
        ASSERT_FALSE(p.writer().write(data).is_completed);
        std::thread reader([&] {
            std::array<char, 4096> buf{};
            ssize_t got = 0;
            while ((got = ::read(read_end.fd, buf.data(), buf.size())) < 0 && errno == EINTR) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the writer blocks again
            read_end.close();
        });
        pipe_to_fd sink(p.reader(), write_end.fd);
        const fd_transfer t = sink.run();  // blocking: SIGPIPE's default action would end the process
        reader.join();
        EXPECT_EQ(t.stop, fd_stop::error) << to_string(t.stop);
        EXPECT_EQ(t.error, EPIPE) << std::strerror(t.error);
        sigset_t pending;
        sigemptyset(&pending);
        sigpending(&pending);
        EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "a SIGPIPE was left pending";
    }
}

TEST(PipeFd, AReadErrorCompletesTheWriterWithASystemError) {
    watchdog dog(30s);
    temp_file f;
    fd_closer write_only{::open(f.path.c_str(), O_WRONLY)};
    ASSERT_GE(write_only.fd, 0);
    byte_pipe p;
    const fd_transfer t = contend::copy_fd_to_pipe(write_only.fd, p.writer());
    EXPECT_EQ(t.stop, fd_stop::error);
    EXPECT_EQ(t.error, EBADF);
    try {
        (void)p.reader().read();
        ADD_FAILURE() << "the reader did not see the read error";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EBADF);
    }
}

TEST(PipeFd, AReaderThatCompletedStopsTheSourceWithPeerCompleted) {
    watchdog dog(30s);
    socket_pair s(SOCK_NONBLOCK);
    byte_pipe p;
    p.reader().complete();
    send_all(s.a.fd, std::as_bytes(std::span("ignored", 7)));
    fd_to_pipe source(s.b.fd, p.writer());
    const fd_transfer t = source.step();
    EXPECT_EQ(t.stop, fd_stop::peer_completed);
    EXPECT_THROW((void)p.writer().get_span(1), pipe_error) << "the writer was not completed";
    EXPECT_NO_THROW(p.reset()) << "both sides are done";
}

TEST(PipeFd, AnEmptyPipeLeavesAReadPendingThatWakeAndCancelEnd) {
    watchdog dog(30s);
    socket_pair s(SOCK_NONBLOCK);
    std::atomic<int> wakes{0};
    byte_pipe p;
    pipe_to_fd sink(p.reader(), s.a.fd, [&] { wakes.fetch_add(1); });
    EXPECT_EQ(sink.step().stop, fd_stop::pipe_empty);
    EXPECT_EQ(sink.step().stop, fd_stop::pipe_empty) << "still pending";
    p.writer().write(std::as_bytes(std::span("ping", 4)));
    ASSERT_TRUE(eventually([&] { return wakes.load() == 1; }, 10s)) << "the flush did not wake the sink";
    fd_transfer t = sink.step();
    EXPECT_EQ(t.bytes, 4u);
    EXPECT_EQ(t.stop, fd_stop::pipe_empty);
    char got[4];
    ASSERT_EQ(::recv(s.b.fd, got, 4, 0), 4);
    EXPECT_EQ(std::string(got, 4), "ping");
    p.reader().cancel_pending_read();
    ASSERT_TRUE(eventually([&] { return wakes.load() == 2; }, 10s)) << "the cancel did not wake the sink";
    t = sink.step();
    EXPECT_EQ(t.stop, fd_stop::canceled);
    p.writer().complete();
    t = sink.step();
    EXPECT_EQ(t.stop, fd_stop::end_of_stream);
}

TEST(PipeFd, AWritersErrorIsRethrownBySinkStepEvenWhileAReadWasPending) {
    watchdog dog(30s);
    socket_pair s(SOCK_NONBLOCK);
    std::atomic<int> wakes{0};
    byte_pipe p;
    pipe_to_fd sink(p.reader(), s.a.fd, [&] { wakes.fetch_add(1); });
    EXPECT_EQ(sink.step().stop, fd_stop::pipe_empty);
    p.writer().complete(std::make_exception_ptr(std::runtime_error("producer failed")));
    ASSERT_TRUE(eventually([&] { return wakes.load() == 1; }, 10s));
    try {
        (void)sink.step();
        ADD_FAILURE() << "the writer's error was lost";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "producer failed");
    }
    // The transfer is over, and a later call says why again: the writer's error, not an
    // fd_stop::error with errno 0 (no fd failed).
    try {
        (void)sink.step();
        ADD_FAILURE() << "a second step() forgot the writer's error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "producer failed");
    }
    EXPECT_THROW((void)p.reader().read(), pipe_error) << "the reader was completed";
}

// run() after the writer's error: each call rethrows it. A second call returned
// fd_stop::error with error 0, as if the fd had failed with no errno.
TEST(PipeFd, AWritersErrorIsRethrownByEveryLaterSinkRun) {
    watchdog dog(30s);
    socket_pair s;
    byte_pipe p;
    pipe_to_fd sink(p.reader(), s.a.fd);
    p.writer().complete(std::make_exception_ptr(std::runtime_error("producer failed")));
    for (int call = 1; call <= 3; ++call) {
        try {
            const fd_transfer t = sink.run();
            ADD_FAILURE() << "call " << call << " returned stop " << static_cast<int>(t.stop) << ", error " << t.error;
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "producer failed") << "call " << call;
        }
    }
}
