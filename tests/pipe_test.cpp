// contend::pipe against its header: backpressure at the pause and resume thresholds, what
// examined means, cancellation, multi-segment sequences, the segment pool, reset, long
// streams between threads with a checksum, every misuse the header names, callbacks and
// coroutines inline and on a thread_pool, and the counters.
//
// The behaviours are those of System.IO.Pipelines' tests (BackpressureTests, PipeLengthTests,
// FlushAsyncCancellationTests, PipeResetTests, ReadAsyncCompletionTests; see
// docs/references.md, dotnet-runtime-pipelines-contention), in this pipe's terms: where the
// header says otherwise (examined may not move backwards here), the header wins.
//
// Every wait is bounded (watchdog or `eventually`); no test asserts how long anything takes.
// A flush left pending is checked with flush_async, whose callback runs, without a
// scheduler, on the thread that lets the flush complete: after that call returns, the
// callback has run, so single-threaded tests can assert it at once.
//
// Declaration order matters: probes first, then a thread_pool, then the pipe, then threads
// (side_thread), so that each goes before what it may still touch.
#include "contend/pipe.hpp"

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "contend/thread_pool.hpp"
#include "test_support.hpp"

using namespace contend_test;
using contend::byte_sequence;
using contend::flush_result;
using contend::pipe_error;
using contend::pipe_lock_kind;
using contend::pipe_options;
using contend::pipe_reader;
using contend::pipe_writer;
using contend::read_result;
using contend::sequence_position;
using contend::thread_pool;
using byte_pipe = contend::pipe;  // `pipe` alone would meet POSIX pipe(2)

namespace {

constexpr std::size_t pause_bytes = 65536;  // pipe_options' defaults
constexpr std::size_t resume_bytes = 32768;

// Commits n bytes of `fill` without flushing.
void commit(pipe_writer& w, std::size_t n, unsigned char fill = 0xab) {
    const auto span = w.get_span(n);
    ASSERT_GE(span.size(), n);
    std::memset(span.data(), fill, n);
    w.advance(n);
}

flush_result write_text(pipe_writer& w, std::string_view s) {
    return w.write(std::as_bytes(std::span(s.data(), s.size())));
}

std::string text_of(const byte_sequence& b) {
    std::string s(b.size(), '\0');
    b.copy_to(std::as_writable_bytes(std::span(s.data(), s.size())));
    return s;
}

pipe_options never_pausing() {
    pipe_options o;
    o.pause_writer_threshold = 0;
    o.resume_writer_threshold = 0;
    return o;
}

contend::thread_pool_options fixed_pool(std::size_t n) {
    contend::thread_pool_options o;
    o.min_threads = n;
    o.max_threads = n;
    o.hill_climbing = false;
    return o;
}

// Records a flush_async completion: its result, and the thread and pool it ran on.
struct flush_probe {
    std::atomic<bool> done{false};
    flush_result result{};
    std::thread::id thread{};
    thread_pool* pool = nullptr;
    void start(pipe_writer& w) {
        w.flush_async([this](flush_result r) {
            result = r;
            thread = std::this_thread::get_id();
            pool = thread_pool::current();
            done.store(true);
        });
    }
};

struct read_probe {
    std::atomic<bool> done{false};
    read_result result{};
    std::thread::id thread{};
    thread_pool* pool = nullptr;
    void start(pipe_reader& r) {
        r.read_async([this](read_result rr) {
            result = rr;
            thread = std::this_thread::get_id();
            pool = thread_pool::current();
            done.store(true);
        });
    }
};

// A thread that, if still running when the test leaves (a failed ASSERT), is first
// unblocked (completing the pipe side it waits on) and then joined, so a failure reports
// instead of terminating.
class side_thread {
public:
    side_thread(std::function<void()> body, std::function<void()> unblock)
        : unblock_(std::move(unblock)), thread_(std::move(body)) {}
    ~side_thread() {
        if (thread_.joinable()) {
            unblock_();
            thread_.join();
        }
    }
    void join() { thread_.join(); }

private:
    std::function<void()> unblock_;
    std::thread thread_;
};

struct fnv1a {
    std::uint64_t value = 14695981039346656037ull;
    void add(std::span<const std::byte> bytes) {
        for (const std::byte b : bytes) value = (value ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
    }
};

struct splitmix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    void fill(std::span<std::byte> out) {
        std::size_t i = 0;
        for (; i + 8 <= out.size(); i += 8) {
            const std::uint64_t v = next();
            std::memcpy(out.data() + i, &v, 8);
        }
        if (i < out.size()) {
            const std::uint64_t v = next();
            std::memcpy(out.data() + i, &v, out.size() - i);
        }
    }
    // Sizes spread over every power of two up to `max` (log-uniform), so both one-byte
    // flushes and flushes past the pause threshold happen.
    std::size_t chunk(std::size_t max) {
        const std::size_t bits = static_cast<std::size_t>(next() % 17);
        return std::min<std::size_t>(max, 1 + next() % (std::size_t{1} << bits));
    }
};

}  // namespace

// --- Backpressure ----------------------------------------------------------------------

TEST(PipeBackpressure, AFlushBelowThePauseThresholdCompletesAtOnce) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), resume_bytes);
    probe.start(p.writer());
    ASSERT_TRUE(probe.done.load()) << "a 32 KiB flush into an empty pipe waited";
    EXPECT_FALSE(probe.result.is_completed);
    EXPECT_FALSE(probe.result.is_canceled);
    EXPECT_EQ(p.stats().writer_pauses, 0u);
}

TEST(PipeBackpressure, AFlushThatBringsUnexaminedBytesToThePauseThresholdWaits) {
    flush_probe below, at;
    byte_pipe p;
    commit(p.writer(), pause_bytes - 1);
    below.start(p.writer());
    EXPECT_TRUE(below.done.load()) << "64 KiB - 1 unexamined bytes paused the writer";
    commit(p.writer(), 1);
    at.start(p.writer());
    EXPECT_FALSE(at.done.load()) << "64 KiB unexamined bytes did not pause the writer";
    EXPECT_EQ(p.stats().writer_pauses, 1u);
    const read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.size(), pause_bytes);
    p.reader().advance_to(r.buffer.end());
    EXPECT_TRUE(at.done.load());
}

