// Models of contend::pipe: a writer and a reader over a pipe of 2-byte segments and pause and
// resume thresholds of a few bytes, so that the lock-free fast paths (flushed_, consumed_,
// examined_ and the flags), the polls, the sleeps, the segment pool, pausing and resuming,
// completion and cancellation are all reached within a few dozen steps; and the mutations the
// checker must find. The pipes are static (constructed before the first fork): the same
// addresses, so the same waiter slot and parking-lot buckets, in every execution.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/pipe.hpp"
#include "model_support.hpp"

namespace {

using namespace contend;
using model_test::expect_found;
using model_test::expect_holds;

// The byte written at each stream offset: distinct, and never what a fresh or reused segment
// is likely to hold, so a read of a byte not yet written shows.
std::byte byte_at(std::uint64_t offset) { return static_cast<std::byte>(0x41 + offset); }

pipe_options small_pipe(std::size_t pause, std::size_t resume) {
    pipe_options o;
    o.pause_writer_threshold = pause;
    o.resume_writer_threshold = resume;
    o.minimum_segment_size = 2;
    o.max_pooled_segments = 4;
    o.lock = pipe_lock_kind::contend_mutex;  // std::mutex blocks outside the model
    return o;
}

// Writes the next `n` bytes of the stream with write() (get_span, copy, advance, flush).
flush_result write_next(contend::pipe& p, std::uint64_t& written, std::size_t n) {
    std::array<std::byte, 4> bytes{};
    for (std::size_t i = 0; i < n; ++i) bytes[i] = byte_at(written + i);
    written += n;
    return p.writer().write(std::span<const std::byte>(bytes.data(), n));
}

// Checks one read's buffer: it starts where the reader's last advance_to consumed up to
// (nothing skipped, nothing consumed handed out again), its segments hold as many bytes as its
// size says, and each is the byte written at its offset.
void check_buffer(const read_result& r, std::uint64_t consumed) {
    model::check(r.buffer.start().offset() == consumed, "a read starts where the last advance_to consumed up to");
    std::array<std::byte, 8> got{};
    model::check(r.buffer.size() <= got.size(), "a read holds no more than was written");
    model::check(r.buffer.copy_to(got) == r.buffer.size(), "a read's segments hold the bytes its size counts");
    for (std::size_t i = 0; i < r.buffer.size(); ++i)
        model::check(got[i] == byte_at(consumed + i), "every byte read is the byte written at its offset");
}

// ---- Flush against read and advance_to, no backpressure ----

contend::pipe fast_pipe(small_pipe(0, 0));
constexpr std::uint64_t fast_total = 5;

// The writer flushes 2 bytes (one segment), 2 more (a second segment), and completes with a
// fifth advanced but not flushed (complete() commits it) in a third segment, which may come
// from the pool; the reader consumes all but the last byte of each read while it examines all
// of it, so its next read waits for bytes beyond, until the completed read, which it consumes
// whole. Every byte is read once, in order, with its value.
void flush_against_read() {
    model::thread reader_thread([] {
        std::uint64_t consumed = 0;
        bool completed = false;
        for (int reads = 0; !completed; ++reads) {
            model::check(reads < 8, "the reader gets every byte in a bounded number of reads");
            const read_result r = fast_pipe.reader().read();
            model::check(!r.is_canceled, "no read is canceled");
            check_buffer(r, consumed);
            completed = r.is_completed;
            const std::size_t take = !completed && r.buffer.size() >= 2 ? r.buffer.size() - 1 : r.buffer.size();
            fast_pipe.reader().advance_to(r.buffer.position(take), r.buffer.end());
            consumed += take;
        }
        model::check(consumed == fast_total, "the reader consumed every byte written, once");
    });
    std::uint64_t written = 0;
    write_next(fast_pipe, written, 2);
    write_next(fast_pipe, written, 2);
    const auto span = fast_pipe.writer().get_span(1);
    span[0] = byte_at(written++);
    fast_pipe.writer().advance(1);
    fast_pipe.writer().complete();
    reader_thread.join();
    const pipe_stats s = fast_pipe.stats();
    model::check(s.bytes_written == fast_total && s.bytes_consumed == fast_total, "the counts agree with the stream");
}

// ---- A canceled first read against the first flush ----

contend::pipe first_read_pipe(small_pipe(0, 0));

// A canceled read takes the locked path whatever was flushed, so the reader's first read can
// run while the writer links its first segment and flushes into it: the buffer it returns must
// have the segment of every byte its size counts (it once took the segment before the flushed
// end, and got no segment but one byte).
void canceled_first_read_against_first_flush() {
    model::thread writer_thread([] {
        std::uint64_t written = 0;
        write_next(first_read_pipe, written, 1);
    });
    first_read_pipe.reader().cancel_pending_read();
    const read_result r = first_read_pipe.reader().read();
    model::check(r.is_canceled, "the read after a cancel returns is_canceled");
    check_buffer(r, 0);
    writer_thread.join();
}

// ---- Pausing and resuming at the thresholds ----

contend::pipe paused_pipe(small_pipe(2, 1));
constexpr std::uint64_t paused_total = 4;

// The writer flushes one byte at a time: a flush that brings the unexamined bytes to 2 blocks
// until the reader's examined position brings them below 1. The reader consumes (and
// examines) one byte per read, so it crosses the resume threshold only on its second advance
// after a pause, and it stops after the last byte: a wake-up lost on either side leaves a
// thread blocked with nobody left to wake it (the checker's deadlock). The writer completes
// only after the reader has everything, so no completion hides a lost wake-up of the reader.
void pause_and_resume() {
    model::thread reader_thread([] {
        std::uint64_t consumed = 0;
        while (consumed < paused_total) {
            const read_result r = paused_pipe.reader().read();
            model::check(!r.is_canceled && !r.is_completed, "no read is canceled or completed");
            check_buffer(r, consumed);
            model::check(!r.buffer.empty(), "a read returns only with bytes beyond what was examined");
            paused_pipe.reader().advance_to(r.buffer.position(1));
            ++consumed;
        }
    });
    std::uint64_t written = 0;
    while (written < paused_total) {
        const flush_result f = write_next(paused_pipe, written, 1);
        model::check(!f.is_canceled && !f.is_completed, "no flush is canceled or completed");
    }
    reader_thread.join();
    paused_pipe.writer().complete();
    const pipe_stats s = paused_pipe.stats();
    model::check(s.bytes_written == paused_total && s.bytes_consumed == paused_total && s.buffered_bytes == 0,
                 "the counts agree with the stream");
}

// ---- Cancellation of a pending read and a pending flush ----

contend::pipe canceled_pipe(small_pipe(2, 1));
constexpr std::uint64_t canceled_total = 2;
internal::atomic<int> flush_cancel_issued{0};
internal::atomic<int> canceled_reads{0};

// A third thread cancels the pending flush and the pending read, whichever state the writer
// and the reader are in (paused, polling, asleep, between calls). A cancel ends the pending
// call or, if none is pending, the next one: so exactly one flush and one read return
// is_canceled, counting one more flush after the cancel and one more read at the end, and
// the stream still arrives whole.
void cancel_against_read_and_flush() {
    flush_cancel_issued.store(0);
    canceled_reads.store(0);
    model::thread writer_thread([] {
        std::uint64_t written = 0;
        int canceled = 0;
        while (written < canceled_total) canceled += write_next(canceled_pipe, written, 1).is_canceled ? 1 : 0;
        while (flush_cancel_issued.load() == 0) cpu_relax();
        canceled += canceled_pipe.writer().flush().is_canceled ? 1 : 0;
        model::check(canceled == 1, "exactly one flush returns is_canceled");
        canceled_pipe.writer().complete();
    });
    model::thread reader_thread([] {
        std::uint64_t consumed = 0;
        bool completed = false;
        for (int reads = 0; !completed; ++reads) {
            model::check(reads < 10, "the reader gets every byte in a bounded number of reads");
            const read_result r = canceled_pipe.reader().read();
            check_buffer(r, consumed);
            if (r.is_canceled) canceled_reads.fetch_add(1);
            completed = r.is_completed;
            canceled_pipe.reader().advance_to(r.buffer.end());
            consumed += r.buffer.size();
        }
        model::check(consumed == canceled_total, "the reader consumed every byte written, once");
    });
    canceled_pipe.writer().cancel_pending_flush();
    flush_cancel_issued.store(1);
    canceled_pipe.reader().cancel_pending_read();
    writer_thread.join();
    reader_thread.join();
    read_result last;
    model::check(canceled_pipe.reader().try_read(last), "a read after the writer completed does not wait");
    model::check(last.is_completed && last.buffer.empty(), "nothing is left after the completed stream");
    model::check(canceled_reads.load() + (last.is_canceled ? 1 : 0) == 1, "exactly one read returns is_canceled");
}

// ---- The reader completing against a paused flush ----

contend::pipe abandoned_pipe(small_pipe(2, 1));

// The reader reads once and completes without advancing: the writer's second flush reaches
// the pause threshold and can only end by the reader's completion, with is_completed.
void reader_completes_against_a_paused_flush() {
    model::thread reader_thread([] {
        const read_result r = abandoned_pipe.reader().read();
        model::check(!r.is_canceled && !r.is_completed && !r.buffer.empty(), "the read returns the bytes flushed");
        check_buffer(r, 0);
        abandoned_pipe.reader().complete();
    });
    std::uint64_t written = 0;
    bool completed = false;
    while (!completed && written < 2) completed = write_next(abandoned_pipe, written, 1).is_completed;
    model::check(completed, "a flush paused by a reader that completes returns is_completed");
    abandoned_pipe.writer().complete();
    reader_thread.join();
}

constexpr auto pct = model::strategy_kind::pct;
constexpr auto random = model::strategy_kind::random;
constexpr auto bounded = model::strategy_kind::bounded;

TEST(PipeModel, FlushAgainstReadAndAdvanceDeliversEveryByteOnceInOrder) {
    model_test::expect_holds_under_every_strategy(flush_against_read, 1);
}

TEST(PipeModel, ACanceledFirstReadAgainstTheFirstFlushHasASegmentForEveryByteItCounts) {
    model_test::expect_holds_under_every_strategy(canceled_first_read_against_first_flush, 2);
}

TEST(PipeModel, APausedFlushResumesBelowTheResumeThresholdAndNoWakeUpIsLost) {
    model_test::expect_holds_under_every_strategy(pause_and_resume, 1);
}

TEST(PipeModel, CancelingEndsExactlyOnePendingFlushAndOneReadAndNobodyHangs) {
    model_test::expect_holds_under_every_strategy(cancel_against_read_and_flush, 1);
}

TEST(PipeModel, AReaderCompletingEndsAPausedFlushWithIsCompleted) {
    model_test::expect_holds_under_every_strategy(reader_completes_against_a_paused_flush, 1);
}

TEST(PipeModel, AFlushPublishedBeforeItsBytesAreCopiedIsFound) {
    expect_found("pipe_write_flushes_before_copying", flush_against_read, 2000, model_test::every_strategy);
}

// The bug the first-read model found, put back: random schedules rarely meet it (none in 500).
TEST(PipeModel, AReadThatTakesTheFirstSegmentBeforeTheFlushedEndIsFound) {
    expect_found("pipe_read_takes_the_first_segment_before_the_end", canceled_first_read_against_first_flush, 2000,
                 {model::strategy_kind::pct, model::strategy_kind::bounded});
}

TEST(PipeModel, AnAdvanceBelowResumeThatWakesNoWriterIsFound) {
    expect_found("pipe_advance_skips_writer_wake", pause_and_resume, 2000, model_test::every_strategy);
}

// Random schedules need about 600 executions for this one (the reader must sleep before the
// last flush): PCT and the bounded search find it within 200, at a fraction of the time.
TEST(PipeModel, AFlushThatWakesNoSleepingReaderIsFound) {
    expect_found("pipe_flush_skips_reader_wake", pause_and_resume, 2000,
                 {model::strategy_kind::pct, model::strategy_kind::bounded});
}

}  // namespace
