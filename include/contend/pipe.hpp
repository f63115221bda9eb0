// contend::pipe: a single-writer, single-reader byte pipeline with backpressure.
//
// System.IO.Pipelines' contract in C++ (see docs/references.md,
// dotnet-runtime-pipelines-contention): the writer asks for memory (get_span), fills it,
// advance()s and flush()es; the reader read()s a byte_sequence over one or more segments and
// advance_to(consumed, examined)s. Backpressure counts bytes flushed but not yet examined: a
// flush that brings them to pause_writer_threshold blocks (or completes later) until the
// reader's examined position brings them below resume_writer_threshold. A reader that has
// examined everything and waits for more never deadlocks a paused writer.
//
// After the Pipelines contention PR, and further: memory is rented and segments returned
// outside the lock; spare segments sit in a FIFO single-producer single-consumer pool (the
// reader returns at one end, the writer takes at the other); and while both sides keep up,
// a flush, a read and an advance_to take no lock at all (positions are published in
// atomics, src/pipe/pipe.cpp says how a wait still cannot miss its wake-up). The lock, a
// contend::mutex (or std::mutex, for comparison: pipe_options::lock), guards waiting,
// completion and cancellation; every acquisition that found it taken is counted
// (pipe_stats::lock_contentions). A side that must wait polls for some microseconds before
// it sleeps: yielding, so that the other side runs, when that side shares its CPU, and
// spinning without a yield when that side was last seen on another CPU (each flush and read
// records its thread's CPU, a nanosecond through rseq). A side that sleeps reads a pipe(2)
// of its thread's own, and the other side wakes it with a one-byte write: Linux makes that
// wake-up synchronous, so a waker alone on its CPU draws the sleeper onto that CPU, which
// keeps the two sides together beside a co-tenant (a futex wake-up does not). It costs two
// descriptors (O_CLOEXEC) for each thread that has slept in a blocking read or flush, from
// its first sleep to its exit, and at most a sixteenth of the process's soft descriptor limit
// in all; a thread that cannot have them (past that share, none left, or the program closed
// them) sleeps on a futex instead, as do the portable build's. While the reader keeps up with a
// stream (256 reads in a row without a wait), a flush publishes without a full barrier, and
// the reader's next wait puts the barrier back with a process-wide one (membarrier, at most
// one a millisecond per pipe; never where the process cannot issue one): src/pipe/pipe.cpp,
// "Flushes without the fence", and pipe_stats counts both. Continuations of
// read_async/flush_async run on a thread_pool's local queue when one is given.
//
// One thread at a time may use the writer, and one the reader (they may be different
// threads). Misuse throws contend::pipe_error and leaves the pipe as it was.
#pragma once

#include <atomic>
#include <compare>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>

#include "contend/internal/atomic.hpp"