TEST(PipeBackpressure, ConsumingToJustBelowTheResumeThresholdResumesTheWriter) {
    flush_probe first, second;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    first.start(p.writer());
    ASSERT_FALSE(first.done.load());

    // 32 KiB left unexamined is not below the resume threshold.
    read_result r = p.reader().read();
    const sequence_position half = r.buffer.position(pause_bytes - resume_bytes);
    p.reader().advance_to(half, half);
    EXPECT_FALSE(first.done.load()) << "resumed with exactly resume_writer_threshold bytes unexamined";

    r = p.reader().read();
    ASSERT_EQ(r.buffer.size(), resume_bytes);
    const sequence_position one_more = r.buffer.position(1);
    p.reader().advance_to(one_more, one_more);
    ASSERT_TRUE(first.done.load()) << "32 KiB - 1 unexamined bytes did not resume the writer";
    EXPECT_FALSE(first.result.is_completed);
    EXPECT_FALSE(first.result.is_canceled);

    // A resumed pipe pauses again on the next flush that reaches the threshold.
    commit(p.writer(), pause_bytes);
    second.start(p.writer());
    EXPECT_FALSE(second.done.load());
    r = p.reader().read();
    p.reader().advance_to(r.buffer.end());
    EXPECT_TRUE(second.done.load());
}

TEST(PipeBackpressure, ExaminingWithoutConsumingResumesTheWriter) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    probe.start(p.writer());
    ASSERT_FALSE(probe.done.load());
    const read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.start(), r.buffer.position(pause_bytes - resume_bytes + 1));
    ASSERT_TRUE(probe.done.load()) << "examined (not consumed) bytes did not count for backpressure";
    EXPECT_FALSE(probe.result.is_completed);
    EXPECT_EQ(p.stats().buffered_bytes, pause_bytes) << "nothing was consumed";
}

TEST(PipeBackpressure, AdvancingWithoutExaminingKeepsTheWriterPaused) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    probe.start(p.writer());
    read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.start());
    EXPECT_FALSE(probe.done.load());
    r = p.reader().read();
    p.reader().advance_to(r.buffer.start(), r.buffer.position(2));
    EXPECT_FALSE(probe.done.load());
    r = p.reader().read();
    p.reader().advance_to(r.buffer.end());
    EXPECT_TRUE(probe.done.load());
}

TEST(PipeBackpressure, APausedFlushCompletesWithIsCompletedWhenTheReaderCompletes) {
    flush_probe paused, after;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    paused.start(p.writer());
    ASSERT_FALSE(paused.done.load());
    p.reader().complete();
    ASSERT_TRUE(paused.done.load());
    EXPECT_TRUE(paused.result.is_completed);
    // Later flushes say so at once, whatever their size.
    commit(p.writer(), pause_bytes);
    after.start(p.writer());
    ASSERT_TRUE(after.done.load());
    EXPECT_TRUE(after.result.is_completed);
}

TEST(PipeBackpressure, APausedFlushCompletesWithIsCompletedWhenTheReaderCompletesWithoutAdvancing) {
    flush_probe paused;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    paused.start(p.writer());
    const read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.size(), pause_bytes);
    p.reader().complete();
    ASSERT_TRUE(paused.done.load());
    EXPECT_TRUE(paused.result.is_completed);
}

TEST(PipeBackpressure, AfterTheReaderCompletesWithAnErrorFlushReturnsIsCompleted) {
    watchdog dog(30s);
    byte_pipe p;
    p.reader().complete(std::make_exception_ptr(std::runtime_error("reader failed")));
    commit(p.writer(), pause_bytes);
    // The header: flush "blocks while the pipe is paused"; with no reader there is nothing to
    // wait for, and it throws nothing but pipe_error for a pending flush.
    try {
        const flush_result r = p.writer().flush();
        EXPECT_TRUE(r.is_completed);
        EXPECT_FALSE(r.is_canceled);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "flush after reader.complete(error) threw: " << e.what();
    }
}

TEST(PipeBackpressure, TheWritersErrorIsRethrownByReadOnceItsDataIsConsumed) {
    watchdog dog(30s);
    byte_pipe p;
    write_text(p.writer(), "abc");
    p.writer().complete(std::make_exception_ptr(std::runtime_error("writer failed")));
    read_result r;
    ASSERT_NO_THROW(r = p.reader().read()) << "the error came before the data";
    EXPECT_EQ(text_of(r.buffer), "abc");
    p.reader().advance_to(r.buffer.end());
    try {
        (void)p.reader().read();
        ADD_FAILURE() << "read() after the data did not rethrow the writer's error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "writer failed");
    }
}

TEST(PipeBackpressure, TheWritersErrorIsRethrownAtOnceWhenNoDataIsLeft) {
    watchdog dog(30s);
    byte_pipe p;
    p.writer().complete(std::make_exception_ptr(std::out_of_range("nothing sent")));
    EXPECT_THROW((void)p.reader().read(), std::out_of_range);
}

TEST(PipeBackpressure, ABlockedFlushInAWriterThreadReturnsOnceTheReaderExamines) {
    watchdog dog(60s);
    std::atomic<bool> returned{false};
    flush_result result;
    byte_pipe p;
    side_thread writer(
        [&] {
            std::vector<std::byte> block(pause_bytes, std::byte{7});
            result = p.writer().write(block);
            returned.store(true);
        },
        [&] { p.reader().complete(); });
    // writer_pauses counts the flush once it waits: then it must still be blocked.
    ASSERT_TRUE(eventually([&] { return p.stats().writer_pauses == 1; }, 30s));
    EXPECT_FALSE(returned.load()) << "a paused flush() returned before the reader examined anything";
    const read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.size(), pause_bytes);
    p.reader().advance_to(r.buffer.end());
    ASSERT_TRUE(eventually([&] { return returned.load(); }, 30s));
    writer.join();
    EXPECT_FALSE(result.is_completed);
    EXPECT_FALSE(result.is_canceled);
}

TEST(PipeBackpressure, CanBufferPastThePauseThresholdButEachFlushPauses) {
    constexpr int rounds = 5;
    flush_probe probes[rounds];
    byte_pipe p;
    for (int i = 0; i < rounds; ++i) {
        commit(p.writer(), pause_bytes);
        probes[i].start(p.writer());
        EXPECT_FALSE(probes[i].done.load()) << "flush " << i << " did not pause";
        // Examine everything, consume nothing: the buffer keeps growing past the threshold,
        // but the unexamined part is zero again, which releases the writer.
        const read_result r = p.reader().read();
        EXPECT_EQ(r.buffer.size(), (i + 1) * pause_bytes);
        p.reader().advance_to(r.buffer.start(), r.buffer.end());
        ASSERT_TRUE(probes[i].done.load()) << "flush " << i << " was not released";
    }
    p.writer().complete();
    const read_result r = p.reader().read();
    EXPECT_TRUE(r.is_completed);
    EXPECT_EQ(r.buffer.size(), rounds * pause_bytes);
    p.reader().advance_to(r.buffer.end());
    EXPECT_EQ(p.stats().writer_pauses, static_cast<std::uint64_t>(rounds));
}

