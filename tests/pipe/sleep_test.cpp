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
// paused at the pause threshold sleeps until the reader's advance does. Each side acts only
// once the other is asleep in the kernel (thread_blocked), so the hand-off that ends each
// sleep is counted however the machine is loaded.
TEST(PipeSleep, BothSidesSleepOnTheirHandoffSleepAndTheOtherSideHandsOffToThem) {
    watchdog dog(60s);
    {
        contend::pipe p;
        std::atomic<std::size_t> got{0};
        tid_box tid;
        side_thread reader(
            [&] {
                tid.publish();
                const read_result r = p.reader().read();
                got.store(r.buffer.size());
                p.reader().advance_to(r.buffer.end());
            },
            [&] { p.writer().complete(); });
        ASSERT_TRUE(eventually([&] { return thread_blocked(tid.get()); }, 30s));
        const std::uint64_t before = contend::internal::handoffs_made();
        write_text(p.writer(), "wake up");
        reader.join();
        EXPECT_EQ(got.load(), std::strlen("wake up"));
        EXPECT_GE(contend::internal::handoffs_made() - before, 1u) << "the reader's sleep ended without a hand-off";
        p.writer().complete();
    }
    pipe_options o;
    o.pause_writer_threshold = 4096;
    o.resume_writer_threshold = 1024;
    contend::pipe p(o);
    std::atomic<bool> flushed{false};
    tid_box tid;
    side_thread writer(
        [&] {
            tid.publish();
            auto& w = p.writer();
            std::memset(w.get_span(8192).data(), 1, 8192);
            w.advance(8192);
            w.flush();  // 8 KiB unexamined: pauses until the reader examines it
            flushed.store(true);
            w.complete();
        },
        [&] { p.reader().complete(); });
    ASSERT_TRUE(eventually([&] { return thread_blocked(tid.get()); }, 30s));
    EXPECT_FALSE(flushed.load()) << "the flush did not pause";
    const std::uint64_t before = contend::internal::handoffs_made();
    for (;;) {
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());  // hands off to the paused writer
        if (r.is_completed) break;
    }
    writer.join();
    EXPECT_TRUE(flushed.load());
    EXPECT_GE(contend::internal::handoffs_made() - before, 1u) << "the writer's sleep ended without a hand-off";
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
// the stream still arrives whole. The writer writes each quarter of the stream once the reader
// is asleep, and never pauses (no threshold), so every hand-off the process would make is to
// the reader: none is made.
TEST(PipeSleep, AReaderWithoutAHandoffSleepGetsEveryByteAsleepOnTheConditionVariable) {
    watchdog dog(60s);
    pipe_options o;
    o.pause_writer_threshold = 0;
    contend::pipe p(o);
    std::size_t received = 0;
    std::atomic<bool> broken{false};
    std::uint64_t before = 0;
    tid_box tid;
    side_thread reader(
        [&] {
            tid.publish();
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
        if (i % 16 == 0) {
            ASSERT_TRUE(eventually([&] { return thread_blocked(tid.get()); }, 30s)) << "never slept";
        }
        write_text(p.writer(), std::string(1000, 'x'));
    }
    p.writer().complete();
    reader.join();
    EXPECT_EQ(received, 64000u);
    EXPECT_EQ(contend::internal::handoffs_made(), before) << "a hand-off to a thread that has no pipe";
}
