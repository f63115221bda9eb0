// contend::pipe: the shared state, the writer's and the reader's paths.
//
// The lock is for the rare cases. While both sides keep up with each other, a flush, a
// read and an advance_to take no lock at all: the writer publishes its flushed end and the
// reader its consumed and examined positions in atomics, and each looks at one flag word
// that says whether the other side needs the lock's attention (a sleeping or pending
// reader, a paused writer, a completion, a cancellation). So the two threads meet on the
// lock only when one of them must wait: the lighter lock the Pipelines contention PR asked
// for, taken further (see docs/references.md, dotnet-runtime-pipelines-contention).
//
// Who touches what:
//   writer only            its tail segment's bytes past the flushed end, the tail's `end`
//                          (atomic: the reader's iterator reads it), new segments and their
//                          `next` links (atomic, release), the unflushed count, renting
//   reader only            its consumed position (segment, index), the last read's id and
//                          end, whether a read is outstanding, returning segments
//   atomics                flushed_ (writer), consumed_ and examined_ (reader), the two
//                          slow-path flags (kept under the lock)
//   under the lock         completion, errors, cancellation, pending waits and callbacks
// A segment goes back to the pool only once the consumed position has moved into a later
// segment, that is once the writer has linked a next one and will not write it again.
//
// Why a wait cannot miss its wake-up: a side about to wait sets its flag (a seq_cst store
// under the lock) and then reads the other side's atomic again; the other side stores its
// atomic (seq_cst) and then reads the flag. One of them sees the other.
//
// Flushes without the fence. That seq_cst store is a full barrier on x86 (an xchg), paid at
// every flush: the writer waits there for its copy's stores to drain and, when the reader
// runs on another CPU, for the line of flushed_ that the reader polls to come back. The
// lab's 64-byte row took 22 to 23 ns a chunk with it on one CPU and 158 to 166 on two,
// against 15 and 72 to 76 without (Intel Xeon VM; docs/design/pipe.md). So while the reader
// keeps up with a stream (unfence_after_reads reads in a row found data without waiting),
// it lifts flush_fence_ (platform/fence_switch.hpp) and flushes store with release only; a
// reader that then waits restores it, which issues heavy_fence(), the process-wide barrier
// (membarrier: every thread of the process running then executes a full barrier; one not
// running has passed a context switch), after its flag's store and before it reads flushed_
// again (refresh_flags). Against a flush whose barrier point came after
// its store: the reader sees the bytes. One whose barrier point came before its store: its
// load of writer_needs_lock_, later still, sees the flag and takes the lock. A flush that
// read the switch off stored seq_cst, as before. The pool's posts do the same
// (pool/pool_core.cpp, "Posts without the fence"). A reader that waits at every read (a
// server's request pipe) never turns it on and never pays a barrier; one that does is held
// to one barrier per fence_lift_hold_off. Without a process-wide barrier (heavy_fence_available),
// always off. The model-checking build turns it on at every read, but its steps are
// sequentially consistent: what the barrier orders on hardware rests on this argument.
//
// Sleeping. A side that must sleep registers its thread's handoff_sleep under the lock and
// reads its own pipe; the other side's wake_* writes to it, a wake-up that Linux makes
// synchronous, so that a waker alone on its CPU draws the sleeper onto that CPU. Beside a
// busy loop at normal priority on 2 CPUs, which the kernel balances by moving one side of the
// pair onto the loop's CPU now and then, that brings the pair back together at the moved
// side's next sleep (docs/design/polling.md, "A partner on another CPU"). A thread that has
// no handoff_sleep (the portable and model builds, no descriptors left) sleeps on its side's
// condition variable, as every side did before.
#include "contend/pipe.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/condition_variable.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/atomic.hpp"
#include "contend/mutex.hpp"
#include "contend/thread_pool.hpp"
#include "model/mutation.hpp"
#include "pipe/segment_pool.hpp"
#include "platform/fence_switch.hpp"
#include "platform/handoff_sleep.hpp"
#include "platform/heavy_fence.hpp"
#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"
#include "pool/os_thread.hpp"