TEST(PipeBackpressure, ReadAtLeastUnblocksAPausedWriter) {
    watchdog dog(60s);
    flush_probe probes[3];
    std::atomic<bool> got{false};
    read_result result;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    probes[0].start(p.writer());
    ASSERT_FALSE(probes[0].done.load());
    side_thread reader(
        [&] {
            result = p.reader().read_at_least(3 * pause_bytes);
            got.store(true);
        },
        [&] { p.writer().complete(); });
    ASSERT_TRUE(eventually([&] { return probes[0].done.load(); }, 30s))
        << "a reader waiting for 192 KiB left the writer paused at 64 KiB";
    EXPECT_FALSE(probes[0].result.is_completed);
    for (int i = 1; i < 3; ++i) {
        commit(p.writer(), pause_bytes);
        probes[i].start(p.writer());
        ASSERT_TRUE(eventually([&] { return probes[i].done.load(); }, 30s)) << "flush " << i;
    }
    ASSERT_TRUE(eventually([&] { return got.load(); }, 30s));
    reader.join();
    EXPECT_EQ(result.buffer.size(), 3 * pause_bytes);
    p.reader().advance_to(result.buffer.end());
}

// The bound the thresholds promise: once a flush has returned, unexamined bytes are below
// the pause threshold, so they never exceed it by more than the next flush. Checked from
// both sides while the reader mixes consuming nothing, half and all (always examining all).
TEST(PipeBackpressure, FlushedButUnexaminedBytesNeverExceedThePauseThresholdPlusOneFlush) {
    watchdog dog(180s);
    const std::uint64_t total = static_cast<std::uint64_t>(scaled(128l << 20));  // 16 MiB under sanitizers
    constexpr std::size_t max_chunk = 24 * 1024;
    // The reader publishes how far it examined *before* advance_to: the published figure is
    // never behind the pipe's, so the writer's check below can miss but never falsely fail.
    std::atomic<std::uint64_t> examined_published{0};
    std::uint64_t writer_worst = 0, writer_over = 0;
    byte_pipe p;
    side_thread writer(
        [&] {
            splitmix64 rng{7};
            std::uint64_t flushed = 0;
            while (flushed < total) {
                const std::size_t n =
                    static_cast<std::size_t>(std::min<std::uint64_t>(rng.chunk(max_chunk), total - flushed));
                commit(p.writer(), n);
                if (p.writer().flush().is_completed) break;
                flushed += n;
                const std::uint64_t lag = flushed - examined_published.load();
                writer_worst = std::max(writer_worst, lag);
                if (lag >= pause_bytes) ++writer_over;
            }
            p.writer().complete();
        },
        [&] { p.reader().complete(); });
    std::uint64_t examined = 0, consumed = 0, reader_worst = 0, reader_over = 0, misplaced = 0, received_end = 0;
    for (int i = 0;; ++i) {
        const read_result r = p.reader().read();
        if (r.buffer.start().offset() != consumed) ++misplaced;
        const std::uint64_t end = r.buffer.end().offset();
        const std::uint64_t unexamined = end - examined;
        reader_worst = std::max(reader_worst, unexamined);
        if (unexamined >= pause_bytes + max_chunk) ++reader_over;
        examined_published.store(end);
        examined = end;
        received_end = end;
        const std::size_t keep = i % 3 == 0 ? r.buffer.size() : i % 3 == 1 ? r.buffer.size() / 2 : 0;
        const sequence_position consume_to = r.buffer.position(r.buffer.size() - keep);
        consumed = consume_to.offset();
        p.reader().advance_to(consume_to, r.buffer.end());
        if (r.is_completed) break;
    }
    writer.join();
    EXPECT_EQ(received_end, total);
    EXPECT_EQ(misplaced, 0u) << "a read did not start where the reader had consumed to";
    EXPECT_EQ(writer_over, 0u) << "after a flush returned, " << writer_worst
                               << " bytes were unexamined (pause threshold " << pause_bytes << ")";
    EXPECT_EQ(reader_over, 0u) << "a read saw " << reader_worst << " unexamined bytes (pause threshold " << pause_bytes
                               << " + a flush of at most " << max_chunk << ")";
}

// --- What examined means ---------------------------------------------------------------

TEST(PipeExamined, TheNextReadWaitsForBytesBeyondWhatWasExamined) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.start(), r.buffer.end());
    EXPECT_FALSE(p.reader().try_read(r)) << "read would return with nothing new beyond examined";
    EXPECT_EQ(p.stats().buffered_bytes, 10u) << "examined bytes are still buffered until consumed";

    write_text(p.writer(), "abcde");
    ASSERT_TRUE(p.reader().try_read(r));
    EXPECT_EQ(text_of(r.buffer), "0123456789abcde");
    p.reader().advance_to(r.buffer.position(5), r.buffer.end());
    EXPECT_EQ(p.stats().buffered_bytes, 10u);
    EXPECT_FALSE(p.reader().try_read(r));

    write_text(p.writer(), "!");
    ASSERT_TRUE(p.reader().try_read(r));
    EXPECT_EQ(text_of(r.buffer), "56789abcde!");
    p.reader().advance_to(r.buffer.end());
    EXPECT_EQ(p.stats().buffered_bytes, 0u);
}

TEST(PipeExamined, AdvancingWithoutExaminingLetsTheNextReadReturnAtOnce) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.start());
    ASSERT_TRUE(p.reader().try_read(r)) << "examined defaults to consumed: nothing was examined";
    EXPECT_EQ(text_of(r.buffer), "0123456789");
    p.reader().advance_to(r.buffer.position(4));
    ASSERT_TRUE(p.reader().try_read(r));
    EXPECT_EQ(text_of(r.buffer), "456789");
    EXPECT_EQ(p.stats().buffered_bytes, 6u);
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeExamined, TryReadOnAnEmptyPipeReturnsFalseAndLeavesNoReadOutstanding) {
    byte_pipe p;
    read_result r;
    EXPECT_FALSE(p.reader().try_read(r));
    write_text(p.writer(), "x");
    ASSERT_NO_THROW(r = p.reader().read());
    EXPECT_EQ(text_of(r.buffer), "x");
    p.reader().advance_to(r.buffer.end());
}

// --- Cancellation ----------------------------------------------------------------------

