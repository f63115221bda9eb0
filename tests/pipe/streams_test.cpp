// contend::pipe: long checksummed streams between threads under every lock kind, and the
// counters.
#include "pipe_support.hpp"

#include <coroutine>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace contend_test;
using namespace pipe_test;

// --- Long streams between threads ------------------------------------------------------

class PipeLocks : public ::testing::TestWithParam<pipe_lock_kind> {};

TEST_P(PipeLocks, AGibibyteInRandomChunksArrivesIntactFromAWriterThreadToAReaderThread) {
    watchdog dog(280s);
    // 1 GiB optimized; 64 MiB under sanitizers (5-15x slower): the same chunk sizes and checks.
    const std::uint64_t total = under_sanitizer ? std::uint64_t{64} << 20 : std::uint64_t{1} << 30;
    fnv1a sent, received;
    std::uint64_t received_bytes = 0;
    pipe_options o;
    o.lock = GetParam();
    byte_pipe p(o);
    side_thread writer(
        [&] {
            splitmix64 rng{3};
            for (std::uint64_t done = 0; done < total;) {
                const std::size_t n =
                    static_cast<std::size_t>(std::min<std::uint64_t>(rng.chunk(96 * 1024), total - done));
                const auto span = p.writer().get_span(n).first(n);
                rng.fill(span);
                sent.add(span);
                p.writer().advance(n);
                if (p.writer().flush().is_completed) break;
                done += n;
            }
            p.writer().complete();
        },
        [&] { p.reader().complete(); });
    for (;;) {
        const read_result r = p.reader().read();
        for (const auto s : r.buffer.segments()) received.add(s);
        received_bytes += r.buffer.size();
        p.reader().advance_to(r.buffer.end());
        if (r.is_completed) break;
    }
    writer.join();
    EXPECT_EQ(received_bytes, total);
    EXPECT_EQ(received.value, sent.value) << "the bytes arrived changed or out of order";
    const contend::pipe_stats s = p.stats();
    EXPECT_EQ(s.bytes_written, total);
    EXPECT_EQ(s.bytes_consumed, total);
    EXPECT_EQ(s.buffered_bytes, 0u);
}

// The lock-free fast paths hand waiting over to the lock through flags: a lost wake-up
// there would hang one side. Tiny thresholds make the writer pause every few flushes, and a
// reader that examines everything but consumes only part (then waits for more) makes both
// sides wait often; every byte must still arrive in order, within the watchdog.
TEST_P(PipeLocks, TinyThresholdsAndPartialConsumesLoseNoWakeUpAndNoByte) {
    watchdog dog(240s);
    const std::uint64_t total = under_sanitizer ? std::uint64_t{8} << 20 : std::uint64_t{256} << 20;
    fnv1a sent, received;
    pipe_options o;
    o.pause_writer_threshold = 256;
    o.resume_writer_threshold = 64;
    o.minimum_segment_size = 128;
    o.max_pooled_segments = 4;
    o.lock = GetParam();
    byte_pipe p(o);
    side_thread writer(
        [&] {
            splitmix64 rng{11};
            for (std::uint64_t done = 0; done < total;) {
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(rng.chunk(300), total - done));
                const auto span = p.writer().get_span(n).first(n);
                rng.fill(span);
                sent.add(span);
                p.writer().advance(n);
                if (p.writer().flush().is_completed) break;
                done += n;
            }
            p.writer().complete();
        },
        [&] { p.reader().complete(); });
    splitmix64 pick{5};
    std::uint64_t received_bytes = 0;
    std::vector<std::byte> tail;  // bytes examined but not consumed, already checksummed
    for (;;) {
        const read_result r = p.reader().read();
        const std::size_t size = r.buffer.size();
        // Consume a random prefix of at least half (all once the writer is done, and half
        // keeps the buffer bounded), examine everything.
        const std::size_t keep_from =
            r.is_completed ? size : size - (static_cast<std::size_t>(pick.chunk(size / 2 + 1)) - 1);
        const auto consumed = r.buffer.slice(0, keep_from);
        for (const auto s : consumed.segments()) received.add(s);
        received_bytes += keep_from;
        p.reader().advance_to(r.buffer.position(keep_from), r.buffer.end());
        if (r.is_completed) break;
    }
    writer.join();
    EXPECT_EQ(received_bytes, total);
    EXPECT_EQ(received.value, sent.value);
    EXPECT_GT(p.stats().writer_pauses, 0u);
}