namespace contend {

class thread_pool;

// Misuse of a pipe: advancing past what was handed out, a stale or out-of-range position,
// reading or writing after completion, a second pending read, reset() too early.
class pipe_error : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

enum class pipe_lock_kind : std::uint8_t { contend_mutex, std_mutex };

struct pipe_options {
    std::size_t pause_writer_threshold = 65536;  // 0: never pause
    std::size_t resume_writer_threshold = 32768;  // must not exceed pause: std::invalid_argument
    // 0 or over 2^48: std::invalid_argument. A writer that leaves a segment its reader has not examined
    // any of gets the next one twice as large, up to four times this and a quarter of
    // pause_writer_threshold (no growth when that is 0), so a stream takes fewer segment
    // steps; get_span may then offer more than it asked for.
    std::size_t minimum_segment_size = 4096;
    // Segments kept for reuse; the pool's slots are allocated up front (a pointer each), so
    // more than max_pooled_segments_limit is std::invalid_argument.
    std::size_t max_pooled_segments = 256;
    static constexpr std::size_t max_pooled_segments_limit = std::size_t{1} << 20;
    thread_pool* reader_scheduler = nullptr;  // nullptr: continuations run inline
    thread_pool* writer_scheduler = nullptr;  // a pool: on its local queue when on a worker
    // The lock guarding the shared state; std_mutex exists to measure what contend::mutex buys.
    pipe_lock_kind lock = pipe_lock_kind::contend_mutex;
};

struct pipe_stats {
    std::uint64_t bytes_written = 0;  // flushed by the writer
    std::uint64_t bytes_consumed = 0;  // released by the reader's advance_to
    std::uint64_t writer_pauses = 0;  // flushes that had to wait for the reader
    std::uint64_t lock_acquisitions = 0;  // times the pipe's lock was taken (the slow paths only)
    std::uint64_t lock_contentions = 0;  // acquisitions of the pipe's lock that found it taken
    std::uint64_t segments_allocated = 0;  // segments taken from the heap
    std::uint64_t segments_reused = 0;  // segments taken from the pool
    // Times the reader, keeping up with a stream, let flushes go without their fence, and
    // times a wait of the reader put it back with a process-wide barrier (pipe.cpp, top).
    std::uint64_t flush_fence_lifts = 0;
    std::uint64_t flush_fence_restores = 0;
    std::size_t buffered_bytes = 0;  // flushed, not yet consumed
    std::size_t pooled_segments = 0;
};

namespace internal {
struct pipe_segment;
class pipe_state;
}  // namespace internal

// A place in the pipe's byte stream. Ordered by stream offset; valid for advance_to until the
// next read's result replaces the buffer it came from.
class sequence_position {
public:
    sequence_position() noexcept = default;
    std::uint64_t offset() const noexcept { return offset_; }  // bytes since the pipe started
    friend bool operator==(const sequence_position& a, const sequence_position& b) noexcept {
        return a.offset_ == b.offset_;
    }
    friend std::strong_ordering operator<=>(const sequence_position& a, const sequence_position& b) noexcept {
        return a.offset_ <=> b.offset_;
    }

private:
    friend class byte_sequence;
    friend class internal::pipe_state;
    sequence_position(internal::pipe_segment* s, std::size_t index, std::uint64_t offset,
                      std::uint64_t read_id) noexcept
        : segment_(s), index_(index), offset_(offset), read_id_(read_id) {}
    internal::pipe_segment* segment_ = nullptr;
    std::size_t index_ = 0;  // within segment_'s data
    std::uint64_t offset_ = 0;
    std::uint64_t read_id_ = 0;  // the read whose buffer it came from
};

// A read-only view over one or more segments. Valid until the reader's next advance_to.
class byte_sequence {
public:
    byte_sequence() noexcept = default;
    std::size_t size() const noexcept { return length_; }
    bool empty() const noexcept { return length_ == 0; }
    sequence_position start() const noexcept;
    sequence_position end() const noexcept;
    // offset from start(), at most size(); throws pipe_error beyond.
    sequence_position position(std::size_t offset) const;
    // Throws pipe_error if [offset, offset + length) is not inside this sequence.
    byte_sequence slice(std::size_t offset, std::size_t length) const;
    std::size_t copy_to(std::span<std::byte> out) const noexcept;  // min(size, out.size()) bytes

    class segment_iterator {
    public:
        using value_type = std::span<const std::byte>;
        using difference_type = std::ptrdiff_t;
        using iterator_category = std::forward_iterator_tag;
        segment_iterator() noexcept = default;
        value_type operator*() const noexcept;
        segment_iterator& operator++() noexcept;
        segment_iterator operator++(int) noexcept {
            auto old = *this;
            ++*this;
            return old;
        }
        friend bool operator==(const segment_iterator& a, const segment_iterator& b) noexcept {
            return a.remaining_ == b.remaining_;
        }