TEST(PipeCancel, CancelPendingReadBeforeReadMakesTheNextReadCanceled) {
    watchdog dog(30s);
    byte_pipe p;
    p.reader().cancel_pending_read();
    read_result r = p.reader().read();
    EXPECT_TRUE(r.is_canceled);
    EXPECT_FALSE(r.is_completed);
    p.reader().advance_to(r.buffer.start());
    // Only that one read: the next waits for data as usual.
    EXPECT_FALSE(p.reader().try_read(r));
    write_text(p.writer(), "z");
    r = p.reader().read();
    EXPECT_FALSE(r.is_canceled);
    EXPECT_EQ(text_of(r.buffer), "z");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeCancel, CancelPendingReadEndsAReadBlockedInAnotherThread) {
    watchdog dog(60s);
    std::atomic<bool> returned{false};
    read_result result;
    byte_pipe p;
    side_thread reader(
        [&] {
            result = p.reader().read();
            returned.store(true);
        },
        [&] { p.writer().complete(); });
    p.reader().cancel_pending_read();  // ends the blocked read, or the next one if it came first
    ASSERT_TRUE(eventually([&] { return returned.load(); }, 30s));
    reader.join();
    EXPECT_TRUE(result.is_canceled);
    p.reader().advance_to(result.buffer.start());
}

TEST(PipeCancel, CancelPendingReadEndsAPendingReadAsync) {
    read_probe probe;
    byte_pipe p;
    probe.start(p.reader());
    EXPECT_FALSE(probe.done.load());
    p.reader().cancel_pending_read();
    ASSERT_TRUE(eventually([&] { return probe.done.load(); }, 10s));
    EXPECT_TRUE(probe.result.is_canceled);
    p.reader().advance_to(probe.result.buffer.start());
    write_text(p.writer(), "after");
    const read_result r = p.reader().read();
    EXPECT_FALSE(r.is_canceled);
    EXPECT_EQ(text_of(r.buffer), "after");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeCancel, CancelPendingFlushBeforeFlushMakesTheNextFlushCanceled) {
    watchdog dog(30s);
    byte_pipe p;
    commit(p.writer(), 1, 'q');
    p.writer().cancel_pending_flush();
    const flush_result canceled = p.writer().flush();
    EXPECT_TRUE(canceled.is_canceled);
    EXPECT_FALSE(canceled.is_completed);
    // The bytes were flushed all the same, and the cancel is used up.
    read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "q");
    p.reader().advance_to(r.buffer.end());
    EXPECT_FALSE(write_text(p.writer(), "w").is_canceled);
}

TEST(PipeCancel, CancelPendingFlushEndsAPausedFlushAndKeepsItsBytes) {
    flush_probe paused;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    paused.start(p.writer());
    ASSERT_FALSE(paused.done.load());
    p.writer().cancel_pending_flush();
    ASSERT_TRUE(paused.done.load()) << "cancel_pending_flush did not end the paused flush";
    EXPECT_TRUE(paused.result.is_canceled);
    EXPECT_FALSE(paused.result.is_completed);
    const read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.size(), pause_bytes);
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeCancel, CancelPendingFlushEndsAFlushBlockedInAnotherThread) {
    watchdog dog(60s);
    std::atomic<bool> returned{false};
    flush_result result;
    byte_pipe p;
    side_thread writer(
        [&] {
            commit(p.writer(), pause_bytes);
            result = p.writer().flush();
            returned.store(true);
        },
        [&] { p.reader().complete(); });
    ASSERT_TRUE(eventually([&] { return p.stats().writer_pauses == 1; }, 30s));
    p.writer().cancel_pending_flush();
    ASSERT_TRUE(eventually([&] { return returned.load(); }, 30s));
    writer.join();
    EXPECT_TRUE(result.is_canceled);
}

// --- Multi-segment sequences -----------------------------------------------------------

namespace {
// Writes `spans` spans of at least minimum_segment_size, each filled to its full size with
// the byte stream 0, 1, 2... (mod 251), so each needs a new segment; returns the bytes.
std::vector<std::uint8_t> fill_segments(pipe_writer& w, int spans) {
    std::vector<std::uint8_t> all;
    for (int s = 0; s < spans; ++s) {
        const auto span = w.get_span(4096);
        for (auto& b : span) {
            b = static_cast<std::byte>(all.size() % 251);
            all.push_back(static_cast<std::uint8_t>(all.size() % 251));
        }
        w.advance(span.size());
    }
    return all;
}

std::vector<std::uint8_t> vector_of(const byte_sequence& b) {
    std::vector<std::uint8_t> v(b.size());
    EXPECT_EQ(b.copy_to(std::as_writable_bytes(std::span(v))), b.size());
    return v;
}
}  // namespace

TEST(PipeSegments, BytesSpanningSeveralSegmentsReadBackInOrder) {
    byte_pipe p;
    const std::vector<std::uint8_t> sent = fill_segments(p.writer(), 3);
    ASSERT_EQ(p.writer().unflushed_bytes(), sent.size());
    ASSERT_FALSE(p.writer().flush().is_completed);
    EXPECT_EQ(p.writer().unflushed_bytes(), 0u);
    const read_result r = p.reader().read();
    ASSERT_EQ(r.buffer.size(), sent.size());
    std::vector<std::uint8_t> joined;
    int segments = 0;
    for (const std::span<const std::byte> s : r.buffer.segments()) {
        EXPECT_FALSE(s.empty()) << "segments() yielded an empty span";
        for (const std::byte b : s) joined.push_back(static_cast<std::uint8_t>(b));
        ++segments;
    }
    EXPECT_GE(segments, 3) << "three full spans of 4 KiB or more fit in fewer segments";
    EXPECT_EQ(joined, sent);
    EXPECT_EQ(vector_of(r.buffer), sent);
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeSegments, SlicesAndPositionsCrossSegmentBoundaries) {
    byte_pipe p;
    const std::vector<std::uint8_t> sent = fill_segments(p.writer(), 3);
    p.writer().flush();
    const read_result r = p.reader().read();
    const byte_sequence& b = r.buffer;
    const std::size_t first = (*b.segments().begin()).size();
    ASSERT_LT(first, b.size());

    const byte_sequence across = b.slice(first - 5, 10);
    EXPECT_EQ(across.size(), 10u);
    EXPECT_EQ(vector_of(across), std::vector<std::uint8_t>(sent.begin() + first - 5, sent.begin() + first + 5));
    int parts = 0;
    for (const auto s : across.segments()) {
        EXPECT_FALSE(s.empty());
        ++parts;
    }
    EXPECT_EQ(parts, 2) << "a slice over one boundary is two non-empty segments";
    EXPECT_EQ(across.start().offset(), b.start().offset() + first - 5);
    EXPECT_EQ(across.end().offset(), b.start().offset() + first + 5);

    for (const std::size_t k : {std::size_t{0}, first - 1, first, first + 1, b.size()})
        EXPECT_EQ(b.position(k).offset(), b.start().offset() + k) << "position(" << k << ")";
    EXPECT_EQ(b.position(b.size()), b.end());
    EXPECT_LT(b.position(first - 1), b.position(first));
    EXPECT_THROW((void)b.position(b.size() + 1), pipe_error);
    EXPECT_THROW((void)b.slice(b.size() - 1, 2), pipe_error);
    EXPECT_THROW((void)b.slice(b.size() + 1, 0), pipe_error);
    EXPECT_TRUE(b.slice(b.size(), 0).empty());
    EXPECT_EQ(b.slice(0, b.size()).size(), b.size());

    std::vector<std::uint8_t> few(7);
    EXPECT_EQ(b.slice(first - 3, 20).copy_to(std::as_writable_bytes(std::span(few))), 7u);
    EXPECT_EQ(few, std::vector<std::uint8_t>(sent.begin() + first - 3, sent.begin() + first + 4));

    // Advancing to a position inside a later segment consumes exactly up to it.
    p.reader().advance_to(b.position(first + 3));
    const read_result rest = p.reader().read();
    EXPECT_EQ(vector_of(rest.buffer), std::vector<std::uint8_t>(sent.begin() + first + 3, sent.end()));
    p.reader().advance_to(rest.buffer.end());
}