TEST_P(PipeLocks, LockContentionsAreCountedWhenReaderAndWriterCollide) {
    watchdog dog(120s);
    pipe_options o;
    o.lock = GetParam();
    byte_pipe p(o);
    side_thread reader(
        [&] {
            for (;;) {
                const read_result r = p.reader().read();
                p.reader().advance_to(r.buffer.end());
                if (r.is_completed) break;
            }
        },
        [&] { p.writer().complete(); });
    // One-byte flushes against a reader that takes each at once: both sides take the lock
    // tens of thousands of times; with two cores they collide. Bounded: 60 s at most.
    const auto until = steady::now() + 60s;
    std::uint64_t contentions = 0;
    const std::byte one{1};
    while (contentions == 0 && steady::now() < until) {
        for (int i = 0; i < 2000; ++i) p.writer().write(std::span(&one, 1));
        contentions = p.stats().lock_contentions;
    }
    p.writer().complete();
    reader.join();
    EXPECT_GT(contentions, 0u);
}

INSTANTIATE_TEST_SUITE_P(Locks, PipeLocks, ::testing::Values(pipe_lock_kind::contend_mutex, pipe_lock_kind::std_mutex),
                         [](const ::testing::TestParamInfo<pipe_lock_kind>& info) {
                             return info.param == pipe_lock_kind::contend_mutex ? "ContendMutex" : "StdMutex";
                         });

// --- Counters --------------------------------------------------------------------------

TEST(PipeStats, CountBytesWrittenConsumedAndBuffered) {
    byte_pipe p;
    commit(p.writer(), 100);
    EXPECT_EQ(p.stats().bytes_written, 0u) << "bytes_written counts flushed bytes";
    p.writer().flush();
    EXPECT_EQ(p.stats().bytes_written, 100u);
    EXPECT_EQ(p.stats().buffered_bytes, 100u);
    const read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.position(40), r.buffer.end());
    const contend::pipe_stats s = p.stats();
    EXPECT_EQ(s.bytes_consumed, 40u);
    EXPECT_EQ(s.buffered_bytes, 60u);
    EXPECT_EQ(s.writer_pauses, 0u);
    EXPECT_GE(s.segments_allocated, 1u);
}

// The lock is for the slow paths: a flush, read and advance that need no wait take none;
// a read left pending on an empty pipe takes it (and its completion by a flush too).
TEST(PipeStats, TheLockIsTakenOnlyOnSlowPaths) {
    byte_pipe p;
    for (int i = 0; i < 100; ++i) {
        commit(p.writer(), 10);
        p.writer().flush();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    }
    EXPECT_EQ(p.stats().lock_acquisitions, 0u);
    std::atomic<bool> called{false};
    p.reader().read_async([&](read_result) { called = true; });
    EXPECT_FALSE(called.load());
    EXPECT_GE(p.stats().lock_acquisitions, 1u);
    const auto before_flush = p.stats().lock_acquisitions;
    commit(p.writer(), 10);
    p.writer().flush();
    EXPECT_TRUE(called.load());
    const contend::pipe_stats s = p.stats();
    EXPECT_GT(s.lock_acquisitions, before_flush);
    EXPECT_EQ(s.lock_contentions, 0u);
}

TEST(PipeStats, APausedFlushIsCountedOnce) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), 2 * pause_bytes);
    probe.start(p.writer());
    EXPECT_FALSE(probe.done.load());
    EXPECT_EQ(p.stats().writer_pauses, 1u);
    const read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.end());
    EXPECT_TRUE(probe.done.load());
    EXPECT_EQ(p.stats().writer_pauses, 1u);
}
