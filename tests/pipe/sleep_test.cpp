// How contend::pipe's sides sleep: on their thread's handoff_sleep, whose wake-up Linux makes
// synchronous (platform/handoff_sleep.hpp), so that a waker alone on its CPU draws the sleeper
// onto it. test_pipe links the futex build, where every thread has one.
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <string>

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

// A pthread_cancel sent to a thread asleep in a blocking read does not unwind it from the
// pipe's sleep, where its waker would later hand off to a thread that is gone (and through a
// noexcept function: std::terminate): the pipe's sleep is no cancellation point, as the futex
// sleep it replaced was not. The read returns when data comes. The thread then turns
// cancellation off and returns, so that no cancel ever unwinds it (ASan reports a thread
// that a cancel unwound, wrongly, at its exit).
TEST(PipeSleep, ACancelSentToASleepingReaderDoesNotUnwindItFromThePipesSleep) {
    watchdog dog(60s);
    contend::pipe p;
    std::atomic<bool> returned{false};
    std::atomic<std::size_t> got_bytes{0};
    tid_box tid;
    pthread_t reader{};
    struct shared {
        contend::pipe* p;
        std::atomic<bool>* returned;
        std::atomic<std::size_t>* got;
        tid_box* tid;
    } args{&p, &returned, &got_bytes, &tid};
    ASSERT_EQ(pthread_create(
                  &reader, nullptr,
                  [](void* a) -> void* {
                      auto* s = static_cast<shared*>(a);
                      s->tid->publish();
                      const read_result r = s->p->reader().read();
                      pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
                      s->got->store(r.buffer.size());
                      s->p->reader().advance_to(r.buffer.end());
                      s->returned->store(true);
                      return nullptr;
                  },
                  &args),
              0);
    ASSERT_TRUE(eventually([&] { return thread_blocked(tid.get()); }, 30s));
    ASSERT_EQ(pthread_cancel(reader), 0);
    std::this_thread::sleep_for(20ms);
    write_text(p.writer(), "after the cancel");
    void* status = nullptr;
    ASSERT_EQ(pthread_join(reader, &status), 0);
    EXPECT_NE(status, PTHREAD_CANCELED) << "the cancel unwound the thread from the pipe's sleep";
    EXPECT_TRUE(returned.load());
    EXPECT_EQ(got_bytes.load(), std::strlen("after the cancel"));
    p.writer().complete();
}

// A reader whose thread cannot sleep on a pipe of its own (the program closed its descriptor,
// or there were none left: platform/handoff_sleep.hpp) sleeps on the condition variable, and
// the stream still arrives whole. The writer never pauses (a threshold above the stream), so
// every hand-off the process would make is to the reader: none is made.
TEST(PipeSleep, AReaderWithoutAHandoffSleepGetsEveryByteAsleepOnTheConditionVariable) {
    watchdog dog(60s);
    pipe_options o;
    o.pause_writer_threshold = 0;
    contend::pipe p(o);
    std::size_t received = 0;
    std::atomic<bool> broken{false};
    std::uint64_t before = 0;
    side_thread reader(
        [&] {
            contend::internal::handoff_sleep* const mine = contend::internal::this_thread_handoff_sleep();
            ASSERT_NE(mine, nullptr);
            ASSERT_EQ(::close(contend::internal::handoff_sleep_descriptor(mine)), 0);
            ASSERT_FALSE(contend::internal::sleep_until_handed_off(mine));
            ASSERT_EQ(contend::internal::this_thread_handoff_sleep(), nullptr);
            before = contend::internal::handoffs_made();
            broken.store(true);
            for (;;) {
                const read_result r = p.reader().read();
                received += r.buffer.size();
                p.reader().advance_to(r.buffer.end());
                if (r.is_completed) return;
            }
        },
        [&] { p.writer().complete(); });
    ASSERT_TRUE(eventually([&] { return broken.load(); }, 30s));
    for (int i = 0; i < 64; ++i) {
        if (i % 16 == 0) std::this_thread::sleep_for(5ms);  // the reader sleeps
        write_text(p.writer(), std::string(1000, 'x'));
    }
    p.writer().complete();
    reader.join();
    EXPECT_EQ(received, 64000u);
    EXPECT_EQ(contend::internal::handoffs_made(), before) << "a hand-off to a thread that has no pipe";
}