TEST(PipeSegments, PositionsCountBytesSinceThePipeStarted) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.start().offset(), 0u);
    p.reader().advance_to(r.buffer.position(4));
    write_text(p.writer(), "abcdef");
    r = p.reader().read();
    EXPECT_EQ(r.buffer.start().offset(), 4u);
    EXPECT_EQ(r.buffer.end().offset(), 16u);
    EXPECT_EQ(text_of(r.buffer), "456789abcdef");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeSegments, AWriteLargerThanTheMinimumSegmentSizeArrivesWhole) {
    byte_pipe p(never_pausing());
    std::vector<std::uint8_t> sent(100'000);
    for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<std::uint8_t>(i * 31 + 7);
    EXPECT_FALSE(p.writer().write(std::as_bytes(std::span(sent))).is_completed);
    const read_result r = p.reader().read();
    EXPECT_EQ(vector_of(r.buffer), sent);
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeSegments, GetSpanGivesAtLeastTheHintAndSomeForZero) {
    byte_pipe p;
    EXPECT_GE(p.writer().get_span(0).size(), 1u);
    EXPECT_GE(p.writer().get_span(10'000).size(), 10'000u);
    EXPECT_GE(p.writer().get_span(1).size(), 1u);
}

// --- The segment pool ------------------------------------------------------------------

TEST(PipeSegmentPool, ASteadyStreamReusesConsumedSegmentsInsteadOfAllocating) {
    byte_pipe p(never_pausing());
    constexpr int cycles = 1000;
    for (int i = 0; i < cycles; ++i) {
        fill_segments(p.writer(), 1);
        p.writer().flush();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    }
    const contend::pipe_stats s = p.stats();
    EXPECT_LE(s.segments_allocated, 4u) << "each cycle should take a segment the reader gave back";
    EXPECT_GE(s.segments_reused, static_cast<std::uint64_t>(cycles - 4));
    EXPECT_EQ(s.buffered_bytes, 0u);
}

TEST(PipeSegmentPool, ThePoolHoldsAtMostMaxPooledSegments) {
    pipe_options o = never_pausing();
    o.max_pooled_segments = 4;
    byte_pipe p(o);
    for (int round = 0; round < 3; ++round) {
        const contend::pipe_stats before = p.stats();
        fill_segments(p.writer(), 16);
        p.writer().flush();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
        const contend::pipe_stats after = p.stats();
        EXPECT_LE(after.pooled_segments, 4u) << "round " << round;
        EXPECT_GE(after.pooled_segments, 1u) << "round " << round << ": 16 consumed segments, none pooled";
        EXPECT_LE(after.segments_reused - before.segments_reused, 4u) << "round " << round;
        if (round > 0) {
            EXPECT_GE(after.segments_reused - before.segments_reused, 1u) << "round " << round;
        }
    }
}

TEST(PipeSegmentPool, WithMaxPooledSegmentsZeroNothingIsReused) {
    pipe_options o = never_pausing();
    o.max_pooled_segments = 0;
    byte_pipe p(o);
    for (int i = 0; i < 50; ++i) {
        fill_segments(p.writer(), 2);
        p.writer().flush();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    }
    EXPECT_EQ(p.stats().segments_reused, 0u);
    EXPECT_EQ(p.stats().pooled_segments, 0u);
    EXPECT_GE(p.stats().segments_allocated, 100u);
}

// --- Reset -----------------------------------------------------------------------------

TEST(PipeReset, ResetThrowsUntilBothSidesHaveCompleted) {
    byte_pipe p;
    EXPECT_THROW(p.reset(), pipe_error);
    p.writer().complete();
    EXPECT_THROW(p.reset(), pipe_error) << "the reader has not completed";
    p.reader().complete();
    EXPECT_NO_THROW(p.reset());

    byte_pipe q;
    q.reader().complete();
    EXPECT_THROW(q.reset(), pipe_error) << "the writer has not completed";
    q.writer().complete();
    EXPECT_NO_THROW(q.reset());
}

TEST(PipeReset, AResetPipeCarriesBytesAgainAndKeepsItsPooledSegments) {
    byte_pipe p;
    for (int i = 0; i < 3; ++i) {
        fill_segments(p.writer(), 4);
        p.writer().flush();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    }
    write_text(p.writer(), "before");
    read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "before");
    p.reader().advance_to(r.buffer.end());
    p.reader().complete();
    p.writer().complete();
    const std::size_t pooled = p.stats().pooled_segments;
    ASSERT_NO_THROW(p.reset());
    EXPECT_GE(p.stats().pooled_segments, pooled);

    EXPECT_FALSE(p.reader().try_read(r)) << "a reset pipe is empty and not completed";
    write_text(p.writer(), "after");
    r = p.reader().read();
    EXPECT_FALSE(r.is_completed);
    EXPECT_EQ(text_of(r.buffer), "after");
    p.reader().advance_to(r.buffer.end());
    p.writer().complete();
    r = p.reader().read();
    EXPECT_TRUE(r.is_completed);
    p.reader().advance_to(r.buffer.end());
}

// --- Misuse: pipe_error, and the pipe as it was ----------------------------------------

TEST(PipeMisuse, AdvancingPastTheSpanThrowsAndCommitsNothing) {
    byte_pipe p;
    const auto span = p.writer().get_span(10);
    std::memcpy(span.data(), "abc", 3);
    EXPECT_THROW(p.writer().advance(span.size() + 1), pipe_error);
    EXPECT_EQ(p.writer().unflushed_bytes(), 0u);
    p.writer().advance(3);
    p.writer().flush();
    const read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "abc");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeMisuse, AdvanceToWithAPositionFromAnOlderReadThrows) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    read_result r = p.reader().read();
    const sequence_position stale = r.buffer.position(3);
    p.reader().advance_to(r.buffer.start());
    write_text(p.writer(), "abc");
    r = p.reader().read();
    EXPECT_THROW(p.reader().advance_to(stale), pipe_error) << "a position of the previous read's buffer";
    // The read is still outstanding and the same buffer can be advanced past.
    EXPECT_EQ(text_of(r.buffer), "0123456789abc");
    p.reader().advance_to(r.buffer.position(3));
    r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "3456789abc");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeMisuse, AdvanceToWithAPositionFromAnotherPipeThrowsAndLeavesBothUsable) {
    byte_pipe p, other;
    // Both at their first read, with the same offsets: only the pipe tells the positions apart.
    write_text(p.writer(), "0123456789");
    write_text(other.writer(), "abcdefghij");
    const read_result mine = p.reader().read();
    const read_result theirs = other.reader().read();
    EXPECT_THROW(p.reader().advance_to(theirs.buffer.position(4)), pipe_error);
    p.reader().advance_to(mine.buffer.position(4));
    other.reader().advance_to(theirs.buffer.position(2));
    const read_result next = p.reader().read();
    EXPECT_EQ(text_of(next.buffer), "456789");
    p.reader().advance_to(next.buffer.end());
    const read_result next_other = other.reader().read();
    EXPECT_EQ(text_of(next_other.buffer), "cdefghij");
    other.reader().advance_to(next_other.buffer.end());
}

