// The primitives the suites share: the counter's direct atomics and CAS loops, and the
// platform locks adapted to lock()/unlock(). Internal to the lab.
#pragma once

#include <pthread.h>
#include <threads.h>
#include <time.h>

#include <atomic>
#include <cstdint>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/tsan.hpp"

namespace contend::lab {

// --- direct atomics and CAS loops ---------------------------------------------------
struct fetch_add_relaxed {
    void operator()(std::atomic<std::uint64_t>& c) const { c.fetch_add(1, std::memory_order_relaxed); }
};
struct fetch_add_seq_cst {
    void operator()(std::atomic<std::uint64_t>& c) const { c.fetch_add(1, std::memory_order_seq_cst); }
};
struct cas_weak_loop {
    void operator()(std::atomic<std::uint64_t>& c) const {
        std::uint64_t cur = c.load(std::memory_order_relaxed);
        while (!c.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
        }
    }
};
struct cas_strong_loop {
    void operator()(std::atomic<std::uint64_t>& c) const {
        std::uint64_t cur = c.load(std::memory_order_relaxed);
        while (!c.compare_exchange_strong(cur, cur + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
        }
    }
};
// Strong, not weak: a spurious failure must not cost a trip through the scheduler.
struct cas_backoff_sleep {
    void operator()(std::atomic<std::uint64_t>& c) const {
        std::uint64_t cur = c.load(std::memory_order_relaxed);
        while (!c.compare_exchange_strong(cur, cur + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
            const timespec one{0, 1};
            nanosleep(&one, nullptr);
        }
    }
};

// --- platform locks, adapted to lock()/unlock() -----------------------------------------
struct pthread_mutex_lock_adapter {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    void lock() { pthread_mutex_lock(&m); }
    void unlock() { pthread_mutex_unlock(&m); }
};
struct c11_mtx_adapter {
    mtx_t m;
    c11_mtx_adapter() { mtx_init(&m, mtx_plain); }
    ~c11_mtx_adapter() { mtx_destroy(&m); }
    void lock() {
        mtx_lock(&m);
        contend::internal::tsan_only_acquired(&m);
    }
    void unlock() {
        contend::internal::tsan_only_releasing(&m);
        mtx_unlock(&m);
    }
};

// The event lock of the sleeping-spinlock study: spin, then wait for an event. x86 has no event wait, so
// its wait is a pause loop: a documented bad baseline (on arm64: WFE, and SEV on unlock).
struct event_lock {
    std::atomic<std::uint32_t> state{0};
    void lock() {
        for (;;) {
            if (state.exchange(1, std::memory_order_acquire) == 0) return;
            while (state.load(std::memory_order_relaxed) != 0) {
#if defined(__aarch64__)
                asm volatile("wfe" ::: "memory");
#else
                contend::cpu_relax();
#endif
            }
        }
    }
    void unlock() {
        state.store(0, std::memory_order_release);
#if defined(__aarch64__)
        asm volatile("sev" ::: "memory");
#endif
    }
};

}  // namespace contend::lab
