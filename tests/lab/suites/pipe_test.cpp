// The pipe suite: its rows, every transport's bytes and checksum, the checksum itself, and a
// transport that corrupts or loses a chunk failing the check.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../../test_support.hpp"
#include "measure/harness.hpp"
#include "suites/pipe_workload.hpp"
#include "suites/suites.hpp"
#include "suites_support.hpp"

using namespace contend_test::suites;

// --- the pipe suite ---------------------------------------------------------------------------

TEST(PipeSuite, ListsEveryTransportAtEveryChunkUnderTheDesignRowNames) {
    const auto* s = lab::find_suite("pipe");
    ASSERT_NE(s, nullptr);
    std::vector<std::string> transports = {"contend",    "contend_std_mutex", "mutex_ring",
                                           "socketpair", "spsc_ideal",        "memcpy"};
    if (peer_built_in("rwq")) transports.push_back("readerwriterqueue");
    std::set<std::string> rows;
    for (const auto& c : s->contenders) {
        EXPECT_NE(std::find(transports.begin(), transports.end(), c.name), transports.end()) << c.name;
        EXPECT_FALSE(c.is_lock) << c.id();
        EXPECT_EQ(c.operation, "chunk") << c.id();
        lab::cell_result cell;
        cell.suite = "pipe";
        cell.contender = c.name;
        cell.params = c.params;
        cell.workers = 2;
        rows.insert(cell.name());
    }
    for (const auto& t : transports)
        for (const char* chunk : {"64", "4096", "65536"}) {
            const std::string row = "pipe/" + t + "/chunk:" + chunk + "/workers:2";
            EXPECT_EQ(rows.count(row), 1u) << row;
        }
    EXPECT_EQ(rows.count("pipe/contend/chunk:4096/busy_loops:1/busy_nice:19/workers:2"), 1u) << "beside a busy loop";
    for (const char* t : {"contend", "mutex_ring", "socketpair"}) {
        EXPECT_EQ(rows.count("pipe/" + std::string(t) + "/chunk:4096/busy_loops:1/busy_nice:0/workers:2"), 1u)
            << t << " beside a nice-0 busy loop";
        EXPECT_EQ(rows.count("pipe/" + std::string(t) + "/chunk:4096/reader:count/one_cpu:yes/workers:2"), 1u)
            << t << ": the natural pattern on one CPU";
    }
    EXPECT_EQ(s->contenders.size(), transports.size() * 3 + 1 + 3 + 3);
    EXPECT_EQ(s->default_workers, std::vector<std::int32_t>{2}) << "one writer and one reader";
}

TEST(PipeSuite, EveryContenderDeliversItsBytesWithTheirChecksumAndReportsBytesPerSecond) {
    const auto* s = lab::find_suite("pipe");
    ASSERT_NE(s, nullptr);
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell_in_process(c, "pipe", 2, quick_pool_options());
        ASSERT_TRUE(cell.valid()) << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_GT(cell.metric("bytes_per_second"), 0) << c.id();
        EXPECT_GT(cell.cpu_ns_per_op, 0) << c.id();
        const bool is_pipe = c.name == "contend" || c.name == "contend_std_mutex";
        EXPECT_EQ(std::isnan(cell.metric("contentions_per_second")), !is_pipe) << c.id();
        const double apart = cell.metric("apart_share");
        if (c.name == "memcpy") {
            EXPECT_TRUE(std::isnan(apart)) << c.id() << ": one thread, no reader";
        } else {
            EXPECT_GE(apart, 0) << c.id();
            EXPECT_LE(apart, 1) << c.id();
        }
        const bool one_cpu = std::any_of(c.params.begin(), c.params.end(),
                                         [](const auto& p) { return p.first == "one_cpu" && p.second == "yes"; });
        if (one_cpu) {
            EXPECT_EQ(apart, 0) << c.id() << ": both threads on one CPU";
        }
    }
}

TEST(PipeSuite, TheChecksumDependsOnTheBytesInOrderNotOnHowTheyArrive) {
    std::vector<std::byte> bytes(1000);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + i / 256);
    lab::pipe_bench::stream_sum whole, pieces;
    whole.update(bytes);
    for (std::size_t at = 0, step = 1; at < bytes.size(); at += step, step = step % 13 + 2)
        pieces.update(std::span(bytes).subspan(at, std::min(step, bytes.size() - at)));
    EXPECT_EQ(pieces.bytes(), 1000u);
    EXPECT_EQ(pieces.a(), whole.a());
    EXPECT_EQ(pieces.b(), whole.b());
    auto flipped = bytes;
    flipped[517] ^= std::byte{0x10};
    lab::pipe_bench::stream_sum one_wrong;
    one_wrong.update(flipped);
    EXPECT_NE(one_wrong.a(), whole.a());
    auto swapped = bytes;
    std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 64);  // two words trade places
    lab::pipe_bench::stream_sum reordered;
    reordered.update(swapped);
    EXPECT_EQ(reordered.a(), whole.a());
    EXPECT_NE(reordered.b(), whole.b());
    // What check() expects of a stream of 2.5 patterns, computed in whole periods, is what a
    // reader sums byte by byte.
    const lab::pipe_bench::pattern_source source;
    const std::uint64_t total = 5 * lab::pipe_bench::pattern_bytes / 2;
    lab::pipe_bench::stream_sum read;
    for (std::uint64_t at = 0; at < total; at += 4096) read.update({source.at(at), 4096});
    const auto expected = source.expected(total);
    EXPECT_EQ(expected.bytes(), total);
    EXPECT_EQ(expected.a(), read.a());
    EXPECT_EQ(expected.b(), read.b());
}

