// The pipe suite's workload: one writer thread moves a stream of bytes, a chunk at a time,
// through a transport (contend::pipe, a mutex ring, a socketpair, a peer's queue) to one
// reader thread, which checksums every byte it gets.
//
// How it fits the harness: harness worker 0 is the writer; the reader is a thread of the
// workload's own, started with it and kept across repetitions (as the pool suite keeps its
// pool), so the row's pair of threads is the same at any worker count and harness workers
// past the first return at once. A repetition writes `ops` chunks, then the writer waits
// until the reader has received every byte written so far, so the repetition's wall time
// (gate to the writer's return) covers the reader's work and nothing of it bleeds into the
// next repetition. One operation is one chunk.
//
// What is written: the chunks are consecutive slices of a 256 KiB pseudo-random pattern, a
// multiple of every chunk size (no chunk wraps) small enough to stay in L2, so the writer's
// work per chunk is one copy into the transport. The reader keeps a Fletcher sum over the
// whole stream (stream_sum below); check() compares it, and the byte count, with the sum of
// what was written, computed from the pattern outside the timed interval.
//
// Every wait is bounded: the transports wait with timeouts and poll the harness's stop flag
// (a writer) or the workload's quit flag (the reader); a transport whose writer can block
// without a timeout (contend::pipe's flush) says so with needs_watchdog, and a watchdog
// thread cancels that wait once the harness raises stop. A transport that loses or stalls
// bytes therefore ends the repetition at its deadline, and check() says what was lost.
//
// Where the two ran: every row but memcpy reports apart_share, the share of the writer's looks
// (one every poll_every chunks) that found the reader last seen on another CPU (the reader
// notes its CPU at every 16th run of bytes). Beside a co-tenant on 2 CPUs the kernel keeps a
// writer and its reader together most of the time and moves one of them now and then, and
// apart every byte crosses between the CPUs: the figure says how much of a repetition that was
// (docs/design/polling.md, "A partner on another CPU").
#pragma once

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "measure/end_wait.hpp"
#include "measure/workload.hpp"

namespace contend::lab::pipe_bench {

// The chunk sizes of every row: a small message, a page (the pipe's minimum segment) and the
// pipe's pause threshold.
inline constexpr std::size_t chunk_sizes[] = {64, 4096, 65536};

// The bytes a transport may hold before its writer waits, where the transport lets us choose:
// contend::pipe's default pause_writer_threshold, so the rows compare the same window.
inline constexpr std::size_t window_bytes = 65536;

// The pattern the writer copies from: a multiple of every chunk size, so no chunk wraps.
inline constexpr std::size_t pattern_bytes = 256 * 1024;
static_assert(pattern_bytes % 65536 == 0);

// A Fletcher sum of a byte stream taken as little-endian 64-bit words, modulo 2^64:
// a = sum of the words, b = sum of the running a's. One wrong byte changes a; words in the
// wrong order change b. The stream may arrive in pieces of any size: a word split between
// two pieces is completed from the next one, so the sum depends only on the bytes.
// Two dependent adds per 8 bytes: the reader can keep up with any transport here.
class stream_sum {
public:
    void update(std::span<const std::byte> s) {
        const std::byte* p = s.data();
        std::size_t n = s.size();
        bytes_ += n;
        if (pending_ > 0) {
            const std::size_t take = std::min(n, 8 - pending_);
            std::memcpy(partial_ + pending_, p, take);
            pending_ += take;
            p += take;
            n -= take;
            if (pending_ < 8) return;
            add(load(partial_));
            pending_ = 0;
        }
        std::uint64_t a = a_, b = b_;
        for (; n >= 8; p += 8, n -= 8) {
            a += load(p);
            b += a;
        }
        a_ = a;
        b_ = b;
        if (n > 0) {
            std::memcpy(partial_, p, n);
            pending_ = n;
        }
    }
    std::uint64_t bytes() const { return bytes_; }
    // Over the whole words so far (a trailing partial word is not in them yet).
    std::uint64_t a() const { return a_; }
    std::uint64_t b() const { return b_; }