// Read ids once carried a 24-bit pipe serial: after 2^24 pipes a position from the first
// was taken for one of the newest pipe's, which then walked the other pipe's segments.
TEST(PipeMisuse, APositionFromAPipeMadeTwoToTheTwentyFourPipesAgoIsStillRefused) {
    watchdog dog(240s);
    byte_pipe first;
    write_text(first.writer(), "0123456789");
    const read_result theirs = first.reader().read();
    // 2^24 pipes cost about 3 s optimized; under a sanitizer, fewer (no wrap to find there).
    const long pipes = scaled(long{1} << 24) - 1;
    for (long i = 0; i < pipes; ++i) byte_pipe passing_by;
    byte_pipe p;
    write_text(p.writer(), "abcdefghij");
    const read_result mine = p.reader().read();
    EXPECT_THROW(p.reader().advance_to(theirs.buffer.position(4)), pipe_error);
    p.reader().advance_to(mine.buffer.position(4));
    first.reader().advance_to(theirs.buffer.position(2));
    const read_result next = p.reader().read();
    EXPECT_EQ(text_of(next.buffer), "efghij");
    p.reader().advance_to(next.buffer.end());
}

TEST(PipeMisuse, AnAbsurdSizeHintThrowsAndThePipeStillWorks) {
    byte_pipe p;
    EXPECT_THROW(p.writer().get_span(std::numeric_limits<std::size_t>::max()), std::length_error);
    EXPECT_THROW(p.writer().get_span(std::size_t{1} << 62), std::length_error);
    write_text(p.writer(), "still here");
    const read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "still here");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeMisuse, AdvanceToWithAPositionBeyondTheDataThrows) {
    byte_pipe p, other;
    write_text(p.writer(), "short");
    write_text(other.writer(), "a good deal longer than the other");
    const read_result far = other.reader().read();
    const read_result r = p.reader().read();
    // A position of another pipe (its offset lies past this pipe's data) is not from this
    // read's buffer, nor is a default one.
    EXPECT_THROW(p.reader().advance_to(far.buffer.end()), pipe_error);
    EXPECT_THROW(p.reader().advance_to(r.buffer.start(), far.buffer.end()), pipe_error);
    p.reader().advance_to(r.buffer.position(2));
    const read_result rest = p.reader().read();
    EXPECT_EQ(text_of(rest.buffer), "ort");
    p.reader().advance_to(rest.buffer.end());
    other.reader().advance_to(far.buffer.end());
}

TEST(PipeMisuse, ConsumedAfterExaminedThrows) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    const read_result r = p.reader().read();
    EXPECT_THROW(p.reader().advance_to(r.buffer.end(), r.buffer.start()), pipe_error);
    EXPECT_THROW(p.reader().advance_to(r.buffer.position(5), r.buffer.position(4)), pipe_error);
    p.reader().advance_to(r.buffer.position(5), r.buffer.position(5));
    const read_result rest = p.reader().read();
    EXPECT_EQ(text_of(rest.buffer), "56789");
    p.reader().advance_to(rest.buffer.end());
}

TEST(PipeMisuse, ExaminedMovingBackwardsThrows) {
    byte_pipe p;
    write_text(p.writer(), "0123456789");
    read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.start(), r.buffer.position(5));
    r = p.reader().read();  // returns at once: there are bytes beyond the examined 5
    EXPECT_THROW(p.reader().advance_to(r.buffer.start(), r.buffer.position(2)), pipe_error);
    p.reader().advance_to(r.buffer.start(), r.buffer.position(5));  // not moving is allowed
    r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "0123456789");
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeMisuse, ReadingAfterTheReaderCompletedThrows) {
    byte_pipe p;
    write_text(p.writer(), "data");
    p.reader().complete();
    EXPECT_THROW((void)p.reader().read(), pipe_error);
    EXPECT_TRUE(write_text(p.writer(), "more").is_completed) << "the writer still learns the reader is gone";
}

TEST(PipeMisuse, ASecondReadWhileOneIsOutstandingThrows) {
    byte_pipe p;
    write_text(p.writer(), "once");
    const read_result r = p.reader().read();
    EXPECT_THROW((void)p.reader().read(), pipe_error);
    EXPECT_EQ(text_of(r.buffer), "once");
    p.reader().advance_to(r.buffer.end());
    write_text(p.writer(), "twice");
    const read_result next = p.reader().read();
    EXPECT_EQ(text_of(next.buffer), "twice");
    p.reader().advance_to(next.buffer.end());
}

TEST(PipeMisuse, WritingAfterTheWriterCompletedThrows) {
    byte_pipe p;
    write_text(p.writer(), "last");
    p.writer().complete();
    p.writer().complete();  // idempotent
    EXPECT_THROW((void)p.writer().get_span(1), pipe_error);
    EXPECT_THROW((void)write_text(p.writer(), "x"), pipe_error);
    const read_result r = p.reader().read();
    EXPECT_EQ(text_of(r.buffer), "last");
    EXPECT_TRUE(r.is_completed);
    p.reader().advance_to(r.buffer.end());
}

