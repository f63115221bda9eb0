// contend::pipe: callbacks and coroutines, inline and on a thread_pool (after
// System.IO.Pipelines' ReadAsyncCompletionTests).
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

// --- Callbacks -------------------------------------------------------------------------

TEST(PipeAsync, FlushAsyncRunsItsCallbackInlineWhenItCanCompleteAtOnce) {
    flush_probe probe;
    byte_pipe p;
    commit(p.writer(), 100);
    probe.start(p.writer());
    ASSERT_TRUE(probe.done.load());
    EXPECT_EQ(probe.thread, std::this_thread::get_id());
    EXPECT_EQ(p.stats().bytes_written, 100u);
}

TEST(PipeAsync, WithoutASchedulerCallbacksRunOnTheThreadThatCompletesThem) {
    watchdog dog(60s);
    read_probe read;
    flush_probe flush;
    byte_pipe p;
    read.start(p.reader());
    EXPECT_FALSE(read.done.load());
    std::thread::id writer_id;
    std::thread writer([&] {
        writer_id = std::this_thread::get_id();
        write_text(p.writer(), "hello");
    });
    writer.join();
    ASSERT_TRUE(eventually([&] { return read.done.load(); }, 30s));
    EXPECT_EQ(read.thread, writer_id);
    EXPECT_EQ(read.pool, nullptr);
    EXPECT_EQ(text_of(read.result.buffer), "hello");
    p.reader().advance_to(read.result.buffer.end());

    commit(p.writer(), pause_bytes);
    flush.start(p.writer());
    ASSERT_FALSE(flush.done.load());
    std::thread::id reader_id;
    std::thread reader([&] {
        reader_id = std::this_thread::get_id();
        const read_result r = p.reader().read();
        p.reader().advance_to(r.buffer.end());
    });
    reader.join();
    ASSERT_TRUE(eventually([&] { return flush.done.load(); }, 30s));
    EXPECT_EQ(flush.thread, reader_id);
}

TEST(PipeAsync, WithAPoolSchedulerCallbacksRunOnItsWorkers) {
    watchdog dog(60s);
    read_probe read;
    flush_probe flush;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    o.reader_scheduler = &pool;
    o.writer_scheduler = &pool;
    byte_pipe p(o);
    read.start(p.reader());
    write_text(p.writer(), "pooled");
    ASSERT_TRUE(eventually([&] { return read.done.load(); }, 30s));
    EXPECT_EQ(read.pool, &pool);
    EXPECT_EQ(text_of(read.result.buffer), "pooled");
    p.reader().advance_to(read.result.buffer.end());

    commit(p.writer(), pause_bytes);
    flush.start(p.writer());
    ASSERT_FALSE(flush.done.load());
    const read_result r = p.reader().read();
    p.reader().advance_to(r.buffer.end());
    ASSERT_TRUE(eventually([&] { return flush.done.load(); }, 30s));
    EXPECT_EQ(flush.pool, &pool);
    EXPECT_FALSE(flush.result.is_completed);
    pool.wait_idle();
}

// --- Coroutines ------------------------------------------------------------------------

namespace {

struct coroutine_log {
    std::atomic<bool> done{false};
    std::uint64_t bytes = 0;
    fnv1a hash;
    std::vector<std::thread::id> resumed_on;  // the thread after each co_await
    int off_pool = 0;  // resumptions not on the expected pool
    std::string error;
};

fire_and_forget read_all(pipe_reader& reader, thread_pool* pool, coroutine_log& log) {
    for (;;) {
        const read_result r = co_await reader.read_awaitable();
        log.resumed_on.push_back(std::this_thread::get_id());
        if (pool && thread_pool::current() != pool) ++log.off_pool;
        for (const auto s : r.buffer.segments()) log.hash.add(s);
        log.bytes += r.buffer.size();
        reader.advance_to(r.buffer.end());
        if (r.is_completed || r.is_canceled) break;
    }
    log.done.store(true);
}

fire_and_forget write_all(pipe_writer& writer, std::uint64_t total, thread_pool* pool, coroutine_log& log) {
    splitmix64 rng{11};
    while (log.bytes < total) {
        // A whole pause threshold per flush: every flush pauses, so every co_await suspends.
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(pause_bytes, total - log.bytes));
        const auto span = writer.get_span(n).first(n);
        rng.fill(span);
        log.hash.add(span);
        writer.advance(n);
        log.bytes += n;
        const flush_result r = co_await writer.flush_awaitable();
        log.resumed_on.push_back(std::this_thread::get_id());
        if (pool && thread_pool::current() != pool) ++log.off_pool;
        if (r.is_completed || r.is_canceled) break;
    }
    writer.complete();
    log.done.store(true);
}

fire_and_forget read_expecting_error(pipe_reader& reader, coroutine_log& log) {
    try {
        const read_result r = co_await reader.read_awaitable();
        log.error = "no error; read " + std::to_string(r.buffer.size()) + " bytes";
        reader.advance_to(r.buffer.end());
    } catch (const std::runtime_error& e) {
        log.error = e.what();
    }
    log.done.store(true);
}
}  // namespace

class PipeCoroutines : public ::testing::TestWithParam<bool> {};  // true: with a thread_pool