    // Appends a block of `words` words whose own sums (from zero) are block_a and block_b.
    void append_block(std::uint64_t words, std::uint64_t block_a, std::uint64_t block_b) {
        b_ += words * a_ + block_b;
        a_ += block_a;
        bytes_ += words * 8;
    }

private:
    static std::uint64_t load(const void* p) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        return w;  // the host's order: writer and reader share it
    }
    void add(std::uint64_t w) {
        a_ += w;
        b_ += a_;
    }
    std::uint64_t a_ = 0, b_ = 0, bytes_ = 0;
    unsigned char partial_[8] = {};
    std::size_t pending_ = 0;
};

// 64-byte aligned bytes, for buffers that two threads touch.
struct aligned_bytes {
    struct deleter {
        void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    explicit aligned_bytes(std::size_t n) : data(static_cast<std::byte*>(::operator new[](n, std::align_val_t(64)))) {
        std::memset(data.get(), 0, n);
    }
    std::byte* get() const { return data.get(); }
    std::unique_ptr<std::byte, deleter> data;
};

// The writer's source: pattern_bytes of xorshift64 output, and the Fletcher sums of the
// stream it makes (the pattern repeated), for check().
class pattern_source {
public:
    pattern_source() : bytes_(pattern_bytes) {
        std::uint64_t x = 0x9E3779B97F4A7C15ull;
        for (std::size_t i = 0; i < pattern_bytes; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            std::memcpy(bytes_.get() + i, &x, 8);
        }
        stream_sum whole;
        whole.update({bytes_.get(), pattern_bytes});
        period_a_ = whole.a();
        period_b_ = whole.b();
    }
    // The chunk that starts at stream offset `at` (a multiple of the chunk size).
    const std::byte* at(std::uint64_t offset) const { return bytes_.get() + offset % pattern_bytes; }
    // The sum of the first `total` bytes of the stream (a multiple of 8): whole periods
    // combined algebraically, then the rest summed, so it costs O(total / 256 KiB + 32 Ki).
    stream_sum expected(std::uint64_t total) const {
        stream_sum s;
        for (std::uint64_t periods = total / pattern_bytes; periods > 0; --periods)
            s.append_block(pattern_bytes / 8, period_a_, period_b_);
        s.update({bytes_.get(), static_cast<std::size_t>(total % pattern_bytes)});
        return s;
    }

private:
    aligned_bytes bytes_;
    std::uint64_t period_a_ = 0, period_b_ = 0;
};

inline double thread_cpu_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// What every row reports beside real_time (ns per chunk): the bytes per second of wall
// time, the figure the design notes name.
inline void add_stream_metrics(const repetition_facts& facts, std::size_t chunk, metric_list& out) {
    const double bytes = static_cast<double>(facts.completed) * static_cast<double>(chunk);
    out.emplace_back("bytes_per_second", facts.wall_ns > 0 ? bytes / (facts.wall_ns / 1e9) : 0);
}

// Transport: constructed from (chunk, extra arguments...), used by one writer and one reader:
//  - std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>& stop):
//    puts the chunk in, waiting (bounded, polling stop) while the transport is full; returns
//    the bytes it took, fewer than the chunk only when stop was raised;
//  - template <class Sink> void read_loop(Sink& sink, const std::atomic<bool>& quit): the
//    reader thread's loop, sink(span) for every run of bytes received in order, until the
//    writer side is closed or quit is raised (polled at least every few ms);
//  - void close(): after quit is raised, ends read_loop (the workload is being destroyed);
//  - optional: static constexpr bool needs_watchdog and void cancel_writer() (ends a
//    blocked write, from another thread); void begin_window() / void end_window() around
//    each repetition's writes (on the writer's thread) and void add_metrics(const
//    repetition_facts&, metric_list&).
// CountOnly: the reader only counts what arrives and checks each run's first and last byte
// against the pattern, as a program's reader that hands the bytes on does (the natural
// pattern row, pipe.cpp); otherwise it checksums every byte.
template <class Transport, bool CountOnly = false>
class stream_throughput final : public workload {
public:
    template <class... Args>
    explicit stream_throughput(std::size_t chunk, Args&&... args)
        : chunk_(chunk), transport_(chunk, std::forward<Args>(args)...) {
        reader_ = std::thread([this] { read(); });
        pthread_getcpuclockid(reader_.native_handle(), &reader_clock_);
        if constexpr (has_watchdog) watchdog_ = std::thread([this] { watch_loop(); });
    }
    ~stream_throughput() override {
        quit_.store(true);
        if constexpr (has_watchdog) {
            {
                std::lock_guard lk(watch_m_);
                watch_quit_ = true;
            }
            watch_cv_.notify_all();
            watchdog_.join();
        }
        transport_.close();
        reader_.join();
    }
    stream_throughput(const stream_throughput&) = delete;
    stream_throughput& operator=(const stream_throughput&) = delete;