TEST(PipeMisuse, ASecondFlushWhileOneIsPendingThrows) {
    flush_probe paused, second;
    byte_pipe p;
    commit(p.writer(), pause_bytes);
    paused.start(p.writer());
    ASSERT_FALSE(paused.done.load());
    EXPECT_THROW(second.start(p.writer()), pipe_error);
    EXPECT_THROW((void)p.writer().flush(), pipe_error);
    EXPECT_FALSE(second.done.load());
    const read_result r = p.reader().read();
    EXPECT_EQ(r.buffer.size(), pause_bytes);
    p.reader().advance_to(r.buffer.end());
    ASSERT_TRUE(paused.done.load());
    EXPECT_FALSE(paused.result.is_completed);
}

TEST(PipeMisuse, InvalidOptionsThrowInvalidArgument) {
    pipe_options resume_above_pause;
    resume_above_pause.pause_writer_threshold = 100;
    resume_above_pause.resume_writer_threshold = 101;
    EXPECT_THROW(byte_pipe{resume_above_pause}, std::invalid_argument);
    pipe_options no_segment;
    no_segment.minimum_segment_size = 0;
    EXPECT_THROW(byte_pipe{no_segment}, std::invalid_argument);
    pipe_options equal;
    equal.pause_writer_threshold = equal.resume_writer_threshold = 4096;
    EXPECT_NO_THROW(byte_pipe{equal});
    // The segment pool's slots are allocated up front: SIZE_MAX wrapped its size to 0 and
    // corrupted the heap; anything above the documented limit is refused.
    pipe_options huge_pool;
    huge_pool.max_pooled_segments = SIZE_MAX;
    EXPECT_THROW(byte_pipe{huge_pool}, std::invalid_argument);
    huge_pool.max_pooled_segments = pipe_options::max_pooled_segments_limit + 1;
    EXPECT_THROW(byte_pipe{huge_pool}, std::invalid_argument);
    huge_pool.max_pooled_segments = pipe_options::max_pooled_segments_limit;
    EXPECT_NO_THROW(byte_pipe{huge_pool});
    EXPECT_NO_THROW(byte_pipe{never_pausing()});
}

TEST(PipeMisuse, TheDefaultsAreSixtyFourAndThirtyTwoKibibytes) {
    const pipe_options o;
    EXPECT_EQ(o.pause_writer_threshold, pause_bytes);
    EXPECT_EQ(o.resume_writer_threshold, resume_bytes);
    EXPECT_EQ(o.minimum_segment_size, 4096u);
    EXPECT_EQ(o.lock, pipe_lock_kind::contend_mutex);
}

// --- Callbacks -------------------------------------------------------------------------

TEST(PipeAsync, FlushAsyncRunsItsCallbackInlineWhenItCanCompleteAtOnce) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), 100);
    probe.start(p.writer());
    ASSERT_TRUE(probe.done.load());
    EXPECT_EQ(probe.thread, std::this_thread::get_id());
    EXPECT_EQ(p.stats().bytes_written, 100u);
}

TEST(PipeAsync, WithoutASchedulerCallbacksRunOnTheThreadThatCompletesThem) {
    watchdog dog(60s);
    read_probe read;
    flush_probe flush;
    byte_pipe p;
    read.start(p.reader());
    EXPECT_FALSE(read.done.load());
    std::thread::id writer_id;
    std::thread writer([&] {
        writer_id = std::this_thread::get_id();
        write_text(p.writer(), "hello");
    });
    writer.join();
    ASSERT_TRUE(eventually([&] { return read.done.load(); }, 30s));
    EXPECT_EQ(read.thread, writer_id);
    EXPECT_EQ(read.pool, nullptr);
    EXPECT_EQ(text_of(read.result.buffer), "hello");
    p.reader().advance_to(read.result.buffer.end());

    commit(p.writer(), pause_bytes);
    flush.start(p.writer());
    ASSERT_FALSE(flush.done.load());
    std::thread::id reader_id;
    std::thread reader([&] {
        reader_id = std::this_thread::get_id();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    });
    reader.join();
    ASSERT_TRUE(eventually([&] { return flush.done.load(); }, 30s));
    EXPECT_EQ(flush.thread, reader_id);
}

TEST(PipeAsync, WithAPoolSchedulerCallbacksRunOnItsWorkers) {
    watchdog dog(60s);
    read_probe read;
    flush_probe flush;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    o.reader_scheduler = &pool;
    o.writer_scheduler = &pool;
    byte_pipe p(o);
    read.start(p.reader());
    write_text(p.writer(), "pooled");
    ASSERT_TRUE(eventually([&] { return read.done.load(); }, 30s));
    EXPECT_EQ(read.pool, &pool);
    EXPECT_EQ(text_of(read.result.buffer), "pooled");
    p.reader().advance_to(read.result.buffer.end());

    commit(p.writer(), pause_bytes);
    flush.start(p.writer());
    ASSERT_FALSE(flush.done.load());
    const read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.end());
    ASSERT_TRUE(eventually([&] { return flush.done.load(); }, 30s));
    EXPECT_EQ(flush.pool, &pool);
    EXPECT_FALSE(flush.result.is_completed);
    pool.wait_idle();
}

// --- Coroutines ------------------------------------------------------------------------

namespace {
struct fire_and_forget {
    struct promise_type {
        fire_and_forget get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::abort(); }
    };
};

struct coroutine_log {
    std::atomic<bool> done{false};
    std::uint64_t bytes = 0;
    fnv1a hash;
    std::vector<std::thread::id> resumed_on;  // the thread after each co_await
    int off_pool = 0;  // resumptions not on the expected pool
    std::string error;
};

fire_and_forget read_all(pipe_reader& reader, thread_pool* pool, coroutine_log& log) {
    for (;;) {
        const read_result r = co_await reader.read_awaitable();
        log.resumed_on.push_back(std::this_thread::get_id());
        if (pool && thread_pool::current() != pool) ++log.off_pool;
        for (const auto s : r.buffer.segments()) log.hash.add(s);
        log.bytes += r.buffer.size();
        reader.advance_to(r.buffer.end());
        if (r.is_completed || r.is_canceled) break;
    }
    log.done.store(true);
}

fire_and_forget write_all(pipe_writer& writer, std::uint64_t total, thread_pool* pool, coroutine_log& log) {
    splitmix64 rng{11};
    while (log.bytes < total) {
        // A whole pause threshold per flush: every flush pauses, so every co_await suspends.
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(pause_bytes, total - log.bytes));
        const auto span = writer.get_span(n).first(n);
        rng.fill(span);
        log.hash.add(span);
        writer.advance(n);
        log.bytes += n;
        const flush_result r = co_await writer.flush_awaitable();
        log.resumed_on.push_back(std::this_thread::get_id());
        if (pool && thread_pool::current() != pool) ++log.off_pool;
        if (r.is_completed || r.is_canceled) break;
    }
    writer.complete();
    log.done.store(true);
}

