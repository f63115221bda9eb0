// contend::pipe: flushes without the fence. A reader that keeps up with a stream lets the
// writer's flushes go without their full barrier, and its next wait puts the barrier back
// with a process-wide one before it looks for bytes again (src/pipe/pipe.cpp, top). What can
// go wrong is a reader asleep through a flush: every wait here is bounded, so a lost wake-up
// fails the test instead of hanging it.
#include "pipe_support.hpp"

#include <vector>

#include "platform/heavy_fence.hpp"

using namespace contend_test;
using namespace pipe_test;

namespace {

// A reader thread that takes everything, counts it and publishes its kernel id.
class counting_reader {
public:
    explicit counting_reader(byte_pipe& p)
        : p_(p),
          thread_(
              [this] {
                  tid_.publish();
                  for (;;) {
                      const read_result r = p_.reader().read();
                      for (const auto s : r.buffer.segments()) sum_.add(s);
                      received_.store(received_.load(std::memory_order_relaxed) + r.buffer.size(),
                                      std::memory_order_release);
                      p_.reader().advance_to(r.buffer.end());
                      if (r.is_completed) break;
                  }
              },
              [this] { p_.writer().complete(); }) {}
    std::uint64_t received() const { return received_.load(std::memory_order_acquire); }
    int tid() const { return tid_.get(); }
    void join() { thread_.join(); }
    const fnv1a& sum() const { return sum_; }

private:
    byte_pipe& p_;
    tid_box tid_;
    std::atomic<std::uint64_t> received_{0};
    fnv1a sum_;
    side_thread thread_;
};

// A pipe, its counting reader, and what the test wrote into it.
struct stream_rig {
    explicit stream_rig(std::uint64_t seed) : rng{seed} {}
    // One chunk of n random bytes, flushed.
    void write(std::size_t n) {
        const auto span = p.writer().get_span(n).first(n);
        rng.fill(span);
        sent.add(span);
        p.writer().advance(n);
        p.writer().flush();
        written += n;
    }
    bool all_read() {
        return eventually([&] { return reader.received() == written; });
    }
    void finish() {
        p.writer().complete();
        reader.join();
        EXPECT_EQ(reader.sum().value, sent.value);
    }

    byte_pipe p;
    counting_reader reader{p};
    splitmix64 rng;
    fnv1a sent;
    std::uint64_t written = 0;
    const bool available = contend::internal::heavy_fence_available();
};

}  // namespace

// Small flushes to a reader that keeps up lift the fence (where the process-wide barrier is
// at hand; never elsewhere). Once the writer stops, the reader waits, and a waiting reader has
// put back every lift: the counts are equal. The next flush still wakes it.
TEST(PipeFence, AReaderThatKeepsUpLiftsTheFlushFenceAndItsWaitPutsItBack) {
    watchdog dog(120s);
    stream_rig rig(3);
    // Bounded: 30 s of streaming at most (a loaded machine makes the reader wait now and
    // then, which only starts its count again).
    const auto until = steady::now() + 30s;
    while (rig.p.stats().flush_fence_lifts == 0 && steady::now() < until &&
           (rig.available || rig.written < (8u << 20))) {
        for (int i = 0; i < 1000; ++i) rig.write(64);
    }
    if (!rig.available) {
        EXPECT_EQ(rig.p.stats().flush_fence_lifts, 0u) << "no process-wide barrier here: flushes keep their fence";
    } else {
        ASSERT_GE(rig.p.stats().flush_fence_lifts, 1u) << "a reader that kept up never lifted the fence";
    }
    ASSERT_TRUE(rig.all_read()) << "the reader missed a flush";
    ASSERT_TRUE(eventually_blocked({rig.reader.tid()})) << "the reader never went to sleep on an empty pipe";
    const contend::pipe_stats asleep = rig.p.stats();
    EXPECT_EQ(asleep.flush_fence_restores, asleep.flush_fence_lifts) << "a reader waits with the fence lifted";
    rig.write(64);
    EXPECT_TRUE(rig.all_read()) << "the flush after the stream was lost";
    rig.finish();
}

// The race the barrier is for: bursts of small flushes, each ended by a pause long enough
// for the reader to go to sleep, so that the reader's wait meets the burst's last flush
// again and again, with the fence lifted in many of them (at least one, or the test fails).
// The writer yields after each flush, so that on one CPU too the reader reads each chunk on
// its own (it lifts the fence after a number of reads, not of bytes). Every burst must arrive.
TEST(PipeFence, AReaderThatWaitsRightAfterAStreamMissesNoFlush) {
    watchdog dog(240s);
    stream_rig rig(7);
    const int bursts = under_sanitizer ? 200 : 2000;
    // Past `bursts`, on until the fence was lifted at least once (bounded: 60 s in all).
    const auto until = steady::now() + 60s;
    for (int b = 0; b < bursts || (rig.available && rig.p.stats().flush_fence_lifts == 0 && steady::now() < until);
         ++b) {
        const int chunks = 600 + static_cast<int>(rig.rng.chunk(600));
        for (int i = 0; i < chunks; ++i) {
            rig.write(64);
            std::this_thread::yield();
        }
        ASSERT_TRUE(rig.all_read()) << "burst " << b << ": the reader slept through a flush (" << rig.reader.received()
                                    << " of " << rig.written << " bytes)";
        // Somewhere from at once to past the reader's 40 us poll, so that its wait begins
        // anywhere around the next burst's first flush.
        const auto pause = std::chrono::microseconds(rig.rng.chunk(80));
        for (const auto end = steady::now() + pause; steady::now() < end;) {
        }
    }
    // The bursts met the reader's wait with the fence lifted: once the reader sleeps, every
    // lift has been restored, at least once.
    ASSERT_TRUE(eventually_blocked({rig.reader.tid()})) << "the reader never went to sleep on an empty pipe";
    const contend::pipe_stats s = rig.p.stats();
    if (rig.available) EXPECT_GE(s.flush_fence_restores, 1u);
    else EXPECT_EQ(s.flush_fence_lifts, 0u);
    EXPECT_EQ(s.flush_fence_restores, s.flush_fence_lifts);
    rig.finish();
}