    private:
        friend class byte_sequence;
        segment_iterator(const internal::pipe_segment* s, std::size_t index, std::size_t remaining) noexcept
            : segment_(s), index_(index), remaining_(remaining) {}
        const internal::pipe_segment* segment_ = nullptr;
        std::size_t index_ = 0;
        std::size_t remaining_ = 0;
    };
    struct segment_range {
        segment_iterator first, last;
        segment_iterator begin() const noexcept { return first; }
        segment_iterator end() const noexcept { return last; }
    };
    // Each segment's bytes in order (no empty spans).
    segment_range segments() const noexcept;

private:
    friend class internal::pipe_state;
    internal::pipe_segment* segment_ = nullptr;
    std::size_t index_ = 0;
    std::uint64_t offset_ = 0;
    std::size_t length_ = 0;
    std::uint64_t read_id_ = 0;
};

struct read_result {
    byte_sequence buffer;
    bool is_completed = false;  // the writer completed: no more data will come after buffer
    bool is_canceled = false;  // cancel_pending_read() ended this read
};

struct flush_result {
    bool is_canceled = false;  // cancel_pending_flush() ended this flush
    bool is_completed = false;  // the reader completed: nothing more will be read
};

class pipe_writer {
public:
    // At least size_hint bytes of writable memory (some if 0), valid until advance/flush.
    // Throws pipe_error after complete(), std::length_error for a hint over 2^48 bytes, and
    // std::bad_alloc if memory runs out (the pipe is unchanged).
    std::span<std::byte> get_span(std::size_t size_hint = 0);
    // Commits `bytes` of the last span. Throws pipe_error beyond it (nothing is committed).
    void advance(std::size_t bytes);
    // Makes the committed bytes readable; blocks while the pipe is paused (backpressure).
    // Throws pipe_error if another flush is pending.
    flush_result flush();
    flush_result write(std::span<const std::byte> bytes);  // get_span + copy + advance + flush
    // Callback form: `done` runs once the flush completes, inline if it can at once, else on
    // writer_scheduler (its local queue from a worker) or, without one, on the thread that
    // lets it complete (the reader's advance_to, a cancel, a completion).
    void flush_async(std::function<void(flush_result)> done);
    // co_await writer.flush_awaitable(). A flush that completes at once does not suspend
    // (no stack growth over a long run of ready flushes).
    struct flush_awaiter {
        pipe_writer* writer;
        flush_result result{};
        internal::atomic<int> phase{0};  // 1: the callback ran; 2: await_suspend returned true
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<> h);
        flush_result await_resume() const noexcept { return result; }
    };
    flush_awaiter flush_awaitable() noexcept { return {this}; }
    std::size_t unflushed_bytes() const noexcept;
    // No more writes. The reader sees is_completed after the data (and rethrows `error` from
    // read() if one is given). Idempotent.
    void complete(std::exception_ptr error = nullptr);
    // Ends a pending flush with is_canceled, or the next flush if none is pending.
    void cancel_pending_flush();

private:
    friend class pipe;
    explicit pipe_writer(internal::pipe_state* s) noexcept : state_(s) {}
    internal::pipe_state* state_;
};

class pipe_reader {
public:
    // Blocks until there are bytes beyond what was examined, the writer completed, or the
    // read was canceled. Rethrows the writer's error once its data is consumed. Throws
    // pipe_error after complete() or while a read is outstanding (not yet advanced past).
    read_result read();
    // Never blocks: true (and result filled) if read() would not block.
    bool try_read(read_result& result);
    // Blocks until at least `bytes` are buffered (or completion/cancel); unpauses a writer
    // that the threshold would otherwise hold back.
    read_result read_at_least(std::size_t bytes);
    void read_async(std::function<void(read_result)> done);
    // co_await reader.read_awaitable(): the read_result, or the writer's error rethrown. A
    // read that completes at once does not suspend.
    struct read_awaiter {
        pipe_reader* reader;
        read_result result{};
        internal::atomic<int> phase{0};  // 1: the callback ran; 2: await_suspend returned true
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<> h);
        read_result await_resume();
    };
    read_awaiter read_awaitable() noexcept { return {this}; }
    // Releases the bytes before `consumed`; `examined` (default: consumed) tells the pipe how
    // far the reader looked, so the next read waits for bytes beyond it. Throws pipe_error for
    // a position not from the last read's buffer, consumed after examined, or examined
    // moving backwards.
    void advance_to(sequence_position consumed);
    void advance_to(sequence_position consumed, sequence_position examined);
    void complete(std::exception_ptr error = nullptr);
    void cancel_pending_read();

private:
    friend class pipe;
    explicit pipe_reader(internal::pipe_state* s) noexcept : state_(s) {}
    internal::pipe_state* state_;
};

class pipe {
public:
    explicit pipe(pipe_options options = {});
    ~pipe();
    pipe(const pipe&) = delete;
    pipe& operator=(const pipe&) = delete;
    pipe_reader& reader() noexcept { return reader_; }
    pipe_writer& writer() noexcept { return writer_; }
    // For reuse: only once both sides have completed (pipe_error otherwise); the pipe is then
    // as new, its pooled segments kept.
    void reset();
    pipe_stats stats() const;

private:
    std::unique_ptr<internal::pipe_state> state_;
    pipe_reader reader_;
    pipe_writer writer_;
};

}  // namespace contend