    void reset() override {
        rep_chunks_ = 0;
        cpu_ns_ = 0;
        looks_ = apart_looks_ = 0;
    }

    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        if (worker != 0) return 0;  // the writer is worker 0; the reader is our own thread
        set_watched(&stop);
        if constexpr (requires(Transport & t) { t.begin_window(); }) transport_.begin_window();
        const clockid_t self = own_clock();
        const double cpu0 = thread_cpu_ns(self) + thread_cpu_ns(reader_clock_);
        auto& mine = progress[0].value;
        std::uint64_t done = 0;
        try {
            while (done < ops && !stop.load(std::memory_order_relaxed)) {
                const std::size_t took = transport_.write({source_.at(written_), chunk_}, stop);
                written_ += took;
                if (took < chunk_) break;
                if (++done % poll_every == 0) {
                    mine.store(done, std::memory_order_relaxed);
                    look_where_the_reader_runs();
                }
            }
            wait_for_reader(stop);
        } catch (const std::exception& e) {
            writer_error_ = e.what();
        }
        cpu_ns_ = thread_cpu_ns(self) + thread_cpu_ns(reader_clock_) - cpu0;
        if constexpr (requires(Transport & t) { t.end_window(); }) transport_.end_window();
        set_watched(nullptr);
        rep_chunks_ = done;
        mine.store(done, std::memory_order_relaxed);
        return done;
    }

    check_result check(const std::vector<std::uint64_t>& completed) override {
        if (reader_failed_.load(std::memory_order_acquire)) return {"reader_failed", reader_error_};
        if (!writer_error_.empty()) return {"writer_failed", writer_error_};
        std::uint64_t reported = 0;
        for (const auto c : completed) reported += c;
        if (reported == 0) return {"no_bytes", "no chunk was written"};
        if (reported != rep_chunks_)
            return {"wrong_count",
                    std::to_string(reported) + " chunks reported, the writer wrote " + std::to_string(rep_chunks_)};
        const std::uint64_t got = received_.bytes.load(std::memory_order_acquire);
        if (got != written_)
            return {"bytes_lost", "the reader received " + std::to_string(got) + " of the " + std::to_string(written_) +
                                      " bytes written"};
        if constexpr (CountOnly) return {};  // each run's ends were checked as they came
        const stream_sum want = source_.expected(written_);
        if (received_.a.load(std::memory_order_relaxed) != want.a() ||
            received_.b.load(std::memory_order_relaxed) != want.b())
            return {"checksum_mismatch",
                    "the " + std::to_string(got) + " bytes received are not the bytes written (Fletcher sums differ)"};
        return {};
    }

    void measure(const repetition_facts& facts, metric_list& out) override {
        add_stream_metrics(facts, chunk_, out);
        out.emplace_back("apart_share",
                         looks_ > 0 ? static_cast<double>(apart_looks_) / static_cast<double>(looks_) : 0);
        if constexpr (requires(Transport & t, const repetition_facts& f, metric_list& o) { t.add_metrics(f, o); })
            transport_.add_metrics(facts, out);
    }
    // Both threads' CPU over the writer's window: the reader is not a harness thread.
    double cpu_ns(const repetition_facts&) const override { return cpu_ns_; }

private:
    static constexpr bool has_watchdog = requires { requires Transport::needs_watchdog; };

    static clockid_t own_clock() {
        clockid_t c = CLOCK_THREAD_CPUTIME_ID;
        pthread_getcpuclockid(pthread_self(), &c);
        return c;
    }