TEST_P(PipeCoroutines, AReaderCoroutineResumesOnTheWriterThreadOrThePool) {
    watchdog dog(120s);
    const bool pooled = GetParam();
    const std::uint64_t total = 4u << 20;
    coroutine_log log;
    fnv1a sent;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    if (pooled) o.reader_scheduler = &pool;
    byte_pipe p(o);
    read_all(p.reader(), pooled ? &pool : nullptr, log);  // the pipe is empty: it suspends
    std::thread::id writer_id;
    std::thread writer([&] {
        writer_id = std::this_thread::get_id();
        splitmix64 rng{5};
        std::vector<std::byte> chunk;
        for (std::uint64_t done = 0; done < total;) {
            chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(rng.chunk(20'000), total - done)));
            rng.fill(chunk);
            sent.add(chunk);
            if (p.writer().write(chunk).is_completed) break;
            done += chunk.size();
        }
        p.writer().complete();
    });
    writer.join();
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 60s)) << "the reader coroutine did not finish";
    EXPECT_EQ(log.bytes, total);
    EXPECT_EQ(log.hash.value, sent.value);
    ASSERT_FALSE(log.resumed_on.empty());
    if (pooled) {
        EXPECT_EQ(log.off_pool, 0) << "of " << log.resumed_on.size() << " resumptions";
    } else {
        EXPECT_EQ(log.resumed_on.front(), writer_id) << "inline: the first read completes in the writer's flush";
    }
    pool.wait_idle();
}

TEST_P(PipeCoroutines, AWriterCoroutineResumesOnTheReaderThreadOrThePool) {
    watchdog dog(120s);
    const bool pooled = GetParam();
    const std::uint64_t total = 4u << 20;
    coroutine_log log;
    fnv1a received;
    std::uint64_t received_bytes = 0;
    thread_pool pool(fixed_pool(2));
    pipe_options o;
    if (pooled) o.writer_scheduler = &pool;
    byte_pipe p(o);
    write_all(p.writer(), total, pooled ? &pool : nullptr, log);  // 64 KiB: the first flush pauses
    std::thread::id reader_id;
    std::thread reader([&] {
        reader_id = std::this_thread::get_id();
        for (;;) {
            const read_result r = p.reader().read();
            for (const auto s : r.buffer.segments()) received.add(s);
            received_bytes += r.buffer.size();
            p.reader().advance_to(r.buffer.end());
            if (r.is_completed) break;
        }
    });
    reader.join();
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 60s)) << "the writer coroutine did not finish";
    EXPECT_EQ(received_bytes, total);
    EXPECT_EQ(received.value, log.hash.value);
    EXPECT_EQ(log.resumed_on.size(), total / pause_bytes);
    if (pooled) {
        EXPECT_EQ(log.off_pool, 0) << "of " << log.resumed_on.size() << " resumptions";
    } else {
        const auto elsewhere = std::count_if(log.resumed_on.begin(), log.resumed_on.end(),
                                             [&](std::thread::id t) { return t != reader_id; });
        EXPECT_EQ(elsewhere, 0) << "inline: each paused flush resumes in the reader's advance_to";
    }
    pool.wait_idle();
}

INSTANTIATE_TEST_SUITE_P(Schedulers, PipeCoroutines, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Pool" : "Inline"; });

TEST(PipeCoroutine, TheReadAwaitableRethrowsTheWritersError) {
    watchdog dog(30s);
    coroutine_log log;
    byte_pipe p;
    read_expecting_error(p.reader(), log);
    EXPECT_FALSE(log.done.load());
    p.writer().complete(std::make_exception_ptr(std::runtime_error("broken")));
    ASSERT_TRUE(eventually([&] { return log.done.load(); }, 10s));
    EXPECT_EQ(log.error, "broken");
}

namespace {
// The stack address of the code running the coroutine body at this point: a co_await that
// completes at once must not leave it deeper each time.
[[gnu::noinline]] std::uintptr_t stack_here() { return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)); }

struct stack_span {
    std::uintptr_t low = UINTPTR_MAX, high = 0;
    void note() {
        const std::uintptr_t at = stack_here();
        low = std::min(low, at);
        high = std::max(high, at);
    }
};

fire_and_forget flush_many(pipe_writer& writer, int times, stack_span& stack, coroutine_log& log) {
    const std::byte one{1};
    for (int i = 0; i < times; ++i) {
        const auto span = writer.get_span(1);
        span[0] = one;
        writer.advance(1);
        (void)co_await writer.flush_awaitable();
        stack.note();
    }
    log.done.store(true);
}

fire_and_forget read_many(pipe_reader& reader, int times, stack_span& stack, coroutine_log& log) {
    for (int i = 0; i < times; ++i) {
        const read_result r = co_await reader.read_awaitable();
        stack.note();
        reader.advance_to(r.buffer.position(1));  // one byte; the rest is ready for the next read
    }
    log.done.store(true);
}
}  // namespace

// An awaitable whose operation completes at once resumes the coroutine without nesting:
// 2,000 such co_awaits in a row must not move the stack (nested, they would take
// hundreds of kilobytes, and a long enough stream would overflow it).
TEST(PipeCoroutine, AwaitingFlushesAndReadsThatCompleteAtOnceDoesNotNestOnTheStack) {
    watchdog dog(60s);
    constexpr int times = 2'000;
    coroutine_log flushed, read;
    stack_span flush_stack, read_stack;
    byte_pipe p(never_pausing());
    flush_many(p.writer(), times, flush_stack, flushed);
    ASSERT_TRUE(flushed.done.load()) << "every flush could complete at once";
    EXPECT_LT(flush_stack.high - flush_stack.low, 64u * 1024) << "the stack grew with each flush_awaitable";
    read_many(p.reader(), times, read_stack, read);
    ASSERT_TRUE(read.done.load()) << "every read had data at once";
    EXPECT_LT(read_stack.high - read_stack.low, 64u * 1024) << "the stack grew with each read_awaitable";
}