namespace contend {
namespace internal {

struct pipe_segment {
    explicit pipe_segment(std::size_t cap) : data(new std::byte[cap]), capacity(cap) {}
    std::unique_ptr<std::byte[]> data;
    std::size_t capacity;
    internal::atomic<std::size_t> end{0};  // bytes committed by the writer
    std::uint64_t running_index = 0;  // stream offset of data[0]
    internal::atomic<pipe_segment*> next{nullptr};  // linked by the writer before it writes there
};

// The pipe's lock: contend::mutex or std::mutex (pipe_options::lock), counting every
// acquisition and every one that found it taken (one try_lock first: the count is exact,
// the cost nil when it is free). stats() takes it uncounted.
class pipe_lock {
public:
    explicit pipe_lock(pipe_lock_kind kind) noexcept : kind_(kind) {}
    void lock() {
        if (!try_lock()) {
            contentions_.fetch_add(1, std::memory_order_relaxed);
            acquire_contended();
        }
        // Only the holder writes the count: a plain load and store, no locked instruction.
        acquisitions_.store(acquisitions_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    // For stats(): a reading of the counters does not count itself.
    void lock_uncounted() {
        if (!try_lock()) acquire_contended();
    }
    void unlock() {
        if (kind_ == pipe_lock_kind::contend_mutex) fast_.unlock();
        else platform_.unlock();
    }
    // The release before a condition variable's wait: a contend::mutex wakes a napping
    // designee then (contend::mutex::unlock_before_blocking), since this side is going to sleep.
    void unlock_before_blocking() {
        if (kind_ == pipe_lock_kind::contend_mutex) fast_.unlock_before_blocking();
        else platform_.unlock();
    }
    std::uint64_t contentions() const noexcept { return contentions_.load(std::memory_order_relaxed); }
    std::uint64_t acquisitions() const noexcept { return acquisitions_.load(std::memory_order_relaxed); }

private:
    void acquire_contended() {
        // The other side holds the lock for a few stores: try again for a moment before a
        // blocking lock(). contend::mutex's designee would otherwise nap about 100 us on a
        // lock that is free again within nanoseconds. Both lock kinds get the same tries,
        // so the std::mutex variant differs only in the lock.
        const std::uint32_t relaxes = internal::relaxes_for(try_spacing);
        for (int i = 0; i < lock_tries; ++i) {
            for (std::uint32_t p = 0; p < relaxes; ++p) cpu_relax();
            if (try_lock()) return;
        }
        if (kind_ == pipe_lock_kind::contend_mutex) fast_.lock();
        else platform_.lock();
    }
    // 16 tries 100 ns apart: about 1.6 us, a few of the other side's critical sections.
    static constexpr int lock_tries = 16;
    static constexpr std::chrono::nanoseconds try_spacing{100};
    bool try_lock() { return kind_ == pipe_lock_kind::contend_mutex ? fast_.try_lock() : platform_.try_lock(); }
    const pipe_lock_kind kind_;
    contend::mutex fast_;
    std::mutex platform_;
    internal::atomic<std::uint64_t> contentions_{0};
    internal::atomic<std::uint64_t> acquisitions_{0};
};

// A waiter polls for this long before it takes the lock to sleep: the other side usually
// answers within microseconds, and a futex sleep and its wake-up cost 16 to 19 us one way
// on the 2-CPU VMs (both families). In time, not pauses, and yielding as it goes
// (platform/spin_wait.hpp): a poll that shares its CPU with the other side lets it run
// instead of burning the budget; one for a side last seen on another CPU spins, since a
// yield cannot run it there (docs/design/polling.md, "A partner on another CPU").
// (The model-checking build's budget is its own: platform/yield.hpp.)
constexpr std::chrono::microseconds wait_poll_budget = internal::poll_budget(std::chrono::microseconds{40});

// After the epoch moved, the other side is still inside its critical section for a few
// stores: this long before taking the lock, so as not to queue behind it.
constexpr std::chrono::nanoseconds leave_grace{400};

// Flushes without the fence (top of this file). The reader lifts
// the writer's fence after this many reads in a row that found data without waiting: a
// stream, where the reader keeps up. A count, not a time, so that a reader that waits at
// every request (a server's) never lifts it and never pays the barrier that restores it.
// In the model-checking build at every read, so that the checker explores both kinds of flush.
#if CONTEND_MODEL_CHECK
constexpr std::uint32_t unfence_after_reads = 1;
#else
constexpr std::uint32_t unfence_after_reads = 256;
#endif
// And not sooner than fence_lift_hold_off after the barrier that last restored it
// (platform/fence_switch.hpp): at most a thousand barriers a second per pipe.

namespace {

// Records where the calling side runs (a nanosecond through rseq; a store only when it
// changed, so that the other side's look finds the line shared) and returns it: -1 where the
// platform cannot tell, and in the model-checking build, which then touches nothing.
int note_cpu(internal::atomic<int>& mine) noexcept {
    const int here = current_thread_cpu();
    if (here >= 0 && mine.load(std::memory_order_relaxed) != here) mine.store(here, std::memory_order_relaxed);
    return here;
}

// What a poll for the other side awaits: that side, and whether it was last seen on another
// CPU, where a yield of ours cannot let it run (platform/spin_wait.hpp, awaits). A side that
// moved since it was seen costs one poll's budget of spinning at most.
internal::spin_wait::awaits awaits_side(const internal::atomic<int>& theirs, int here) noexcept {
    if (here < 0) return internal::spin_wait::awaits::partner;
    const int there = theirs.load(std::memory_order_relaxed);
    return there >= 0 && there != here ? internal::spin_wait::awaits::partner_elsewhere
                                       : internal::spin_wait::awaits::partner;
}

// A statistics counter that one side alone writes (the writer's segment counts, the reader's
// bytes consumed): a load and a store, no locked instruction, where a fetch_add put a lock
// xadd on the writer's path for every segment. stats() reads it relaxed.
void count_own(internal::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

// Segment sizes are the minimum or a power-of-two multiple of it, so that a stream of large
// writes reuses its segments too. Segments up to this size go back to the pool; a rented
// one too small for the request is freed and replaced (the FIFO fills with the size in use).
constexpr std::size_t max_pooled_segment_size = std::size_t{1} << 20;

constexpr std::size_t max_segment_size = std::size_t{1} << 48;

// The largest segment a streaming writer grows to (next_segment_size): four times the
// minimum, which cuts the per-segment steps of a stream of small chunks to a quarter (16 KiB
// and 64 KiB segments measured the same, docs/design/pipe.md), and larger would only multiply
// what the pool keeps, which it counts in segments; and at most a quarter of the pause
// threshold, so that a paused window still spans four segments and the reader hands whole
// ones back as it goes. A writer that never pauses keeps the minimum: nothing bounds it.
inline std::size_t segment_growth_cap(const pipe_options& o) noexcept {
    std::size_t cap = o.minimum_segment_size;
    if (o.pause_writer_threshold == 0) return cap;
    while (cap < 4 * o.minimum_segment_size && cap <= o.pause_writer_threshold / 8 &&
           cap <= max_pooled_segment_size / 2)
        cap *= 2;
    return cap;
}

// Read ids come from one process-wide 64-bit counter, a block at a time, so that they are
// unique across every pipe the process ever makes (2^64 of them: at a billion reads a second,
// five centuries) while a read touches no shared line: a position from another pipe's buffer,
// however many pipes have come and gone, is refused as "from an older read" instead of
// handing this pipe a foreign segment. Zero, the id of a default position, is never handed out.
constexpr std::uint64_t read_id_block = std::uint64_t{1} << 16;

inline std::uint64_t take_read_id_block() noexcept {
    static internal::atomic<std::uint64_t> next{read_id_block};
    return next.fetch_add(read_id_block, std::memory_order_relaxed);
}

class pipe_state {
public:
    explicit pipe_state(pipe_options o);
    ~pipe_state();

    // Writer.
    std::span<std::byte> get_span(std::size_t hint);
    void advance(std::size_t bytes);
    flush_result flush();
    void flush_async(std::function<void(flush_result)> done);
    std::size_t unflushed() const noexcept { return unflushed_; }
    void complete_writer(std::exception_ptr e);
    void cancel_flush();

    // Reader.
    read_result read(std::size_t at_least);
    bool try_read(read_result& out);
    void read_async(std::function<void(read_result)> done);
    void advance_to(sequence_position consumed, sequence_position examined);
    void complete_reader(std::exception_ptr e);
    void cancel_read();
    std::exception_ptr writer_error();

    void reset();
    pipe_stats stats();

private:
    using guard = std::unique_lock<pipe_lock>;

    pipe_segment* rent(std::size_t at_least);
    std::size_t next_segment_size() noexcept;  // writer
    void give_back(pipe_segment* chain_begin, pipe_segment* chain_end);
    void publish_unflushed();  // writer
    bool read_ready(std::size_t at_least) const;  // under the lock
    // locked: under the lock (completion and cancellation are read); otherwise the reader's
    // lock-free fast path, which runs only while neither is set.
    read_result take_read(bool locked);
    bool reader_needs_more() const;  // under the lock
    bool flush_must_pause() const;  // under the lock
    bool writer_must_wait() const;  // under the lock
    void refresh_flags();  // under the lock, after any change to the flags' inputs
    void note_read_without_wait();  // reader, at a read that found data without waiting
    void schedule(thread_pool* pool, std::function<void()> fn);
    std::function<void()> ready_continuations();  // under the lock; run the result after
    void throw_if_writer_error_and_drained();  // under the lock
    void wake_reader();  // under the lock
    void wake_writer();  // under the lock
    // One side's sleep, from under the lock until a wake_* (or spuriously), under the lock
    // again. `sleeping` and `handoff`: where the wake_* looks for this side's sleep.
    void sleep(guard& g, contend::condition_variable& cv, bool& sleeping, internal::handoff_sleep*& handoff);
    template <class Ready>
    void wait_until(guard& g, contend::condition_variable& cv, bool& sleeping, internal::handoff_sleep*& handoff,
                    bool spin, Ready ready);
    void check_reader_can_read(const char* what);  // reader thread
    std::uint64_t unexamined() const noexcept {
        return flushed_.load(std::memory_order_seq_cst) - examined_.load(std::memory_order_seq_cst);
    }

    const pipe_options options_;
    const bool may_unfence_flushes_;  // a process-wide barrier is at hand (heavy_fence_available)
    pipe_lock lock_;
    contend::condition_variable reader_cv_;
    contend::condition_variable writer_cv_;
    spsc_pool<pipe_segment*> pool_;

    // Atomics shared without the lock, one cache line per writer: the writer's flushed end,
    // the reader's positions, and the flags (written rarely, read on every fast path).
    // Sharing a line made each side's store evict the line the other was polling (the lab's
    // pipe suite at 4 KiB: 7.7 GB/s on one line).
    alignas(cache_line_size) internal::atomic<std::uint64_t> flushed_{0};  // the writer has flushed up to
    internal::atomic<pipe_segment*> first_segment_{nullptr};  // where the stream starts
    alignas(cache_line_size) internal::atomic<std::uint64_t> consumed_{0};  // the reader has released up to
    internal::atomic<std::uint64_t> examined_{0};  // the reader has looked at up to
    alignas(cache_line_size) internal::atomic<bool> writer_needs_lock_{
        false};  // a reader waits or completed, or a flush is canceled
    internal::atomic<bool> read_needs_lock_{false};  // the writer completed, or a read is canceled
    internal::atomic<bool> advance_needs_lock_{false};  // a flush waits for the reader
    // Lifted by the reader: flushes publish with a release store alone (top of this file,
    // "Flushes without the fence"). Read at every flush, written rarely.
    internal::fence_switch flush_fence_;
    // Where each side last ran (current_thread_cpu, -1 unknown), stored only when it changes:
    // a poll for the other side asks it whether a yield can help (awaits_side).
    alignas(cache_line_size) internal::atomic<int> writer_cpu_{-1};
    internal::atomic<int> reader_cpu_{-1};
    alignas(cache_line_size) internal::atomic<std::uint64_t> epoch_{
        0};  // bumped by every wake-up, polled by spinning waiters

    // Writer only.
    alignas(cache_line_size) pipe_segment* tail_ = nullptr;
    std::size_t span_given_ = 0;  // bytes the last get_span offered
    std::size_t unflushed_ = 0;
    std::uint64_t committed_offset_ = 0;
    // The size of the writer's last new segment while it streams (next_segment_size).
    std::size_t stream_segment_size_ = options_.minimum_segment_size;
    const std::size_t segment_growth_cap_ = segment_growth_cap(options_);
    bool writer_done_ = false;  // this side called complete()
    // Counted by the writer alone (count_own), as its other counters are: a locked add here
    // drained the store buffer, full of the chunk just copied, at every pause (a profile put
    // 40 % of flush's samples after it; the time a chunk took did not measurably change).
    internal::atomic<std::uint64_t> writer_pauses_{0};

    // Reader only (and under the lock for a pending read_async, when the reader is idle).
    alignas(cache_line_size) pipe_segment* head_ = nullptr;  // consumed position
    std::size_t head_index_ = 0;
    // The last read's id, and the end of the block of ids this pipe took (take_read_id_block).
    std::uint64_t read_id_ = 0;
    std::uint64_t read_ids_end_ = 0;
    std::uint64_t read_end_ = 0;  // stream offset where the last read's buffer ends
    bool read_outstanding_ = false;
    bool reader_done_ = false;  // this side called complete()
    internal::atomic<std::uint64_t> bytes_consumed_{0};
    std::uint32_t reads_without_wait_ = 0;  // since the reader last waited or looked

    // Under the lock.
    bool writer_completed_ = false;
    bool reader_completed_ = false;
    std::exception_ptr writer_error_;
    std::exception_ptr reader_error_;
    bool read_waiting_ = false;  // a blocking read or a read_async is pending
    std::size_t read_at_least_ = 0;  // what a pending read_at_least asks for
    bool flush_waiting_ = false;
    bool cancel_read_ = false;
    bool cancel_flush_ = false;
    bool reader_sleeping_ = false;  // on reader_cv_
    bool writer_sleeping_ = false;
    // A side's sleep with a synchronous wake-up (platform/handoff_sleep.hpp), or nullptr.
    internal::handoff_sleep* reader_handoff_ = nullptr;
    internal::handoff_sleep* writer_handoff_ = nullptr;
    std::function<void(read_result)> pending_read_;
    std::function<void(flush_result)> pending_flush_;
    std::uint64_t flushed_total_ = 0;  // bytes flushed before the last reset

    internal::atomic<std::uint64_t> segments_allocated_{0};
    internal::atomic<std::uint64_t> segments_reused_{0};
    // The writer's: segments it took from the pool and has not reused yet, the one the reader
    // returned last at the back (rent). Its size is published for stats().
    std::vector<pipe_segment*> writer_spares_;
    internal::atomic<std::size_t> writer_spare_count_{0};
};

pipe_state::pipe_state(pipe_options o)
    : options_(std::move(o)),
      may_unfence_flushes_(internal::heavy_fence_available()),
      lock_(options_.lock),
      pool_(options_.max_pooled_segments) {}

pipe_state::~pipe_state() {
    // Segments before head_ went back to the pool already; before the first read, the chain
    // starts at the first segment.
    pipe_segment* s = head_ != nullptr ? head_ : first_segment_.load(std::memory_order_relaxed);
    while (s != nullptr) delete std::exchange(s, s->next.load(std::memory_order_relaxed));
    pipe_segment* p = nullptr;
    while (pool_.pop(p)) delete p;
    for (pipe_segment* spare : writer_spares_) delete spare;
}

// ---- Flags, waking, waiting ----

void pipe_state::refresh_flags() {
    const bool writer_needs_lock = read_waiting_ || reader_completed_ || cancel_flush_;
    writer_needs_lock_.store(writer_needs_lock, std::memory_order_seq_cst);
    // Before the caller looks at flushed_ again (to wait, or to leave a pending read).
    if (writer_needs_lock) flush_fence_.restore();
    read_needs_lock_.store(writer_completed_ || cancel_read_, std::memory_order_seq_cst);
    advance_needs_lock_.store(flush_waiting_, std::memory_order_seq_cst);
}

void pipe_state::note_read_without_wait() {
    if (++reads_without_wait_ < unfence_after_reads) return;
    reads_without_wait_ = 0;
    if (!writer_needs_lock_.load(std::memory_order_relaxed)) flush_fence_.lift();
}

void pipe_state::wake_reader() {
    epoch_.fetch_add(1, std::memory_order_release);
    if (reader_handoff_ != nullptr) internal::hand_off_to(std::exchange(reader_handoff_, nullptr));
    if (reader_sleeping_) reader_cv_.notify_all();
}

void pipe_state::wake_writer() {
    epoch_.fetch_add(1, std::memory_order_release);
    if (writer_handoff_ != nullptr) internal::hand_off_to(std::exchange(writer_handoff_, nullptr));
    if (writer_sleeping_) writer_cv_.notify_all();
}

// A side sleeps where its waker's wake-up is synchronous, when its thread can (the futex
// build: top of this file, "Sleeping"), and on its condition variable otherwise.
void pipe_state::sleep(guard& g, contend::condition_variable& cv, bool& sleeping, internal::handoff_sleep*& handoff) {
    if (internal::handoff_sleep* const mine = internal::this_thread_handoff_sleep()) {
        handoff = mine;
        g.unlock();
        const bool slept = internal::sleep_until_handed_off(mine);
        g.lock();
        // A waker took the registration back before it woke us; a sleep that failed (a
        // descriptor the program closed) takes it back itself, if no waker did.
        if (!slept && handoff == mine) handoff = nullptr;
        return;
    }
    sleeping = true;
    cv.wait(g);
    sleeping = false;
}

template <class Ready>
void pipe_state::wait_until(guard& g, contend::condition_variable& cv, bool& sleeping,
                            internal::handoff_sleep*& handoff, bool spin, Ready ready) {
    // spin: false when the caller has just polled without the lock (its fast path) and the
    // other side now takes the lock for every step while our flag is up: sleep at once.
    while (!ready()) {
        if (!spin) {
            sleep(g, cv, sleeping, handoff);
            continue;
        }
        const std::uint64_t seen = epoch_.load(std::memory_order_acquire);
        g.unlock();
        bool changed = false;
        internal::spin_wait poll(wait_poll_budget, internal::spin_wait::default_step,
                                 internal::spin_wait::awaits::partner);
        while (!changed && poll.pause()) changed = epoch_.load(std::memory_order_acquire) != seen;
        if (changed) internal::relax_for(leave_grace);  // the epoch moves inside the other side's critical section
        g.lock();
        if (changed || ready()) continue;
        sleep(g, cv, sleeping, handoff);
    }
}

// ---- Writer ----

pipe_segment* pipe_state::rent(std::size_t at_least) {
    // Doubling past half the address space would wrap (and loop forever): no real request
    // is that large, and the allocation would fail anyway.
    if (at_least > max_segment_size)
        throw std::length_error("contend::pipe_writer::get_span: a size hint of " + std::to_string(at_least) +
                                " bytes is larger than any segment can be");
    std::size_t size = options_.minimum_segment_size;
    while (size < at_least) size *= 2;
    if (size <= max_pooled_segment_size) {
        // The reader returns segments through the pool in the order it finished them; the
        // writer takes all it finds and reuses the last one first. On one CPU that is the one
        // whose lines the reader touched last, still in the first-level cache, where the
        // oldest, which a FIFO hands out, was pushed out by the rest of a 64 KiB window
        // (docs/design/pipe.md, "The writer reuses the last segment returned").
        pipe_segment* p = nullptr;
        while (pool_.pop(p)) {
            if (writer_spares_.size() >= options_.max_pooled_segments) {
                if (writer_spares_.empty()) {
                    delete p;
                    continue;
                }
                delete writer_spares_.front();
                writer_spares_.erase(writer_spares_.begin());
            }
            writer_spares_.push_back(p);
            writer_spare_count_.store(writer_spares_.size(), std::memory_order_relaxed);
        }
        if (!writer_spares_.empty()) {
            pipe_segment* s = writer_spares_.back();
            writer_spares_.pop_back();
            writer_spare_count_.store(writer_spares_.size(), std::memory_order_relaxed);
            if (s->capacity >= size) {
                count_own(segments_reused_, 1);
                return s;
            }
            delete s;
        }
    }
    count_own(segments_allocated_, 1);
    return new pipe_segment(size);
}

void pipe_state::give_back(pipe_segment* s, pipe_segment* stop) {
    while (s != stop) {
        pipe_segment* next = s->next.load(std::memory_order_relaxed);
        if (s->capacity <= max_pooled_segment_size) {
            s->end.store(0, std::memory_order_relaxed);
            s->next.store(nullptr, std::memory_order_relaxed);
            s->running_index = 0;
            // The pool and the writer's spares hold max_pooled_segments between them (one
            // more at most while the writer moves one across).
            if (pool_.size() + writer_spare_count_.load(std::memory_order_relaxed) >= options_.max_pooled_segments ||
                !pool_.push(s))
                delete s;
        } else {
            delete s;
        }
        s = next;
    }
}

// A writer that leaves a segment the reader has not examined any of runs a segment or more
// ahead of it: a stream. Its next segment is then twice the last, up to segment_growth_cap_;
// otherwise (a reader that keeps up, a first segment) the minimum. Fewer, larger segments
// spare a stream the per-segment work of both sides (a rent, a link, a step of the reader's
// walk, a give-back): at 4 KiB chunks on one CPU, 379 to 385 ns a chunk against 394 to 401
// with 4 KiB segments (Intel Xeon VM, docs/design/pipe.md, "Segments grow while the writer
// runs ahead"). A pipe whose reader keeps up, a server's request pipe, keeps the minimum.
std::size_t pipe_state::next_segment_size() noexcept {
    if (tail_ != nullptr && examined_.load(std::memory_order_relaxed) <= tail_->running_index)
        stream_segment_size_ = std::min(stream_segment_size_ * 2, segment_growth_cap_);
    else stream_segment_size_ = options_.minimum_segment_size;
    return stream_segment_size_;
}

std::span<std::byte> pipe_state::get_span(std::size_t hint) {
    if (writer_done_) throw pipe_error("contend::pipe_writer::get_span: the writer has completed");
    const std::size_t want = std::max<std::size_t>(hint, 1);
    if (tail_ == nullptr || tail_->capacity - tail_->end.load(std::memory_order_relaxed) < want) {
        pipe_segment* s = rent(std::max(want, next_segment_size()));
        s->running_index = committed_offset_;
        if (tail_ == nullptr) first_segment_.store(s, std::memory_order_release);
        else tail_->next.store(s, std::memory_order_release);  // tail_ is final from here on
        tail_ = s;
    }
    const std::size_t end = tail_->end.load(std::memory_order_relaxed);
    span_given_ = tail_->capacity - end;
    return {tail_->data.get() + end, span_given_};
}

void pipe_state::advance(std::size_t bytes) {
    if (writer_done_) throw pipe_error("contend::pipe_writer::advance: the writer has completed");
    if (bytes > span_given_)
        throw pipe_error("contend::pipe_writer::advance: " + std::to_string(bytes) + " bytes is past the " +
                         std::to_string(span_given_) + " the last get_span gave");
    if (bytes == 0) return;
    tail_->end.store(tail_->end.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
    span_given_ = 0;
    unflushed_ += bytes;
    committed_offset_ += bytes;
}

void pipe_state::publish_unflushed() {
    unflushed_ = 0;
    // The store and the load of writer_needs_lock_ after it are the writer's half of the
    // protocol that keeps a reader from sleeping through a flush; a reader that waits after
    // lifting the fence pays a process-wide barrier for both sides (pipe.cpp, top).
    if (flush_fence_.lifted()) flushed_.store(committed_offset_, std::memory_order_release);
    else flushed_.store(committed_offset_, std::memory_order_seq_cst);
}

// A reader blocked in read_at_least(n) needs the writer to go on until n bytes are
// buffered, whatever the thresholds say (Pipelines' ReadAtLeastAsync does the same).
bool pipe_state::reader_needs_more() const {
    return read_waiting_ && read_at_least_ > 0 &&
           flushed_.load(std::memory_order_seq_cst) - consumed_.load(std::memory_order_seq_cst) <= read_at_least_;
}

// A flush pauses when unexamined bytes are at or past the pause threshold.
bool pipe_state::flush_must_pause() const {
    if (reader_completed_ || cancel_flush_ || options_.pause_writer_threshold == 0) return false;
    return unexamined() >= options_.pause_writer_threshold && !reader_needs_more();
}

// A paused flush waits until unexamined bytes fall below the resume threshold (hysteresis:
// a reader examining a few bytes does not wake the writer for each); with a resume
// threshold of 0, until the reader has examined everything.
bool pipe_state::writer_must_wait() const {
    if (reader_completed_ || cancel_flush_ || options_.pause_writer_threshold == 0) return false;
    if (reader_needs_more()) return false;
    return unexamined() >= std::max<std::size_t>(options_.resume_writer_threshold, 1);
}

flush_result pipe_state::flush() {
    if (writer_done_) throw pipe_error("contend::pipe_writer::flush: the writer has completed");
    publish_unflushed();
    const int here = note_cpu(writer_cpu_);
    const std::size_t pause = options_.pause_writer_threshold;
    const std::size_t resume = std::max<std::size_t>(options_.resume_writer_threshold, 1);
    bool counted = false;
    if (!writer_needs_lock_.load(std::memory_order_seq_cst)) {
        if (pause == 0 || unexamined() < pause) return {};  // the common case: no lock
        // Paused: poll the reader's progress before taking the lock to sleep.
        count_own(writer_pauses_, 1);
        counted = true;
        internal::spin_wait poll(wait_poll_budget, internal::spin_wait::default_step, awaits_side(reader_cpu_, here));
        while (poll.pause()) {
            if (writer_needs_lock_.load(std::memory_order_seq_cst)) break;
            if (unexamined() < resume) return {};
        }
    }
    std::function<void()> run_after;
    flush_result result;
    {
        guard g(lock_);
        if (flush_waiting_) throw pipe_error("contend::pipe_writer::flush: another flush is pending");
        run_after = ready_continuations();
        if (flush_must_pause()) {
            if (!counted) count_own(writer_pauses_, 1);
            flush_waiting_ = true;
            refresh_flags();
            if (run_after) {  // complete an async reader before sleeping
                g.unlock();
                std::exchange(run_after, nullptr)();
                g.lock();
            }
            wake_reader();
            wait_until(g, writer_cv_, writer_sleeping_, writer_handoff_, !counted, [&] { return !writer_must_wait(); });
            flush_waiting_ = false;
        }
        result.is_canceled = std::exchange(cancel_flush_, false);
        result.is_completed = reader_completed_;
        refresh_flags();
        if (!CONTEND_MUTATION(pipe_flush_skips_reader_wake)) wake_reader();
    }
    if (run_after) run_after();
    return result;
}

void pipe_state::flush_async(std::function<void(flush_result)> done) {
    if (writer_done_) throw pipe_error("contend::pipe_writer::flush_async: the writer has completed");
    std::function<void()> run_after;
    std::function<void(flush_result)> immediate;
    flush_result result;
    {
        guard g(lock_);
        if (flush_waiting_) throw pipe_error("contend::pipe_writer::flush_async: another flush is pending");
        publish_unflushed();
        if (flush_must_pause()) {
            count_own(writer_pauses_, 1);
            flush_waiting_ = true;
            pending_flush_ = std::move(done);
        } else {
            result.is_canceled = std::exchange(cancel_flush_, false);
            result.is_completed = reader_completed_;
            immediate = std::move(done);
        }
        refresh_flags();
        run_after = ready_continuations();
        wake_reader();
    }
    if (run_after) run_after();
    if (immediate) immediate(result);  // completed synchronously: run inline, as Pipelines does
}

void pipe_state::complete_writer(std::exception_ptr e) {
    std::function<void()> run_after;
    {
        guard g(lock_);
        if (writer_completed_) return;
        publish_unflushed();  // what was advanced is delivered, as Pipelines' Complete commits
        writer_done_ = true;
        writer_completed_ = true;
        writer_error_ = std::move(e);
        refresh_flags();
        run_after = ready_continuations();
        wake_reader();
    }
    if (run_after) run_after();
}

void pipe_state::cancel_flush() {
    std::function<void()> run_after;
    {
        guard g(lock_);
        cancel_flush_ = true;
        refresh_flags();
        run_after = ready_continuations();
        wake_writer();
    }
    if (run_after) run_after();
}

// ---- Reader ----

bool pipe_state::read_ready(std::size_t at_least) const {
    if (cancel_read_ || writer_completed_) return true;
    const std::uint64_t flushed = flushed_.load(std::memory_order_seq_cst);
    if (at_least > 0) return flushed - consumed_.load(std::memory_order_relaxed) >= at_least;
    return flushed > examined_.load(std::memory_order_relaxed);
}

read_result pipe_state::take_read(bool locked) {
    read_result r;
    if (locked) {
        r.is_canceled = std::exchange(cancel_read_, false);
        r.is_completed = writer_completed_;
        refresh_flags();
    }
    // The flushed end first, then the first segment: the writer links its first segment
    // before it flushes into it, so an end past 0 means the segment is there. The other order
    // let a read that does not wait for data (a canceled one) see no segment yet and then the
    // end of the writer's first flush: a buffer of one byte and no segment.
    const bool segment_before_end = CONTEND_MUTATION(pipe_read_takes_the_first_segment_before_the_end);
    if (segment_before_end && head_ == nullptr) head_ = first_segment_.load(std::memory_order_acquire);
    const std::uint64_t consumed = consumed_.load(std::memory_order_relaxed);
    read_end_ = flushed_.load(std::memory_order_acquire);
    if (!segment_before_end && head_ == nullptr) {
        head_ = first_segment_.load(std::memory_order_acquire);
        head_index_ = 0;
    }
    if (++read_id_ >= read_ids_end_) [[unlikely]] {
        read_id_ = take_read_id_block();
        read_ids_end_ = read_id_ + read_id_block;
    }
    byte_sequence& b = r.buffer;
    b.segment_ = head_;
    b.index_ = head_index_;
    b.offset_ = consumed;
    b.length_ = static_cast<std::size_t>(read_end_ - consumed);
    b.read_id_ = read_id_;
    read_outstanding_ = true;
    return r;
}

void pipe_state::throw_if_writer_error_and_drained() {
    if (writer_completed_ && writer_error_ &&
        flushed_.load(std::memory_order_relaxed) == consumed_.load(std::memory_order_relaxed))
        std::rethrow_exception(writer_error_);
}

void pipe_state::check_reader_can_read(const char* what) {
    if (reader_done_) throw pipe_error(std::string("contend::pipe_reader::") + what + ": the reader has completed");
    if (read_outstanding_)
        throw pipe_error(std::string("contend::pipe_reader::") + what +
                         ": the last read's buffer was not advanced past (advance_to)");
}

read_result pipe_state::read(std::size_t at_least) {
    check_reader_can_read(at_least > 0 ? "read_at_least" : "read");
    bool spun = false;
    const int here = note_cpu(reader_cpu_);
    if (at_least == 0 && !read_needs_lock_.load(std::memory_order_seq_cst)) {
        spun = true;
        // The common case: data beyond what was examined, taken without the lock; if none
        // yet, poll for a while before going to sleep.
        const std::uint64_t examined = examined_.load(std::memory_order_relaxed);
        internal::spin_wait poll(wait_poll_budget, internal::spin_wait::default_step, awaits_side(writer_cpu_, here));
        for (;;) {
            if (flushed_.load(std::memory_order_acquire) > examined) {
                if (may_unfence_flushes_) note_read_without_wait();
                return take_read(false);
            }
            if (read_needs_lock_.load(std::memory_order_acquire) || !poll.pause()) break;
        }
    }
    std::function<void()> run_after;
    read_result r;
    {
        guard g(lock_);
        if (read_waiting_) throw pipe_error("contend::pipe_reader::read: another read is pending");
        if (!read_ready(at_least)) {
            read_waiting_ = true;
            read_at_least_ = at_least;
            reads_without_wait_ = 0;
            refresh_flags();
            wake_writer();  // a read_at_least may unpause the writer
            run_after = ready_continuations();
            if (run_after) {
                g.unlock();
                std::exchange(run_after, nullptr)();
                g.lock();
            }
            wait_until(g, reader_cv_, reader_sleeping_, reader_handoff_, !spun, [&] { return read_ready(at_least); });
            read_waiting_ = false;
            read_at_least_ = 0;
            refresh_flags();
        }
        throw_if_writer_error_and_drained();
        r = take_read(true);
    }
    return r;
}

bool pipe_state::try_read(read_result& out) {
    check_reader_can_read("try_read");
    if (!read_needs_lock_.load(std::memory_order_seq_cst)) {
        if (flushed_.load(std::memory_order_acquire) <= examined_.load(std::memory_order_relaxed)) return false;
        out = take_read(false);
        return true;
    }
    guard g(lock_);
    if (read_waiting_) throw pipe_error("contend::pipe_reader::try_read: another read is pending");
    if (!read_ready(0)) return false;
    throw_if_writer_error_and_drained();
    out = take_read(true);
    return true;
}

void pipe_state::read_async(std::function<void(read_result)> done) {
    check_reader_can_read("read_async");
    std::function<void(read_result)> immediate;
    read_result r;
    std::function<void()> run_after;
    {
        guard g(lock_);
        if (read_waiting_) throw pipe_error("contend::pipe_reader::read_async: another read is pending");
        if (read_ready(0)) {
            r = take_read(true);
            immediate = std::move(done);
        } else {
            read_waiting_ = true;
            reads_without_wait_ = 0;
            pending_read_ = std::move(done);
            refresh_flags();
            run_after = ready_continuations();
        }
    }
    if (run_after) run_after();
    if (immediate) immediate(std::move(r));
}

void pipe_state::advance_to(sequence_position consumed, sequence_position examined) {
    if (!read_outstanding_)
        throw pipe_error("contend::pipe_reader::advance_to: no read's buffer to advance past (read first)");
    if (consumed.read_id_ != read_id_ || examined.read_id_ != read_id_)
        throw pipe_error("contend::pipe_reader::advance_to: a position from an older read");
    const std::uint64_t old_consumed = consumed_.load(std::memory_order_relaxed);
    if (consumed.offset_ < old_consumed || consumed.offset_ > read_end_ || examined.offset_ > read_end_)
        throw pipe_error("contend::pipe_reader::advance_to: a position outside the data read");
    if (consumed.offset_ > examined.offset_)
        throw pipe_error("contend::pipe_reader::advance_to: consumed is after examined");
    if (examined.offset_ < examined_.load(std::memory_order_relaxed))
        throw pipe_error("contend::pipe_reader::advance_to: examined moved backwards");

    pipe_segment* seg = consumed.segment_ != nullptr ? consumed.segment_ : head_;
    std::size_t index = consumed.segment_ != nullptr ? consumed.index_ : head_index_;
    // Step over segments fully consumed that the writer has left (it linked a next one).
    while (seg != nullptr) {
        pipe_segment* next = seg->next.load(std::memory_order_acquire);
        if (next == nullptr || index < seg->end.load(std::memory_order_acquire)) break;
        seg = next;
        index = 0;
    }
    pipe_segment* release_begin = nullptr;
    pipe_segment* release_end = nullptr;
    if (seg != head_ && head_ != nullptr) {
        release_begin = head_;
        release_end = seg;
    }
    head_ = seg;
    head_index_ = index;
    read_outstanding_ = false;
    count_own(bytes_consumed_, consumed.offset_ - old_consumed);
    consumed_.store(consumed.offset_, std::memory_order_seq_cst);
    examined_.store(examined.offset_, std::memory_order_seq_cst);
    if (advance_needs_lock_.load(std::memory_order_seq_cst)) {  // a paused or pending flush
        std::function<void()> run_after;
        {
            guard g(lock_);
            run_after = ready_continuations();
            if (!CONTEND_MUTATION(pipe_advance_skips_writer_wake)) wake_writer();
        }
        if (run_after) run_after();
    }
    if (release_begin != nullptr) give_back(release_begin, release_end);  // never under the lock
}

void pipe_state::complete_reader(std::exception_ptr e) {
    std::function<void()> run_after;
    {
        guard g(lock_);
        if (reader_completed_) return;
        reader_done_ = true;
        reader_completed_ = true;
        reader_error_ = std::move(e);
        read_outstanding_ = false;
        refresh_flags();
        run_after = ready_continuations();
        wake_writer();
    }
    if (run_after) run_after();
}

void pipe_state::cancel_read() {
    std::function<void()> run_after;
    {
        guard g(lock_);
        cancel_read_ = true;
        refresh_flags();
        run_after = ready_continuations();
        wake_reader();
    }
    if (run_after) run_after();
}

std::exception_ptr pipe_state::writer_error() {
    guard g(lock_);
    return writer_completed_ ? writer_error_ : nullptr;
}

// ---- Continuations ----

void pipe_state::schedule(thread_pool* pool, std::function<void()> fn) {
    if (pool == nullptr) fn();
    else pool->post_local(std::move(fn));  // the local queue on a worker, the global one elsewhere
}

std::function<void()> pipe_state::ready_continuations() {
    std::function<void()> read_fn, flush_fn;
    if (pending_read_ && read_ready(0)) {
        read_waiting_ = false;
        auto done = std::move(pending_read_);
        pending_read_ = nullptr;
        // A writer that failed with nothing left to read gives an empty, completed result
        // that is still an outstanding read (advance_to(buffer.end()) is valid); the
        // callback form has no error channel, the awaitable rethrows writer_error().
        read_fn = [done = std::move(done), r = take_read(true)] { done(r); };
    }
    if (pending_flush_ && !writer_must_wait()) {
        flush_waiting_ = false;
        flush_result fr;
        fr.is_canceled = std::exchange(cancel_flush_, false);
        fr.is_completed = reader_completed_;
        flush_fn = [done = std::move(pending_flush_), fr] { done(fr); };
        pending_flush_ = nullptr;
    }
    refresh_flags();
    if (!read_fn && !flush_fn) return nullptr;
    thread_pool* rs = options_.reader_scheduler;
    thread_pool* ws = options_.writer_scheduler;
    return [this, rs, ws, read_fn = std::move(read_fn), flush_fn = std::move(flush_fn)]() mutable {
        if (read_fn) schedule(rs, std::move(read_fn));
        if (flush_fn) schedule(ws, std::move(flush_fn));
    };
}

// ---- Whole pipe ----

void pipe_state::reset() {
    pipe_segment* chain = nullptr;
    {
        guard g(lock_);
        if (!writer_completed_ || !reader_completed_)
            throw pipe_error("contend::pipe::reset: both the reader and the writer must have completed");
        chain = head_ != nullptr ? head_ : first_segment_.load(std::memory_order_relaxed);
        head_ = nullptr;
        head_index_ = 0;
        first_segment_.store(nullptr, std::memory_order_relaxed);
        flushed_total_ += flushed_.load(std::memory_order_relaxed);
        flushed_.store(0);
        consumed_.store(0);
        examined_.store(0);
        read_end_ = 0;
        writer_completed_ = reader_completed_ = false;
        writer_done_ = reader_done_ = false;
        writer_error_ = reader_error_ = nullptr;
        read_outstanding_ = read_waiting_ = flush_waiting_ = false;
        cancel_read_ = cancel_flush_ = false;
        read_at_least_ = 0;
        tail_ = nullptr;
        span_given_ = unflushed_ = 0;
        committed_offset_ = 0;
        refresh_flags();
    }
    give_back(chain, nullptr);
}

pipe_stats pipe_state::stats() {
    pipe_stats s;
    const std::uint64_t flushed = flushed_.load(std::memory_order_acquire);
    const std::uint64_t consumed = consumed_.load(std::memory_order_acquire);
    lock_.lock_uncounted();
    s.bytes_written = flushed_total_ + flushed;
    lock_.unlock();
    s.bytes_consumed = bytes_consumed_.load(std::memory_order_relaxed);
    s.writer_pauses = writer_pauses_.load(std::memory_order_relaxed);
    s.lock_contentions = lock_.contentions();
    s.lock_acquisitions = lock_.acquisitions();
    s.segments_allocated = segments_allocated_.load(std::memory_order_relaxed);
    s.segments_reused = segments_reused_.load(std::memory_order_relaxed);
    s.flush_fence_lifts = flush_fence_.lifts();
    s.flush_fence_restores = flush_fence_.restores();
    s.buffered_bytes = static_cast<std::size_t>(flushed >= consumed ? flushed - consumed : 0);
    s.pooled_segments = pool_.size() + writer_spare_count_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace internal

// ---- Public types ----

sequence_position byte_sequence::start() const noexcept { return {segment_, index_, offset_, read_id_}; }

sequence_position byte_sequence::position(std::size_t offset) const {
    if (offset > length_)
        throw pipe_error("contend::byte_sequence::position: offset " + std::to_string(offset) + " is past the " +
                         std::to_string(length_) + " bytes of the sequence");
    internal::pipe_segment* s = segment_;
    std::size_t index = index_;
    std::size_t left = offset;
    while (s != nullptr) {
        const std::size_t here = s->end.load(std::memory_order_acquire) - index;
        if (left <= here || s->next.load(std::memory_order_acquire) == nullptr)
            break;  // a position at a segment's end stays in it
        left -= here;
        s = s->next.load(std::memory_order_acquire);
        index = 0;
    }
    return {s, index + left, offset_ + offset, read_id_};
}

sequence_position byte_sequence::end() const noexcept {
    // position(length_) cannot throw.
    internal::pipe_segment* s = segment_;
    std::size_t index = index_;
    std::size_t left = length_;
    while (s != nullptr) {
        const std::size_t here = s->end.load(std::memory_order_acquire) - index;
        if (left <= here || s->next.load(std::memory_order_acquire) == nullptr) break;
        left -= here;
        s = s->next.load(std::memory_order_acquire);
        index = 0;
    }
    return {s, index + left, offset_ + length_, read_id_};
}

byte_sequence byte_sequence::slice(std::size_t offset, std::size_t length) const {
    if (offset > length_ || length > length_ - offset)
        throw pipe_error("contend::byte_sequence::slice: [" + std::to_string(offset) + ", +" + std::to_string(length) +
                         ") is not inside the " + std::to_string(length_) + " bytes of the sequence");
    const sequence_position p = position(offset);
    byte_sequence b = *this;
    b.segment_ = p.segment_;
    b.index_ = p.index_;
    b.offset_ = p.offset_;
    b.length_ = length;
    return b;
}

std::size_t byte_sequence::copy_to(std::span<std::byte> out) const noexcept {
    std::size_t copied = 0;
    for (const auto piece : segments()) {
        const std::size_t n = std::min(piece.size(), out.size() - copied);
        std::memcpy(out.data() + copied, piece.data(), n);
        copied += n;
        if (copied == out.size()) break;
    }
    return copied;
}

byte_sequence::segment_range byte_sequence::segments() const noexcept {
    segment_iterator first(segment_, index_, length_);
    // Skip empty segments so that no span is empty.
    while (first.remaining_ > 0 && first.segment_ != nullptr &&
           first.index_ >= first.segment_->end.load(std::memory_order_acquire)) {
        first.segment_ = first.segment_->next.load(std::memory_order_acquire);
        first.index_ = 0;
    }
    return {first, segment_iterator(nullptr, 0, 0)};
}

std::span<const std::byte> byte_sequence::segment_iterator::operator*() const noexcept {
    const std::size_t here = std::min(segment_->end.load(std::memory_order_acquire) - index_, remaining_);
    return {segment_->data.get() + index_, here};
}

byte_sequence::segment_iterator& byte_sequence::segment_iterator::operator++() noexcept {
    const std::size_t here = std::min(segment_->end.load(std::memory_order_acquire) - index_, remaining_);
    remaining_ -= here;
    if (remaining_ == 0) {
        segment_ = nullptr;
        index_ = 0;
        return *this;
    }
    segment_ = segment_->next.load(std::memory_order_acquire);
    index_ = 0;
    while (segment_ != nullptr && segment_->end.load(std::memory_order_acquire) == 0)
        segment_ = segment_->next.load(std::memory_order_acquire);
    return *this;
}

std::span<std::byte> pipe_writer::get_span(std::size_t size_hint) { return state_->get_span(size_hint); }
void pipe_writer::advance(std::size_t bytes) { state_->advance(bytes); }
flush_result pipe_writer::flush() { return state_->flush(); }
flush_result pipe_writer::write(std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto span = state_->get_span(std::min<std::size_t>(bytes.size() - done, 1));
        const std::size_t n = std::min(span.size(), bytes.size() - done);
        if (CONTEND_MUTATION(pipe_write_flushes_before_copying)) {  // the length published before the bytes
            state_->advance(n);
            state_->flush();
        }
        std::memcpy(span.data(), bytes.data() + done, n);
        if (!CONTEND_MUTATION(pipe_write_flushes_before_copying)) state_->advance(n);
        done += n;
    }
    return state_->flush();
}
void pipe_writer::flush_async(std::function<void(flush_result)> done) { state_->flush_async(std::move(done)); }
bool pipe_writer::flush_awaiter::await_suspend(std::coroutine_handle<> h) {
    // Whoever comes second resumes: the callback, if await_suspend has already said
    // "suspended"; otherwise await_suspend returns false and the coroutine just goes on.
    writer->flush_async([this, h](flush_result r) {
        result = r;
        if (phase.exchange(1, std::memory_order_acq_rel) == 2) h.resume();
    });
    return phase.exchange(2, std::memory_order_acq_rel) == 0;
}
std::size_t pipe_writer::unflushed_bytes() const noexcept { return state_->unflushed(); }
void pipe_writer::complete(std::exception_ptr error) { state_->complete_writer(std::move(error)); }
void pipe_writer::cancel_pending_flush() { state_->cancel_flush(); }

read_result pipe_reader::read() { return state_->read(0); }
bool pipe_reader::try_read(read_result& result) { return state_->try_read(result); }
read_result pipe_reader::read_at_least(std::size_t bytes) { return state_->read(std::max<std::size_t>(bytes, 1)); }
void pipe_reader::read_async(std::function<void(read_result)> done) { state_->read_async(std::move(done)); }
bool pipe_reader::read_awaiter::await_suspend(std::coroutine_handle<> h) {
    reader->read_async([this, h](read_result r) {
        result = std::move(r);
        if (phase.exchange(1, std::memory_order_acq_rel) == 2) h.resume();
    });
    return phase.exchange(2, std::memory_order_acq_rel) == 0;
}
read_result pipe_reader::read_awaiter::await_resume() {
    if (result.is_completed && result.buffer.empty())
        if (auto e = reader->state_->writer_error()) std::rethrow_exception(e);
    return std::move(result);
}
void pipe_reader::advance_to(sequence_position consumed) { state_->advance_to(consumed, consumed); }
void pipe_reader::advance_to(sequence_position consumed, sequence_position examined) {
    state_->advance_to(consumed, examined);
}
void pipe_reader::complete(std::exception_ptr error) { state_->complete_reader(std::move(error)); }
void pipe_reader::cancel_pending_read() { state_->cancel_read(); }

namespace {
pipe_options checked(pipe_options o) {
    if (o.pause_writer_threshold != 0 && o.resume_writer_threshold > o.pause_writer_threshold)
        throw std::invalid_argument("contend::pipe: resume_writer_threshold (" +
                                    std::to_string(o.resume_writer_threshold) + ") exceeds pause_writer_threshold (" +
                                    std::to_string(o.pause_writer_threshold) + ")");
    if (o.minimum_segment_size == 0) throw std::invalid_argument("contend::pipe: minimum_segment_size is 0");
    if (o.minimum_segment_size > internal::max_segment_size)
        throw std::invalid_argument("contend::pipe: minimum_segment_size (" + std::to_string(o.minimum_segment_size) +
                                    ") is larger than any segment can be (" +
                                    std::to_string(internal::max_segment_size) + " bytes)");
    if (o.max_pooled_segments > pipe_options::max_pooled_segments_limit)
        throw std::invalid_argument("contend::pipe: max_pooled_segments (" + std::to_string(o.max_pooled_segments) +
                                    ") is above " + std::to_string(pipe_options::max_pooled_segments_limit));
    return o;
}
}  // namespace

pipe::pipe(pipe_options options)
    : state_(std::make_unique<internal::pipe_state>(checked(std::move(options)))),
      reader_(state_.get()),
      writer_(state_.get()) {}
pipe::~pipe() = default;
void pipe::reset() { state_->reset(); }
pipe_stats pipe::stats() const { return state_->stats(); }

}  // namespace contend
