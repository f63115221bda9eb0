// How contend::pipe's sides sleep: on their thread's handoff_sleep, whose wake-up Linux makes
// synchronous (platform/handoff_sleep.hpp), so that a waker alone on its CPU draws the sleeper
// onto it. test_pipe links the futex build, where every thread has one.
#include <cstring>

#include "pipe_support.hpp"
#include "platform/handoff_sleep.hpp"

using namespace pipe_test;

// A reader that finds nothing sleeps until the writer's flush hands off to it, and a writer
// paused at the pause threshold sleeps until the reader's advance does. The wait is long
// (20 ms before the other side acts), so each side polls out its budget and sleeps; the
// hand-offs made count them.
TEST(PipeSleep, BothSidesSleepOnTheirHandoffSleepAndTheOtherSideHandsOffToThem) {
    watchdog dog(60s);
    pipe_options o;
    o.pause_writer_threshold = 4096;
    o.resume_writer_threshold = 1024;
    contend::pipe p(o);
    const std::uint64_t before = contend::internal::handoffs_made();
    side_thread writer(
        [&] {
            std::this_thread::sleep_for(20ms);  // the reader sleeps first
            auto& w = p.writer();
            std::memset(w.get_span(4096).data(), 1, 4096);
            w.advance(4096);
            w.flush();  // hands off to the sleeping reader
            std::memset(w.get_span(4096).data(), 2, 4096);
            w.advance(4096);
            w.flush();  // 8 KiB unexamined: pauses until the reader examines it
            w.complete();
        },
        [&] { p.reader().complete(); });
    auto& r = p.reader();
    read_result got = r.read();
    ASSERT_GE(got.buffer.size(), 4096u);
    const std::uint64_t after_first = contend::internal::handoffs_made();
    EXPECT_GE(after_first - before, 1u) << "the reader's sleep ended without a hand-off";
    std::this_thread::sleep_for(20ms);  // the writer, paused by now or soon, sleeps
    r.advance_to(got.buffer.end());  // a hand-off to the paused writer if it sleeps
    for (;;) {
        got = r.read();
        r.advance_to(got.buffer.end());
        if (got.is_completed) break;
    }
    writer.join();
    EXPECT_GE(contend::internal::handoffs_made() - after_first, 1u) << "the writer's sleep ended without a hand-off";
}
