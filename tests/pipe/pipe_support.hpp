// What every test of contend::pipe uses (tests/pipe/*_test.cpp): small writers and readers,
// probes of async completions, a side thread that cannot outlive its test, a checksum and a
// seeded random stream.
//
// Every wait in these tests is bounded (watchdog or `eventually`); no test asserts how long
// anything takes. A flush left pending is checked with flush_async, whose callback runs,
// without a scheduler, on the thread that lets the flush complete: after that call returns,
// the callback has run, so single-threaded tests can assert it at once.
//
// Declaration order matters: probes first, then a thread_pool, then the pipe, then threads
// (side_thread), so that each goes before what it may still touch.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "contend/pipe.hpp"
#include "contend/thread_pool.hpp"
#include "test_support.hpp"

namespace pipe_test {

using contend::byte_sequence;
using contend::flush_result;
using contend::pipe_error;
using contend::pipe_lock_kind;
using contend::pipe_options;
using contend::pipe_reader;
using contend::pipe_writer;
using contend::read_result;
using contend::sequence_position;
using contend::thread_pool;
using byte_pipe = contend::pipe;  // `pipe` alone would meet POSIX pipe(2)

constexpr std::size_t pause_bytes = 65536;  // pipe_options' defaults
constexpr std::size_t resume_bytes = 32768;

// Commits n bytes of `fill` without flushing.
inline void commit(pipe_writer& w, std::size_t n, unsigned char fill = 0xab) {
    const auto span = w.get_span(n);
    ASSERT_GE(span.size(), n);
    std::memset(span.data(), fill, n);
    w.advance(n);
}

inline flush_result write_text(pipe_writer& w, std::string_view s) {
    return w.write(std::as_bytes(std::span(s.data(), s.size())));
}

inline std::string text_of(const byte_sequence& b) {
    std::string s(b.size(), '\0');
    b.copy_to(std::as_writable_bytes(std::span(s.data(), s.size())));
    return s;
}

inline pipe_options never_pausing() {
    pipe_options o;
    o.pause_writer_threshold = 0;
    o.resume_writer_threshold = 0;
    return o;
}

inline contend::thread_pool_options fixed_pool(std::size_t n) {
    contend::thread_pool_options o;
    o.min_threads = n;
    o.max_threads = n;
    o.hill_climbing = false;
    return o;
}

// Records an async completion: its result, and the thread and pool it ran on.
template <class Result>
struct async_probe {
    std::atomic<bool> done{false};
    Result result{};
    std::thread::id thread{};
    thread_pool* pool = nullptr;
    void record(Result r) {
        result = std::move(r);
        thread = std::this_thread::get_id();
        pool = thread_pool::current();
        done.store(true);
    }
};

struct flush_probe : async_probe<flush_result> {
    void start(pipe_writer& w) {
        w.flush_async([this](flush_result r) { record(r); });
    }
};

struct read_probe : async_probe<read_result> {
    void start(pipe_reader& r) {
        r.read_async([this](read_result rr) { record(std::move(rr)); });
    }
};

// A thread that, if still running when the test leaves (a failed ASSERT), is first
// unblocked (completing the pipe side it waits on) and then joined, so a failure reports
// instead of terminating.
class side_thread {
public:
    side_thread(std::function<void()> body, std::function<void()> unblock)
        : unblock_(std::move(unblock)), thread_(std::move(body)) {}
    ~side_thread() {
        if (thread_.joinable()) {
            unblock_();
            thread_.join();
        }
    }
    void join() { thread_.join(); }

private:
    std::function<void()> unblock_;
    std::thread thread_;
};

struct fnv1a {
    std::uint64_t value = 14695981039346656037ull;
    void add(std::span<const std::byte> bytes) {
        for (const std::byte b : bytes) value = (value ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
    }
};

struct splitmix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    void fill(std::span<std::byte> out) {
        std::size_t i = 0;
        for (; i + 8 <= out.size(); i += 8) {
            const std::uint64_t v = next();
            std::memcpy(out.data() + i, &v, 8);
        }
        if (i < out.size()) {
            const std::uint64_t v = next();
            std::memcpy(out.data() + i, &v, out.size() - i);
        }
    }
    // Sizes spread over every power of two up to `max` (log-uniform), so both one-byte
    // flushes and flushes past the pause threshold happen.
    std::size_t chunk(std::size_t max) {
        const std::size_t bits = static_cast<std::size_t>(next() % 17);
        return std::min<std::size_t>(max, 1 + next() % (std::size_t{1} << bits));
    }
};

}  // namespace pipe_test