    // The reader thread: checksums what arrives and publishes it after every run of bytes
    // (the count last, with release, so whoever sees the count sees the sums that go with it).
    void read() {
        try {
            if constexpr (CountOnly) {
                std::uint64_t count = 0;
                auto sink = [this, &count](std::span<const std::byte> s) {
                    note_where_the_reader_runs();
                    if (s.empty()) return;
                    if (s.front() != *source_.at(count) || s.back() != *source_.at(count + s.size() - 1))
                        throw std::runtime_error("the bytes at stream offset " + std::to_string(count) +
                                                 " are not the bytes written");
                    count += s.size();
                    received_.bytes.store(count, std::memory_order_release);
                };
                transport_.read_loop(sink, quit_);
                return;
            }
            auto sink = [this](std::span<const std::byte> s) {
                note_where_the_reader_runs();
                sum_.update(s);
                received_.a.store(sum_.a(), std::memory_order_relaxed);
                received_.b.store(sum_.b(), std::memory_order_relaxed);
                received_.bytes.store(sum_.bytes(), std::memory_order_release);
            };
            transport_.read_loop(sink, quit_);
        } catch (const std::exception& e) {
            reader_error_ = e.what();
            reader_failed_.store(true, std::memory_order_release);
        }
    }

    // Where the reader runs, for apart_share: its CPU at every 16th run of bytes (a
    // nanosecond through rseq, too much for every 64-byte run), stored only when it changed.
    void note_where_the_reader_runs() {
        if (reader_runs_++ % 16 != 0) return;
        const int cpu = sched_getcpu();
        if (reader_at_.cpu.load(std::memory_order_relaxed) != cpu) reader_at_.cpu.store(cpu, std::memory_order_relaxed);
    }
    // The writer, every poll_every chunks: was the reader last seen on another CPU?
    void look_where_the_reader_runs() {
        const int reader = reader_at_.cpu.load(std::memory_order_relaxed);
        const int writer = sched_getcpu();
        if (reader < 0 || writer < 0) return;
        ++looks_;
        if (reader != writer) ++apart_looks_;
    }

    // Until the reader has every byte written, or stop. Polls, as the pool suite's producer
    // does: a reader that signalled the writer would add a shared write to every chunk.
    void wait_for_reader(const std::atomic<bool>& stop) const {
        end_wait pace;
        for (;;) {
            if (received_.bytes.load(std::memory_order_acquire) >= written_) return;
            if (stop.load(std::memory_order_relaxed) || reader_failed_.load(std::memory_order_relaxed)) return;
            pace.step();
        }
    }

    // The writer's stop flag, for the watchdog: set for the length of run() only (the flag
    // lives in the harness's repetition).
    void set_watched(const std::atomic<bool>* stop) {
        if constexpr (has_watchdog) {
            std::lock_guard lk(watch_m_);
            watched_ = stop;
        }
    }
    // Every 10 ms: once stop is up, cancel whatever wait the writer is in (again each tick,
    // since a canceled flush may be followed by one more before the writer polls stop).
    void watch_loop() {
        std::unique_lock lk(watch_m_);
        while (!watch_quit_) {
            watch_cv_.wait_for(lk, std::chrono::milliseconds(10));
            if constexpr (has_watchdog)
                if (watched_ && watched_->load(std::memory_order_relaxed)) transport_.cancel_writer();
        }
    }

    struct alignas(contend::cache_line_size) published {
        std::atomic<std::uint64_t> bytes{0};
        std::atomic<std::uint64_t> a{0};
        std::atomic<std::uint64_t> b{0};
    };

    const std::size_t chunk_;
    const pattern_source source_;
    std::uint64_t written_ = 0;  // bytes, since the workload started: the writer's only
    std::uint64_t rep_chunks_ = 0;
    double cpu_ns_ = 0;
    std::string writer_error_;
    published received_;  // written by the reader thread only
    // The reader's CPU (-1 until seen), on a line of its own: the writer reads it while the
    // reader writes received_.
    struct alignas(contend::cache_line_size) place {
        std::atomic<int> cpu{-1};
    };
    place reader_at_;
    std::uint64_t reader_runs_ = 0;  // the reader thread's
    std::uint64_t looks_ = 0, apart_looks_ = 0;  // the writer's, this repetition
    stream_sum sum_;  // the reader thread's
    std::string reader_error_;  // written before reader_failed_ is raised
    std::atomic<bool> reader_failed_{false};
    std::atomic<bool> quit_{false};
    std::mutex watch_m_;
    std::condition_variable watch_cv_;
    const std::atomic<bool>* watched_ = nullptr;
    bool watch_quit_ = false;
    Transport transport_;
    clockid_t reader_clock_ = CLOCK_THREAD_CPUTIME_ID;
    std::thread reader_;
    std::thread watchdog_;
};

}  // namespace contend::lab::pipe_bench
