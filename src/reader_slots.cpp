// The rows of visible readers (contend/internal/reader_slots.hpp): claimed from chunks of 64,
// never freed (a writer may be scanning a row while its thread exits), given back at thread
// exit and claimed again by a later thread, so the rows a writer scans are at most the threads
// that read at once, not every thread that ever read.
#include "contend/internal/reader_slots.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <new>

#include "platform/spin_wait.hpp"
#include "platform/yield.hpp"

namespace contend::internal {

thread_local constinit reader_row* this_thread_reader_row __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// The registry's own words are plain atomics, not the model's: a claim happens once per
// thread, before any of its reads, and is not part of the protocol the models explore.
struct row_chunk {
    reader_row rows[64];
    std::atomic<std::uint64_t> claimed{0};  // bit i: rows[i] has an owner
    std::atomic<row_chunk*> next{nullptr};
};

row_chunk first_chunk;

// Gives the row back at thread exit. Constructed by the claim, so only threads that read have
// one; `exited` stops a read made by a later thread_local's destructor from claiming again.
struct row_owner {
    row_chunk* chunk = nullptr;
    unsigned index = 0;
    ~row_owner();
};
thread_local row_owner owner;
thread_local bool exited = false;

row_owner::~row_owner() {
    exited = true;
    this_thread_reader_row = nullptr;
    if (chunk == nullptr) return;
    reader_row& r = chunk->rows[index];
    for (auto& s : r.slot) s.store(nullptr, std::memory_order_release);
    r.countdown = reader_row::look_interval;
    r.sample_countdown = reader_row::sample_interval;  // the next owner starts afresh
    chunk->claimed.fetch_and(~(std::uint64_t{1} << index), std::memory_order_release);
}

template <class Visit>
void for_each_claimed_row(Visit visit) {
    for (row_chunk* c = &first_chunk; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
        // seq_cst: a row claimed before its owner's first biased read (whose slot store and
        // state load are seq_cst) is seen by a writer that revoked the bias since.
        std::uint64_t m = c->claimed.load(std::memory_order_seq_cst);
        while (m != 0) {
            const int i = std::countr_zero(m);
            m &= m - 1;
            visit(c->rows[i]);
        }
    }
}

}  // namespace

reader_row* claim_reader_row() noexcept {
    if (exited) return nullptr;
    for (row_chunk* c = &first_chunk;;) {
        std::uint64_t m = c->claimed.load(std::memory_order_relaxed);
        while (m != ~std::uint64_t{0}) {
            const int i = std::countr_one(m);
            if (c->claimed.compare_exchange_weak(m, m | (std::uint64_t{1} << i), std::memory_order_seq_cst,
                                                 std::memory_order_relaxed)) {
                owner.chunk = c;
                owner.index = static_cast<unsigned>(i);
                this_thread_reader_row = &c->rows[i];
                return &c->rows[i];
            }
        }
        row_chunk* next = c->next.load(std::memory_order_acquire);
        if (next == nullptr) {
            auto* fresh = new (std::nothrow) row_chunk;
            if (fresh == nullptr) return nullptr;
            if (!c->next.compare_exchange_strong(next, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) {
                delete fresh;  // another thread appended one first: use it
            } else {
                next = fresh;
            }
        }
        c = next;
    }
}

bool any_reader_slot_holds(const void* lock) noexcept {
    const std::size_t i = reader_row::index_of(lock);
    bool held = false;
    for_each_claimed_row([&](reader_row& r) {
        if (!held && r.slot[i].load(std::memory_order_acquire) == lock) held = true;
    });
    return held;
}

std::size_t claimed_reader_rows() noexcept {
    std::size_t n = 0;
    for_each_claimed_row([&](reader_row&) { ++n; });
    return n;
}

std::uint32_t reader_slots_holding(const void* lock) noexcept {
    const std::size_t i = reader_row::index_of(lock);
    std::uint32_t n = 0;
    for_each_claimed_row([&](reader_row& r) { n += r.slot[i].load(std::memory_order_acquire) == lock; });
    return n;
}

bool wait_while(function_ref<bool()> busy, deadline until) noexcept {
    if (!busy()) return true;  // the common case, before the poll reads the clock
    spin_wait poll(poll_budget(std::chrono::microseconds(4)));
    while (busy()) {
        if (poll.pause()) continue;
        break;
    }
    // The readers left are in long sections, or not running: sleep in steps that grow from
    // the timer's slack (about 50 us) to 100 us, checking between steps (a longer step only adds to the writer's wait:
    // it overshoots the reader's release by up to a step). Nothing wakes this wait: a reader's release is one store to
    // its own line, and adding a wake to it would cost every read.
    std::chrono::nanoseconds step(1000);
    while (busy()) {
        if (until != no_deadline && clock::now() >= until) return false;
        if constexpr (every_pause_yields) {
            yield_cpu();  // the model-checking build: a scheduling point, 1 us of model time
        } else {
            const auto left = until == no_deadline ? step : std::min<clock::duration>(step, until - clock::now());
            timespec ts{0, static_cast<long>(std::max<clock::duration::rep>(left.count(), 1))};
            nanosleep(&ts, nullptr);
            step = std::min<std::chrono::nanoseconds>(step * 2, std::chrono::microseconds(100));
        }
    }
    return true;
}

}  // namespace contend::internal