fire_and_forget read_expecting_error(pipe_reader& reader, coroutine_log& log) {
    try {
        const read_result r = co_await reader.read_awaitable();
        log.error = "no error; read " + std::to_string(r.buffer.size()) + " bytes";
        reader.advance_to(r.buffer.end());
    } catch (const std::runtime_error& e) {
        log.error = e.what();
    }
    log.done.store(true);
}
}  // namespace

class PipeCoroutines : public ::testing::TestWithParam<bool> {};  // true: with a thread_pool

TEST_P(PipeCoroutines, AReaderCoroutineResumesOnTheWriterThreadOrThePool) {
    watchdog dog(120s);
    const bool pooled = GetParam();
    const std::uint64_t total = 4u << 20;
    coroutine_log log;
    fnv1a sent;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    if (pooled) o.reader_scheduler = &pool;
    byte_pipe p(o);
    read_all(p.reader(), pooled ? &pool : nullptr, log);  // the pipe is empty: it suspends
    std::thread::id writer_id;
    std::thread writer([&] {
        writer_id = std::this_thread::get_id();
        splitmix64 rng{5};
        std::vector<std::byte> chunk;
        for (std::uint64_t done = 0; done < total;) {
            chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(rng.chunk(20'000), total - done)));
            rng.fill(chunk);
            sent.add(chunk);
            if (p.writer().write(chunk).is_completed) break;
            done += chunk.size();
        }
        p.writer().complete();
    });
    writer.join();
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 60s)) << "the reader coroutine did not finish";
    EXPECT_EQ(log.bytes, total);
    EXPECT_EQ(log.hash.value, sent.value);
    ASSERT_FALSE(log.resumed_on.empty());
    if (pooled) {
        EXPECT_EQ(log.off_pool, 0) << "of " << log.resumed_on.size() << " resumptions";
    } else {
        EXPECT_EQ(log.resumed_on.front(), writer_id) << "inline: the first read completes in the writer's flush";
    }
    pool.wait_idle();
}

TEST_P(PipeCoroutines, AWriterCoroutineResumesOnTheReaderThreadOrThePool) {
    watchdog dog(120s);
    const bool pooled = GetParam();
    const std::uint64_t total = 4u << 20;
    coroutine_log log;
    fnv1a received;
    std::uint64_t received_bytes = 0;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    if (pooled) o.writer_scheduler = &pool;
    byte_pipe p(o);
    write_all(p.writer(), total, pooled ? &pool : nullptr, log);  // 64 KiB: the first flush pauses
    std::thread::id reader_id;
    std::thread reader([&] {
        reader_id = std::this_thread::get_id();
        for (;;) {
            const read_result r = p.reader().read();
            for (const auto s : r.buffer.segments()) received.add(s);
            received_bytes += r.buffer.size();
            p.reader().advance_to(r.buffer.end());
            if (r.is_completed) break;
        }
    });
    reader.join();
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 60s)) << "the writer coroutine did not finish";
    EXPECT_EQ(received_bytes, total);
    EXPECT_EQ(received.value, log.hash.value);
    EXPECT_EQ(log.resumed_on.size(), total / pause_bytes);
    if (pooled) {
        EXPECT_EQ(log.off_pool, 0) << "of " << log.resumed_on.size() << " resumptions";
    } else {
        const auto elsewhere = std::count_if(log.resumed_on.begin(), log.resumed_on.end(),
                                             [&](std::thread::id t) { return t != reader_id; });
        EXPECT_EQ(elsewhere, 0) << "inline: each paused flush resumes in the reader's advance_to";
    }
    pool.wait_idle();
}

INSTANTIATE_TEST_SUITE_P(Schedulers, PipeCoroutines, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Pool" : "Inline"; });

TEST(PipeCoroutine, TheReadAwaitableRethrowsTheWritersError) {
    watchdog dog(30s);
    coroutine_log log;
    byte_pipe p;
    read_expecting_error(p.reader(), log);
    EXPECT_FALSE(log.done.load());
    p.writer().complete(std::make_exception_ptr(std::runtime_error("broken")));
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 10s));
    EXPECT_EQ(log.error, "broken");
}

namespace {
// The stack address of the code running the coroutine body at this point: a co_await that
// completes at once must not leave it deeper each time.
[[gnu::noinline]] std::uintptr_t stack_here() { return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)); }

struct stack_span {
    std::uintptr_t low = UINTPTR_MAX, high = 0;
    void note() {
        const std::uintptr_t at = stack_here();
        low = std::min(low, at);
        high = std::max(high, at);
    }
};

fire_and_forget flush_many(pipe_writer& writer, int times, stack_span& stack, coroutine_log& log) {
    const std::byte one{1};
    for (int i = 0; i < times; ++i) {
        const auto span = writer.get_span(1);
        span[0] = one;
        writer.advance(1);
        (void)co_await writer.flush_awaitable();
        stack.note();
    }
    log.done.store(true);
}

fire_and_forget read_many(pipe_reader& reader, int times, stack_span& stack, coroutine_log& log) {
    for (int i = 0; i < times; ++i) {
        const read_result r = co_await reader.read_awaitable();
        stack.note();
        reader.advance_to(r.buffer.position(1));  // one byte; the rest is ready for the next read
    }
    log.done.store(true);
}
}  // namespace

// An awaitable whose operation completes at once resumes the coroutine without nesting:
// 2,000 such co_awaits in a row must not move the stack (nested, they would take
// hundreds of kilobytes, and a long enough stream would overflow it).
TEST(PipeCoroutine, AwaitingFlushesAndReadsThatCompleteAtOnceDoesNotNestOnTheStack) {
    watchdog dog(60s);
    constexpr int times = 2'000;
    coroutine_log flushed, read;
    stack_span flush_stack, read_stack;
    byte_pipe p(never_pausing());
    flush_many(p.writer(), times, flush_stack, flushed);
    ASSERT_TRUE(flushed.done.load()) << "every flush could complete at once";
    EXPECT_LT(flush_stack.high - flush_stack.low, 64u * 1024) << "the stack grew with each flush_awaitable";
    read_many(p.reader(), times, read_stack, read);
    ASSERT_TRUE(read.done.load()) << "every read had data at once";
    EXPECT_LT(read_stack.high - read_stack.low, 64u * 1024) << "the stack grew with each read_awaitable";
}

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