namespace {
// A transport that hands whole chunks over a locked deque and, once armed, corrupts one byte
// of the next chunk or loses it: the suite's check must catch both, and a writer that waits
// for lost bytes must come back when the harness says stop.
class faulty_stream {
public:
    enum class fault { none, corrupt, corrupt_last, lose };
    static inline std::atomic<fault> armed{fault::none};
    explicit faulty_stream(std::size_t) {}
    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>&) {
        std::vector<std::byte> copy(chunk.begin(), chunk.end());
        const fault now = armed.exchange(fault::none);
        if (now == fault::lose) return chunk.size();
        if (now == fault::corrupt) copy[copy.size() / 2] ^= std::byte{1};
        if (now == fault::corrupt_last) copy.back() ^= std::byte{1};
        {
            std::lock_guard lk(m_);
            queue_.push_back(std::move(copy));
        }
        cv_.notify_one();
        return chunk.size();
    }
    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        std::unique_lock lk(m_);
        for (;;) {
            if (queue_.empty()) {
                if (closed_ || quit.load()) return;
                cv_.wait_for(lk, std::chrono::milliseconds(10));
                continue;
            }
            const std::vector<std::byte> chunk = std::move(queue_.front());
            queue_.pop_front();
            lk.unlock();
            sink(std::span<const std::byte>(chunk));
            lk.lock();
        }
    }
    void close() {
        {
            std::lock_guard lk(m_);
            closed_ = true;
        }
        cv_.notify_all();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::vector<std::byte>> queue_;
    bool closed_ = false;
};
using faulty_stream_workload = lab::pipe_bench::stream_throughput<faulty_stream>;
}  // namespace

TEST(PipeSuite, ACorruptedByteFailsTheChecksum) {
    faulty_stream_workload w(64);
    std::uint64_t done = 0;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    ASSERT_EQ(done, 100u);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_stream::armed = faulty_stream::fault::corrupt;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    EXPECT_EQ(done, 100u);
    EXPECT_EQ(w.check({done}).status, "checksum_mismatch");
}

// The natural pattern's reader (reader:count) checks each run's first and last byte, not a
// sum: a wrong last byte, and a lost chunk (the next one arrives at the wrong offset), fail
// the cell.
TEST(PipeSuite, TheCountingReaderFailsTheCellOnAWrongEndByteOrALostChunk) {
    using counting_workload = lab::pipe_bench::stream_throughput<faulty_stream, true>;
    for (const auto fault : {faulty_stream::fault::corrupt_last, faulty_stream::fault::lose}) {
        counting_workload w(64);
        std::uint64_t done = 0;
        timed_repetition(w, 100, std::chrono::seconds(20), done);
        ASSERT_EQ(done, 100u);
        ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
        faulty_stream::armed = fault;
        timed_repetition(w, 100, std::chrono::milliseconds(500), done);
        const auto result = w.check({done});
        EXPECT_EQ(result.status, "reader_failed") << result.detail;
        EXPECT_NE(result.detail.find("are not the bytes written"), std::string::npos) << result.detail;
    }
}

namespace {
void pin_this_thread(int cpu) { ASSERT_TRUE(contend_test::pin_this_thread_to(cpu)) << "CPU " << cpu; }

double apart_share_of(lab::workload& w, std::uint64_t done) {
    const std::vector<std::uint64_t> per_worker{done};
    lab::repetition_facts facts;
    facts.wall_ns = 1e6;
    facts.completed = done;
    facts.per_worker = &per_worker;
    lab::metric_list metrics;
    w.measure(facts, metrics);
    for (const auto& [name, value] : metrics)
        if (name == "apart_share") return value;
    return -1;
}
}  // namespace

// apart_share: a reader started on one CPU (the workload's reader thread takes the mask of
// the thread that constructs it) and a writer on another give nearly 1, since the writer's
// looks before the reader's first run find no CPU yet and do not count; both on one CPU, 0.
TEST(PipeSuite, TheShareOfTheWritersLooksThatFoundItsReaderOnAnotherCpuIsReported) {
    const auto cpus = contend_test::two_allowed_cpus();
    if (cpus[1] < 0) GTEST_SKIP() << "needs two CPUs, this process may use one";
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    struct restore_mask {
        cpu_set_t mask;
        ~restore_mask() { sched_setaffinity(0, sizeof mask, &mask); }
    } restore{allowed};
    for (const int reader_cpu : {cpus[1], cpus[0]}) {
        std::uint64_t done = 0;
        double apart = -1;
        {
            pin_this_thread(reader_cpu);
            faulty_stream_workload w(4096);
            pin_this_thread(cpus[0]);  // the writer
            timed_repetition(w, 64 * 64, std::chrono::seconds(20), done);
            ASSERT_EQ(done, 64u * 64u);
            ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
            apart = apart_share_of(w, done);
        }
        if (reader_cpu == cpus[0]) {
            EXPECT_EQ(apart, 0) << "writer and reader on CPU " << cpus[0];
        } else {
            EXPECT_GT(apart, 0.9) << "writer on CPU " << cpus[0] << ", reader on " << reader_cpu;
        }
    }
}

TEST(PipeSuite, ALostChunkEndsTheRepetitionAtTheDeadlineAndFailsTheCheck) {
    faulty_stream_workload w(4096);
    std::uint64_t done = 0;
    timed_repetition(w, 10, std::chrono::seconds(20), done);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_stream::armed = faulty_stream::fault::lose;
    const double seconds = timed_repetition(w, 10, std::chrono::milliseconds(200), done);
    EXPECT_GE(seconds, 0.15) << "the writer waited for the lost chunk";
    EXPECT_LT(seconds, 10);
    EXPECT_EQ(w.check({done}).status, "bytes_lost");
}
