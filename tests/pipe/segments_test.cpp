// contend::pipe: sequences over several segments, positions, the segment pool and reset
// (after System.IO.Pipelines' PipeResetTests).
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

// --- Segment growth --------------------------------------------------------------------

namespace {
// Writes `chunks` chunks of 4 KiB with get_span(4096), flushing each, reading after every
// `read_every` chunks (0: never); returns the size of every span that started a new segment.
std::vector<std::size_t> new_segment_spans(byte_pipe& p, int chunks, int read_every) {
    std::vector<std::size_t> sizes;
    std::size_t room = 0;  // what the current segment has left
    for (int i = 0; i < chunks; ++i) {
        const auto span = p.writer().get_span(4096);
        if (span.size() != room) sizes.push_back(span.size());
        room = span.size() - 4096;
        p.writer().advance(4096);
        EXPECT_FALSE(p.writer().flush().is_completed);
        if (read_every > 0 && (i + 1) % read_every == 0) {
            const read_result r = p.reader().read();
            p.reader().advance_to(r.buffer.end());
        }
    }
    return sizes;
}
}  // namespace

// Doubling up to four times the minimum, and never past a quarter of the pause threshold.
TEST(PipeSegmentGrowth, AWriterAheadOfItsReaderGetsSegmentsDoublingUpToItsCap) {
    struct grows {
        std::size_t pause;
        int chunks;  // without a read, under the pause threshold
        std::vector<std::size_t> first;
        std::size_t cap;
    };
    for (const grows& g : {grows{std::size_t{1} << 20, 200, {4096, 8192, 16384}, 16384},
                           grows{65536, 15, {4096, 8192, 16384}, 16384}, grows{32768, 7, {4096, 8192}, 8192}}) {
        pipe_options o;
        o.pause_writer_threshold = g.pause;
        o.resume_writer_threshold = g.pause / 2;
        byte_pipe p(o);
        const std::vector<std::size_t> sizes = new_segment_spans(p, g.chunks, 0);
        ASSERT_GT(sizes.size(), g.first.size()) << "pause " << g.pause;
        for (std::size_t i = 0; i < sizes.size(); ++i)
            EXPECT_EQ(sizes[i], i < g.first.size() ? g.first[i] : g.cap) << "pause " << g.pause << ", segment " << i;
        const read_result r = p.reader().read();
        EXPECT_EQ(r.buffer.size(), static_cast<std::size_t>(g.chunks) * 4096) << "pause " << g.pause;
        p.reader().advance_to(r.buffer.end());
    }
}

TEST(PipeSegmentGrowth, AWriterWhoseReaderKeepsUpKeepsTheMinimumSegmentSize) {
    byte_pipe p;
    for (const std::size_t size : new_segment_spans(p, 300, 1)) EXPECT_EQ(size, 4096u);
    EXPECT_LE(p.stats().segments_allocated, 2u) << "a reader that keeps up hands every segment back";
}

TEST(PipeSegmentGrowth, NoGrowthWithoutAPauseThresholdOrWhenTheMinimumIsAlreadyAQuarterOfIt) {
    byte_pipe never(never_pausing());
    for (const std::size_t size : new_segment_spans(never, 64, 0)) EXPECT_EQ(size, 4096u) << "never pausing";
    pipe_options o;
    o.minimum_segment_size = 16384;  // a quarter of the default 64 KiB pause threshold
    byte_pipe large(o);
    for (const std::size_t size : new_segment_spans(large, 12, 0)) EXPECT_EQ(size, 16384u) << "16 KiB minimum";
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

// The writer reuses first the segment the reader gave back last: on one CPU its lines are
// the ones still in cache. (The pool itself is a FIFO between the two sides, which handed
// out the oldest, a0.)
TEST(PipeSegmentPool, TheWriterReusesTheSegmentTheReaderGaveBackLastFirst) {
    byte_pipe p(never_pausing());
    fill_segments(p.writer(), 3);
    p.writer().flush();
    const read_result r = p.reader().read();
    std::vector<const std::byte*> read_from;
    for (const std::span<const std::byte> s : r.buffer.segments()) read_from.push_back(s.data());
    ASSERT_EQ(read_from.size(), 3u);
    p.reader().advance_to(r.buffer.end());
    ASSERT_GE(p.stats().pooled_segments, 2u) << "the first two segments, consumed, go back";
    const std::byte* next = p.writer().get_span(4096).data();
    EXPECT_NE(next, read_from[0]) << "the oldest segment given back was reused first";
    EXPECT_TRUE(next == read_from[1] || next == read_from[2]) << "not a segment the reader gave back";
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
