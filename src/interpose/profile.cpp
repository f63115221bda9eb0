// The lock profile's table, its clock and its file (profile.hpp states the costs).
#include "interpose/profile.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <sched.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "contend/internal/tsan.hpp"
#include "interpose/format/profile_format.hpp"
#include "interpose/helgrind_notes.hpp"
#include "interpose/profile_rwlock.hpp"
#include "interpose/rwlock_layout.hpp"

namespace contend::interpose::profile {

// The file's fields and names, declared once with the reader's (format/profile_format.hpp).
using namespace contend::interpose::profile_format;

// A log-linear histogram of tick counts: exact below 8, then 8 buckets per power of two (each
// under 13 % wide, so a percentile read off it is within about 6 % of the true value).
class histogram {
public:
    static constexpr unsigned sub_bits = 3, sub = 1u << sub_bits, max_exponent = 47;
    static constexpr unsigned buckets = (max_exponent - sub_bits + 2) * sub;

    using counts = std::array<std::uint64_t, buckets>;

    void add(std::uint64_t v) noexcept { counts_[index(v)].fetch_add(1, std::memory_order_relaxed); }
    // Adds this histogram's counts to `to` (the records of one address are one lock).
    void add_to(counts& to) const noexcept {
        for (unsigned i = 0; i < buckets; ++i) to[i] += counts_[i].load(std::memory_order_relaxed);
    }
    void clear() noexcept {
        for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
    }

    // The value below which a share q of the values counted lie (the midpoint of its bucket).
    static double quantile(const counts& counts_, double q) noexcept {
        std::uint64_t total = 0;
        for (const auto c : counts_) total += c;
        if (total == 0) return 0;
        // The nearest rank: the smallest value with at least a share q of the values at or below it.
        const auto rank =
            std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
        std::uint64_t seen = 0;
        for (unsigned i = 0; i < buckets; ++i) {
            seen += counts_[i];
            if (seen >= rank) return midpoint(i);
        }
        return midpoint(buckets - 1);
    }
    // Bucket i's lowest value.
    static double lower_bound(unsigned i) noexcept {
        if (i < sub) return i;
        const unsigned e = i / sub - 1 + sub_bits, s = i % sub;
        return std::ldexp(static_cast<double>(sub + s), static_cast<int>(e - sub_bits));
    }
    // The largest value counted, to its bucket's midpoint; 0 when none was.
    static double largest(const counts& counts_) noexcept {
        for (unsigned i = buckets; i-- > 0;)
            if (counts_[i] != 0) return midpoint(i);
        return 0;
    }

private:
    static unsigned index(std::uint64_t v) noexcept {
        if (v < sub) return static_cast<unsigned>(v);
        const unsigned e = std::min<unsigned>(63 - static_cast<unsigned>(std::countl_zero(v)), max_exponent);
        if (e == max_exponent && (v >> e) > 1) return buckets - 1;
        return (e - sub_bits + 1) * sub + static_cast<unsigned>((v >> (e - sub_bits)) & (sub - 1));
    }
    static double midpoint(unsigned i) noexcept {
        if (i < sub) return i;
        const unsigned e = i / sub - 1 + sub_bits, s = i % sub;
        const double low = std::ldexp(static_cast<double>(sub + s), static_cast<int>(e - sub_bits));
        return low + std::ldexp(0.5, static_cast<int>(e - sub_bits));
    }
    std::array<std::atomic<std::uint64_t>, buckets> counts_{};
};

// The call stacks a lock's sampled contended waits came from: a few distinct stacks, each
// with its waits and their time; a stack that finds the table full is counted as other.
// Written under `lock`, taken only after a release of a sampled wait; read at exit without
// it (a stack's depth is published last, with release).
struct stack_table {
    static constexpr unsigned entries = 6;
    struct entry {
        std::atomic<std::uint8_t> depth{0};  // 0: free
        std::uintptr_t frames[max_stack_frames]{};
        std::atomic<std::uint64_t> samples{0}, wait_ticks{0};
    };
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    entry stacks[entries];
    std::atomic<std::uint64_t> other_samples{0}, other_wait_ticks{0};

    void add(const std::uintptr_t* frames, std::uint8_t depth, std::uint64_t wait) noexcept {
        while (lock.test_and_set(std::memory_order_acquire)) sched_yield();
        entry* slot = nullptr;
        for (auto& e : stacks) {
            const std::uint8_t d = e.depth.load(std::memory_order_relaxed);
            if (d == 0) {
                std::memcpy(e.frames, frames, depth * sizeof *frames);
                e.depth.store(depth, std::memory_order_release);
                slot = &e;
                break;
            }
            if (d == depth && std::memcmp(e.frames, frames, depth * sizeof *frames) == 0) {
                slot = &e;
                break;
            }
        }
        lock.clear(std::memory_order_release);
        auto& samples = slot ? slot->samples : other_samples;
        auto& ticks = slot ? slot->wait_ticks : other_wait_ticks;
        samples.fetch_add(1, std::memory_order_relaxed);
        ticks.fetch_add(wait, std::memory_order_relaxed);
    }
};

struct lock_record {
    std::atomic<const void*> address{nullptr};  // null: a record lost to a racing creator
    std::atomic<const void*> site{nullptr};
    std::atomic<std::uint64_t> acquisitions{0};
    std::atomic<std::uint64_t> contended{0}, wait_ticks{0}, wait_max{0}, timeouts{0};
    std::atomic<std::uint64_t> hold_samples{0}, hold_ticks{0};
    histogram waits, holds;
    // A rwlock's record (profile_rwlock.hpp): the fields above count reads and writes together,
    // these the reads among them; no hold is timed.
    std::atomic<bool> rwlock{false};
    std::atomic<std::uint64_t> read_acquisitions{0}, read_contended{0}, read_wait_ticks{0}, read_timeouts{0};
    stack_table stacks;
};

namespace {

constexpr std::size_t max_records = 4096, max_stripes = 4096;

struct profile_state {
    std::atomic<int> phase{0};  // 0: off, 1: starting, 2: on
    std::uint64_t hold_sample_period = default_hold_sample_period;
    std::uint32_t stack_sample_period = default_stack_sample_period;
    const char* directory = nullptr;
    const char* lock_name = "";  // the lock the process runs on (lock_choice.hpp's name for it)
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;
    timespec start_time{};
    lock_record* records = nullptr;  // max_records of them, mapped at start
    std::atomic<std::size_t> records_used{0};
    lock_record dropped;  // the contentions of locks past the table
    std::atomic<std::uint64_t> locks_dropped{0};
    // The live threads' stripes, and what exited threads counted. Taken by a thread's first
    // acquisition, its exit, and the writer: never on a lock's path.
    std::atomic_flag stripes_lock = ATOMIC_FLAG_INIT;
    stripe* stripes[max_stripes] = {};
    std::uint64_t exited_acquisitions = 0, exited_trylock_busy = 0, exited_reads = 0, exited_writes = 0;
    pthread_key_t exit_key{};
    // `<pid>.running` is made in the profile's folder at the process's first acquisition and
    // removed when its profile is written (or it had none to write): one left at the end is a
    // process whose profile was lost (killed, still running, a write that failed), which
    // contend run reports.
    std::atomic<bool> marker_due{false};
    bool marker_made = false;
    bool forked_child = false;  // a child of fork() that profiles itself (start_again_in_child)
};
constinit profile_state state;

double seconds_between(const timespec& a, const timespec& b) noexcept {
    return static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec) * 1e-9;
}

template <class T>
T* map_array(std::size_t n) noexcept {
    void* p =
        ::mmap(nullptr, sizeof(T) * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // Zero-filled pages are each type's initial state (all-zero atomics and flags).
    return p == MAP_FAILED ? nullptr : static_cast<T*>(p);
}

bool is_ours(const lock_record* r) noexcept {
    return r >= state.records && r < state.records + state.records_used.load(std::memory_order_acquire);
}

// What a lock still counts for its record (all its acquisitions, and of them the reads),
// read without trusting that the lock is still alive: process_vm_readv fails on an unmapped
// page instead of faulting, and the bytes count only if they still point back to this record
// from a mutex of kind 0 or a rwlock of the kind we profile.
struct counts_left {
    std::uint64_t all = 0, reads = 0;
};
template <class Object>
bool copy_of(const void* address, Object& copy) {
    iovec local{&copy, sizeof copy}, remote{const_cast<void*>(address), sizeof copy};
    return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof copy);
}
counts_left residual(const lock_record& r, const void* lock) {
    const auto mine = reinterpret_cast<std::uintptr_t>(&r);
    if (r.rwlock.load(std::memory_order_relaxed)) {
        pthread_rwlock_t copy;
        if (!copy_of(lock, copy) || *rwlock_record_word(&copy) != mine || !rwlock_is_default_private(&copy)) return {};
        const std::uint64_t reads = *rwlock_count_word(&copy, false);
        return {reads + *rwlock_count_word(&copy, true), reads};
    }
    pthread_mutex_t copy;
    if (!copy_of(lock, copy) || *record_word(&copy) != mine || mutex_kind(&copy) != 0) return {};
    return {*count_word(&copy), 0};
}

void clear_record(lock_record& r) noexcept {
    for (auto* c : {&r.acquisitions, &r.contended, &r.wait_ticks, &r.wait_max, &r.timeouts, &r.hold_samples,
                    &r.hold_ticks, &r.read_acquisitions, &r.read_contended, &r.read_wait_ticks, &r.read_timeouts})
        c->store(0, std::memory_order_relaxed);
    r.waits.clear();
    r.holds.clear();
}

}  // namespace

constinit thread_local stripe this_thread_stripe __attribute__((tls_model("initial-exec")));

namespace {

// Under helgrind (docs/interpose.md#helgrind) the lock tells it its happens-before edges, as
// the parking lot's bucket lock does, and its flag, cleared with a plain store, is unchecked.
class stripes_guard {
public:
    stripes_guard() noexcept {
        contend::internal::helgrind_unchecked(&state.stripes_lock, sizeof state.stripes_lock);
        while (state.stripes_lock.test_and_set(std::memory_order_acquire)) sched_yield();
        contend::internal::tsan_acquired(&state.stripes_lock);
    }
    ~stripes_guard() {
        contend::internal::tsan_releasing(&state.stripes_lock);
        state.stripes_lock.clear(std::memory_order_release);
    }
};

// A registered thread's exit (its pthread key's destructor): its counts go to the totals.
void stripe_exits(void* p) noexcept {
    auto* s = static_cast<stripe*>(p);
    apply_pending(*s);
    stripes_guard g;
    state.exited_acquisitions += s->acquisitions();
    state.exited_trylock_busy += s->trylock_busy.load(std::memory_order_relaxed);
    state.exited_reads += s->rwlock_reads.load(std::memory_order_relaxed);
    state.exited_writes += s->rwlock_writes.load(std::memory_order_relaxed);
    for (auto& slot : state.stripes)
        if (slot == s) slot = nullptr;
    // A later destructor of this thread may lock again: it registers anew, and counts from 0.
    s->until_sample.store(0, std::memory_order_relaxed);
    s->gap.store(0, std::memory_order_relaxed);
    s->consumed.store(0, std::memory_order_relaxed);
    s->trylock_busy.store(0, std::memory_order_relaxed);
    s->rwlock_reads.store(0, std::memory_order_relaxed);
    s->rwlock_writes.store(0, std::memory_order_relaxed);
    s->registered = false;
}

// DIR/<pid><suffix>.
std::string file_in_directory(const char* suffix) {
    return std::string(state.directory) + "/" + std::to_string(state.pid) + suffix;
}

void make_running_marker() noexcept {
    char path[4096];
    const int n =
        std::snprintf(path, sizeof path, "%s/%d%s", state.directory, static_cast<int>(state.pid), running_suffix);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path) return;
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
    state.marker_made = fd >= 0;
}

void remove_running_marker() noexcept {
    if (!state.marker_made) return;
    char path[4096];
    const int n =
        std::snprintf(path, sizeof path, "%s/%d%s", state.directory, static_cast<int>(state.pid), running_suffix);
    if (n > 0 && static_cast<std::size_t>(n) < sizeof path) ::unlink(path);
    state.marker_made = false;
}

// A forked child (pthread_atfork; not after vfork or posix_spawn, whose children only exec)
// profiles itself from the fork on: it has a copy of its parent's counts, which are the
// parent's to write, and its one thread. Each record starts again from zero, less what its
// mutex still counts (that count is the parent's too: at the child's exit the record and its
// mutex add up to the child's own acquisitions). A mutex first contended in the child still
// brings the parent's uncounted acquisitions of it into its new record.
void start_again_in_child() noexcept {
    if (state.phase.load() != 2) return;
    state.stripes_lock.clear();  // another thread may have held it at the fork
    state.pid = ::getpid();
    ::clock_gettime(CLOCK_MONOTONIC, &state.start_time);
    state.start_ticks = ticks();
    const std::size_t records = std::min(state.records_used.load(), max_records);
    for (lock_record* r = state.records; r < state.records + records; ++r) {
        if (r->address.load(std::memory_order_relaxed) == nullptr) continue;
        clear_record(*r);
        const counts_left left = residual(*r, r->address.load(std::memory_order_relaxed));
        r->acquisitions.store(0 - left.all, std::memory_order_relaxed);
        r->read_acquisitions.store(0 - left.reads, std::memory_order_relaxed);
    }
    clear_record(state.dropped);
    state.locks_dropped.store(0);
    for (auto& slot : state.stripes) slot = nullptr;
    state.exited_acquisitions = state.exited_trylock_busy = state.exited_reads = state.exited_writes = 0;
    stripe& s = this_thread_stripe;
    s.until_sample.store(0, std::memory_order_relaxed);
    s.gap.store(0, std::memory_order_relaxed);
    s.consumed.store(0, std::memory_order_relaxed);
    s.trylock_busy.store(0, std::memory_order_relaxed);
    s.rwlock_reads.store(0, std::memory_order_relaxed);
    s.rwlock_writes.store(0, std::memory_order_relaxed);
    s.registered = false;
    s.pending = stripe::note{};
    s.timing = nullptr;
    state.marker_made = false;
    state.marker_due.store(true);
    state.forked_child = true;
}

}  // namespace

void register_stripe(stripe& s) noexcept {
    // The process's first acquisition (after its start, a fork or a failed exec).
    if (state.marker_due.exchange(false, std::memory_order_relaxed)) make_running_marker();
    s.registered = true;
    // Without a free slot (more live threads than the table) the thread's counts reach the
    // totals when it exits.
    {
        stripes_guard g;
        for (auto& slot : state.stripes) {
            if (slot == nullptr) {
                slot = &s;
                break;
            }
        }
    }
    (void)pthread_setspecific(state.exit_key, &s);
}

namespace {
// The gap to this thread's next timed hold: 33 to 96 acquisitions (xorshift; its quality
// hardly matters, a fixed rhythm does).
thread_local std::uint64_t sample_random __attribute__((tls_model("initial-exec"))) = 0;
std::uint64_t next_gap() noexcept {
    std::uint64_t x = sample_random != 0 ? sample_random : (ticks() | 1);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sample_random = x;
    const std::uint64_t period = hold_sample_period();
    return period / 2 + 1 + x % period;
}

// What the holder takes out of the mutex: its count, which then belongs to this thread's
// pending note until it is applied.
std::uint64_t take_count(pthread_mutex_t* m) noexcept {
    const std::uint64_t n = __atomic_load_n(count_word(m), __ATOMIC_RELAXED);
    __atomic_store_n(count_word(m), 0, __ATOMIC_RELAXED);
    return n;
}

// The note a holder makes about r, applied to r after the release: whatever note the thread
// still had about another record is applied first (a thread holding two contended mutexes).
stripe::note& note_for(stripe& s, lock_record* r) noexcept {
    if (s.pending.record != nullptr && s.pending.record != r) apply_pending(s);
    s.pending.record = r;
    return s.pending;
}
}  // namespace

void apply_pending(stripe& s) noexcept {
    stripe::note& n = s.pending;
    lock_record* r = n.record;
    if (r == nullptr) return;
    if (n.acquisitions != 0) r->acquisitions.fetch_add(n.acquisitions, std::memory_order_relaxed);
    if (n.contended) {
        r->contended.fetch_add(1, std::memory_order_relaxed);
        r->wait_ticks.fetch_add(n.wait, std::memory_order_relaxed);
        std::uint64_t max = r->wait_max.load(std::memory_order_relaxed);
        while (n.wait > max && !r->wait_max.compare_exchange_weak(max, n.wait, std::memory_order_relaxed)) {
        }
        r->waits.add(n.wait);
        if (n.stack_depth != 0) r->stacks.add(n.stack, n.stack_depth, n.wait);
    }
    if (n.held) {
        r->hold_samples.fetch_add(1, std::memory_order_relaxed);
        r->hold_ticks.fetch_add(n.hold, std::memory_order_relaxed);
        r->holds.add(n.hold);
    }
    n = stripe::note{};
}

std::uint64_t hold_sample_period() noexcept { return state.hold_sample_period; }

bool start_next_gap(stripe& s) noexcept {
    if (!s.registered) register_stripe(s);
    // This acquisition ends the gap: its acquisitions, this one included, become consumed.
    const std::uint64_t left = s.until_sample.load(std::memory_order_relaxed);
    const std::uint64_t done = s.gap.load(std::memory_order_relaxed) - left + 1;
    const std::uint64_t next = next_gap();
    // A writer reading meanwhile (a thread still running at exit) may be a gap off.
    s.consumed.store(s.consumed.load(std::memory_order_relaxed) + done, std::memory_order_relaxed);
    s.gap.store(next, std::memory_order_relaxed);
    s.until_sample.store(next, std::memory_order_relaxed);
    return true;
}

void sample_hold(pthread_mutex_t* m, stripe& s) noexcept {
    lock_record* r = record_of(m);
    if (r == nullptr) return;  // never contended: its holds are not timed
    note_for(s, r).acquisitions += take_count(m);
    s.timing = m;
    s.hold_start = ticks();
}

// The holder's release of the mutex whose hold it times. The mutex's count was taken when the
// hold began, so it is still 0 unless the mutex was acquired since: it was then unlocked by
// another thread (which POSIX leaves undefined for this kind, and glibc allows), and the
// sample, which would span someone else's holds, is dropped.
void end_hold_sample(pthread_mutex_t* m) noexcept {
    const std::uint64_t now = ticks();
    stripe& s = this_stripe();
    s.timing = nullptr;
    lock_record* r = record_of(m);
    if (r == nullptr || __atomic_load_n(count_word(m), __ATOMIC_RELAXED) != 0) return;
    stripe::note& n = note_for(s, r);
    n.held = true;
    n.hold = now - s.hold_start;
}

namespace {
// The record a lock's record word points to, made and installed there if it has none.
lock_record* record_in(std::uintptr_t* word, const void* address, const void* site, bool rwlock) noexcept {
    if (auto* r = reinterpret_cast<lock_record*>(__atomic_load_n(word, __ATOMIC_ACQUIRE))) return r;
    const std::size_t i = state.records_used.load(std::memory_order_relaxed) < max_records
                              ? state.records_used.fetch_add(1, std::memory_order_acq_rel)
                              : max_records;
    if (i >= max_records) {
        state.locks_dropped.fetch_add(1, std::memory_order_relaxed);
        return &state.dropped;  // not installed: the next contention tries again, and fails cheaply
    }
    lock_record* r = &state.records[i];
    r->site.store(site, std::memory_order_relaxed);
    r->rwlock.store(rwlock, std::memory_order_relaxed);
    r->address.store(address, std::memory_order_release);
    std::uintptr_t expected = 0;
    if (__atomic_compare_exchange_n(word, &expected, reinterpret_cast<std::uintptr_t>(r), false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return r;
    r->address.store(nullptr, std::memory_order_release);  // another thread's record won
    return reinterpret_cast<lock_record*>(expected);
}
}  // namespace

lock_record* record_for(pthread_mutex_t* m, const void* site) noexcept {
    return record_in(record_word(m), m, site, false);
}

void contended(pthread_mutex_t* m, lock_record* r, std::uint64_t wait) noexcept {
    stripe& s = this_stripe();
    if (r == &state.dropped) {  // no record: counted in the totals now
        r->contended.fetch_add(1, std::memory_order_relaxed);
        r->wait_ticks.fetch_add(wait, std::memory_order_relaxed);
        return;
    }
    if (s.pending.contended) apply_pending(s);  // a second contended take before a release
    stripe::note& n = note_for(s, r);
    n.acquisitions += take_count(m);
    n.contended = true;
    n.wait = wait;
    n.stack_depth = s.scratch_depth;
    if (s.scratch_depth != 0) std::memcpy(n.stack, s.scratch_stack, s.scratch_depth * sizeof *n.stack);
    s.scratch_depth = 0;
}

namespace {
struct unwinding {
    std::uintptr_t* frames;
    unsigned depth, capacity;
};
_Unwind_Reason_Code collect_frame(_Unwind_Context* context, void* argument) {
    auto& u = *static_cast<unwinding*>(argument);
    const std::uintptr_t ip = _Unwind_GetIP(context);
    if (ip == 0 || u.depth == u.capacity) return _URC_END_OF_STACK;
    u.frames[u.depth++] = ip;
    return _URC_NO_REASON;
}
}  // namespace

void take_stack(const void* site) noexcept {
    stripe& s = this_stripe();
    s.scratch_depth = 0;
    if (state.stack_sample_period == 0 || s.unwinding) return;
    if (s.until_stack > 1) {
        --s.until_stack;
        return;
    }
    s.until_stack = state.stack_sample_period;
    // Our own frames (this function, the lock's entry point) come first: up to 8 more.
    std::uintptr_t raw[max_stack_frames + 8];
    unwinding u{raw, 0, max_stack_frames + 8};
    s.unwinding = true;
    _Unwind_Backtrace(collect_frame, &u);
    s.unwinding = false;
    unsigned from = 0;
    while (from < u.depth && raw[from] != reinterpret_cast<std::uintptr_t>(site)) ++from;
    if (from == u.depth) from = 0;  // the site was not found: keep every frame
    const unsigned depth = std::min<unsigned>(u.depth - from, max_stack_frames);
    std::memcpy(s.scratch_stack, raw + from, depth * sizeof *raw);
    s.scratch_depth = static_cast<std::uint8_t>(depth);
}

void timed_out(lock_record* r, std::uint64_t wait) noexcept {
    r->timeouts.fetch_add(1, std::memory_order_relaxed);
    r->wait_ticks.fetch_add(wait, std::memory_order_relaxed);
}

void retire(pthread_mutex_t* m) noexcept {
    lock_record* r = record_of(m);
    if (!is_ours(r) || r->address.load(std::memory_order_relaxed) != m) return;
    r->acquisitions.fetch_add(take_count(m), std::memory_order_relaxed);
    __atomic_store_n(record_word(m), 0, __ATOMIC_RELEASE);
}

// --- rwlocks (profile_rwlock.hpp) -------------------------------------------------------------

lock_record* rwlock_record_for(pthread_rwlock_t* l, const void* site) noexcept {
    return record_in(rwlock_record_word(l), l, site, true);
}

namespace {
// What the rwlock counted since its record last took it: its two words emptied (exchanged:
// other readers may be adding to the read count meanwhile).
void take_rwlock_counts(pthread_rwlock_t* l, lock_record* r) noexcept {
    const std::uint64_t reads = __atomic_exchange_n(rwlock_count_word(l, false), 0, __ATOMIC_RELAXED);
    const std::uint64_t writes = __atomic_exchange_n(rwlock_count_word(l, true), 0, __ATOMIC_RELAXED);
    r->acquisitions.fetch_add(reads + writes, std::memory_order_relaxed);
    r->read_acquisitions.fetch_add(reads, std::memory_order_relaxed);
}
}  // namespace

void rwlock_contended(pthread_rwlock_t* l, lock_record* r, bool write, std::uint64_t wait) noexcept {
    r->contended.fetch_add(1, std::memory_order_relaxed);
    r->wait_ticks.fetch_add(wait, std::memory_order_relaxed);
    if (!write) {
        r->read_contended.fetch_add(1, std::memory_order_relaxed);
        r->read_wait_ticks.fetch_add(wait, std::memory_order_relaxed);
    }
    if (r == &state.dropped) return;  // no record: counted in the totals only
    take_rwlock_counts(l, r);
    std::uint64_t max = r->wait_max.load(std::memory_order_relaxed);
    while (wait > max && !r->wait_max.compare_exchange_weak(max, wait, std::memory_order_relaxed)) {
    }
    r->waits.add(wait);
}

void rwlock_timed_out(lock_record* r, bool write, std::uint64_t wait) noexcept {
    timed_out(r, wait);
    if (!write) {
        r->read_timeouts.fetch_add(1, std::memory_order_relaxed);
        r->read_wait_ticks.fetch_add(wait, std::memory_order_relaxed);
    }
}

void rwlock_retire(pthread_rwlock_t* l) noexcept {
    auto* r = reinterpret_cast<lock_record*>(__atomic_load_n(rwlock_record_word(l), __ATOMIC_ACQUIRE));
    if (!is_ours(r) || r->address.load(std::memory_order_relaxed) != l || !r->rwlock.load()) return;
    take_rwlock_counts(l, r);
    __atomic_store_n(rwlock_record_word(l), 0, __ATOMIC_RELEASE);
}

bool start_from_environment(const char* lock_name) noexcept {
    const char* dir = std::getenv("CONTEND_INTERPOSE_PROFILE");
    if (dir == nullptr || *dir == '\0') return false;
    int expected = 0;
    if (!state.phase.compare_exchange_strong(expected, 1)) {
        while (state.phase.load() != 2) {
        }
        return true;
    }
    state.directory = dir;
    state.lock_name = lock_name;
    if (const char* period = std::getenv("CONTEND_INTERPOSE_HOLD_SAMPLE_PERIOD"); period != nullptr && *period) {
        char* end = nullptr;
        const unsigned long long p = std::strtoull(period, &end, 10);
        if (*end == '\0' && p >= 2 && p <= (1u << 20)) {
            state.hold_sample_period = p;
        } else {
            static constexpr char msg[] =
                "libcontend_interpose: CONTEND_INTERPOSE_HOLD_SAMPLE_PERIOD is not a whole number from 2 to 1048576; "
                "using 1024\n";
            (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        }
    }
    if (const char* period = std::getenv("CONTEND_INTERPOSE_STACK_SAMPLE_PERIOD"); period != nullptr && *period) {
        char* end = nullptr;
        const unsigned long long p = std::strtoull(period, &end, 10);
        if (*end == '\0' && p <= (1u << 20)) {
            state.stack_sample_period = static_cast<std::uint32_t>(p);
        } else {
            static constexpr char msg[] =
                "libcontend_interpose: CONTEND_INTERPOSE_STACK_SAMPLE_PERIOD is not a whole number from 0 to 1048576; "
                "using 4\n";
            (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        }
    }
    // Under helgrind no stacks: libgcc's unwinder fills its caches with plain writes that no
    // lock orders, which helgrind reports as races in every program profiled.
    if (helgrind::running()) state.stack_sample_period = 0;
    state.pid = ::getpid();
    state.records = map_array<lock_record>(max_records);
    if (state.records == nullptr || pthread_key_create(&state.exit_key, stripe_exits) != 0) {
        static constexpr char msg[] = "libcontend_interpose: no memory for the profile; not profiling\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        state.phase.store(0);
        return false;
    }
    ::clock_gettime(CLOCK_MONOTONIC, &state.start_time);
    state.start_ticks = ticks();
    state.marker_due.store(true);
    (void)::pthread_atfork(nullptr, nullptr, start_again_in_child);
    state.phase.store(2);
    return true;
}

// --- The file --------------------------------------------------------------------------------

namespace {

// Just enough JSON for the profile: the file's reader is contend run (lab/run/).
class json_out {
public:
    void key(const char* k) {
        comma();
        quoted(k);
        text_ += ':';
        value_follows_ = true;
    }
    void string(const char* s) {
        comma();
        quoted(s);
    }
    void number(std::uint64_t v) {
        comma();
        text_ += std::to_string(v);
    }
    void field(const char* k, std::uint64_t v) {
        key(k);
        number(v);
    }
    void real(double v) {
        comma();
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.9g", std::isfinite(v) ? v : 0.0);
        text_ += buf;
    }
    void hex(const void* p) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(p));
        string(buf);
    }
    void open(char c) {
        comma();
        text_ += c;
        first_ = true;
    }
    void close(char c) {
        text_ += c;
        first_ = false;
    }
    const std::string& text() const { return text_; }

private:
    void comma() {
        if (!first_ && !value_follows_) text_ += ',';
        first_ = value_follows_ = false;
    }
    void quoted(const char* s) {
        text_ += '"';
        for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
            if (*p == '"' || *p == '\\') {
                text_ += '\\';
                text_ += static_cast<char>(*p);
            } else if (*p < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", *p);
                text_ += buf;
            } else {
                text_ += static_cast<char>(*p);
            }
        }
        text_ += '"';
    }
    std::string text_;
    bool first_ = true, value_follows_ = false;
};

std::string executable_path() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Where a call site is, for addr2line: the object, and the address in it that addr2line takes.
void write_site(json_out& j, const void* site, const std::string& executable) {
    j.open('{');
    j.key(fields::address);
    j.hex(site);
    Dl_info info{};
    std::string module, function;
    const void* module_address = site;
    if (site != nullptr && ::dladdr(site, &info) != 0) {
        module = info.dli_fname != nullptr ? info.dli_fname : "";
        // The main program's name, as the loader gives it, may be relative or empty.
        if (module.empty() || module.front() != '/') module = executable;
        const auto* header = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
        const bool fixed = header != nullptr && header->e_type == ET_EXEC;
        if (!fixed)
            module_address = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(site) -
                                                           reinterpret_cast<std::uintptr_t>(info.dli_fbase));
        if (info.dli_sname != nullptr) {
            int status = 0;
            char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
            function = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
            std::free(demangled);
        }
    }
    j.key(fields::module);
    j.string(module.c_str());
    j.key(fields::module_address);
    j.hex(module_address);
    j.key(fields::function);
    j.string(function.c_str());
    j.close('}');
}

// One lock of the file: every record of one address, summed. A mutex destroyed and another
// made at its address, or one reset with PTHREAD_MUTEX_INITIALIZER, gets a record of its own
// at its next contention; the file has one lock per address (contend run reads a lock as an
// address in a process), whose site is the first record's.
struct lock_total {
    const void* address = nullptr;
    const void* site = nullptr;
    std::uint64_t acquisitions = 0, contended = 0, timeouts = 0, wait_ticks = 0, wait_max = 0;
    std::uint64_t hold_samples = 0, hold_ticks = 0;
    histogram::counts waits{}, holds{};
    bool rwlock = false;  // the counts below only for a rwlock
    std::uint64_t read_acquisitions = 0, read_contended = 0, read_timeouts = 0, read_wait_ticks = 0;
    struct stack_total {
        std::vector<std::uintptr_t> frames;
        std::uint64_t samples = 0, wait_ticks = 0;
    };
    std::vector<stack_total> stacks;

    void add_stacks(const stack_table& table) {
        for (const auto& e : table.stacks) {
            const std::uint8_t depth = e.depth.load(std::memory_order_acquire);
            if (depth == 0) continue;
            std::vector<std::uintptr_t> frames(e.frames, e.frames + depth);
            auto it =
                std::find_if(stacks.begin(), stacks.end(), [&](const stack_total& t) { return t.frames == frames; });
            if (it == stacks.end()) it = stacks.insert(stacks.end(), stack_total{std::move(frames)});
            it->samples += e.samples.load(std::memory_order_relaxed);
            it->wait_ticks += e.wait_ticks.load(std::memory_order_relaxed);
        }
    }

    void add(const lock_record& r) {
        add_stacks(r.stacks);
        if (site == nullptr) site = r.site.load(std::memory_order_relaxed);
        const counts_left left = residual(r, address);
        acquisitions += r.acquisitions.load(std::memory_order_relaxed) + left.all;
        rwlock = rwlock || r.rwlock.load(std::memory_order_relaxed);
        read_acquisitions += r.read_acquisitions.load(std::memory_order_relaxed) + left.reads;
        read_contended += r.read_contended.load(std::memory_order_relaxed);
        read_timeouts += r.read_timeouts.load(std::memory_order_relaxed);
        read_wait_ticks += r.read_wait_ticks.load(std::memory_order_relaxed);
        contended += r.contended.load(std::memory_order_relaxed);
        timeouts += r.timeouts.load(std::memory_order_relaxed);
        wait_ticks += r.wait_ticks.load(std::memory_order_relaxed);
        wait_max = std::max(wait_max, r.wait_max.load(std::memory_order_relaxed));
        hold_samples += r.hold_samples.load(std::memory_order_relaxed);
        hold_ticks += r.hold_ticks.load(std::memory_order_relaxed);
        r.waits.add_to(waits);
        r.holds.add_to(holds);
    }
    // A record of a forked child's parent that the child never used adds up to nothing.
    bool empty() const { return acquisitions == 0 && contended == 0 && timeouts == 0; }
};

// The records in use, one lock_total per address, in the order of each address's first record.
std::vector<lock_total> lock_totals(std::size_t records) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < records; ++i)
        if (state.records[i].address.load(std::memory_order_acquire) != nullptr) order.push_back(i);
    const auto address = [](std::size_t i) {
        return reinterpret_cast<std::uintptr_t>(state.records[i].address.load(std::memory_order_relaxed));
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return address(a) < address(b); });
    std::vector<std::pair<std::size_t, lock_total>> totals;  // (first record, total)
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k == 0 || address(order[k]) != address(order[k - 1])) {
            totals.emplace_back(order[k], lock_total{});
            totals.back().second.address = state.records[order[k]].address.load(std::memory_order_relaxed);
        }
        totals.back().second.add(state.records[order[k]]);
    }
    std::sort(totals.begin(), totals.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<lock_total> out;
    for (auto& [first, t] : totals)
        if (!t.empty()) out.push_back(std::move(t));
    return out;
}

void write_lock(json_out& j, const lock_total& t, double ns_per_tick, const std::string& executable) {
    const auto ns = [&](std::uint64_t v) { return static_cast<std::uint64_t>(static_cast<double>(v) * ns_per_tick); };
    const auto quantile_ns = [&](const histogram::counts& h, double q) {
        return static_cast<std::uint64_t>(histogram::quantile(h, q) * ns_per_tick);
    };
    // The waits' longest is exact (wait_max): no percentile of them is written above it, as a
    // bucket's midpoint could be.
    const auto wait_ns_at = [&](double q) { return std::min(quantile_ns(t.waits, q), ns(t.wait_max)); };
    j.open('{');
    j.key(fields::address);
    j.hex(t.address);
    j.field(fields::acquisitions, t.acquisitions);
    j.field(fields::contended, t.contended);
    j.field(fields::timeouts, t.timeouts);
    j.field(fields::wait_ns, ns(t.wait_ticks));
    j.field(fields::wait_p99_ns, wait_ns_at(0.99));
    j.field(fields::wait_max_ns, ns(t.wait_max));
    j.field(fields::hold_samples, t.hold_samples);
    j.field(fields::hold_sampled_ns, ns(t.hold_ticks));
    j.field(fields::hold_p99_ns, quantile_ns(t.holds, 0.99));
    j.field(fields::wait_p50_ns, wait_ns_at(0.5));
    j.field(fields::wait_p90_ns, wait_ns_at(0.9));
    j.field(fields::hold_p50_ns, quantile_ns(t.holds, 0.5));
    j.field(fields::hold_p90_ns, quantile_ns(t.holds, 0.9));
    j.field(fields::hold_max_ns, static_cast<std::uint64_t>(histogram::largest(t.holds) * ns_per_tick));
    j.key(fields::site);
    write_site(j, t.site, executable);
    if (!t.stacks.empty()) {
        auto stacks = t.stacks;
        std::stable_sort(stacks.begin(), stacks.end(),
                         [](const auto& a, const auto& b) { return a.wait_ticks > b.wait_ticks; });
        j.key(fields::stacks);
        j.open('[');
        for (const auto& stack : stacks) {
            j.open('{');
            j.key(fields::frames);
            j.open('[');
            for (const std::uintptr_t f : stack.frames) write_site(j, reinterpret_cast<const void*>(f), executable);
            j.close(']');
            j.field(fields::samples, stack.samples);
            j.field(fields::wait_ns, ns(stack.wait_ticks));
            j.close('}');
        }
        j.close(']');
    }
    if (t.contended != 0) {
        // The buckets' lower bounds in whole ns: the narrow buckets of a few ticks can round to
        // one value, and their counts are then one bucket's, so the bounds stay increasing (a
        // reader refuses a file whose bounds are not).
        std::vector<std::pair<std::uint64_t, std::uint64_t>> buckets;
        for (unsigned i = 0; i < histogram::buckets; ++i) {
            if (t.waits[i] == 0) continue;
            const auto low = static_cast<std::uint64_t>(histogram::lower_bound(i) * ns_per_tick);
            if (!buckets.empty() && buckets.back().first >= low) buckets.back().second += t.waits[i];
            else buckets.emplace_back(low, t.waits[i]);
        }
        j.key(fields::wait_histogram);
        j.open('[');
        for (const auto& [low, count] : buckets) {
            j.open('[');
            j.number(low);
            j.number(count);
            j.close(']');
        }
        j.close(']');
    }
    if (t.rwlock) {
        j.key(fields::kind);
        j.string(fields::rwlock_kind);
        j.field(fields::read_acquisitions, t.read_acquisitions);
        j.field(fields::read_contended, t.read_contended);
        j.field(fields::read_timeouts, t.read_timeouts);
        j.field(fields::read_wait_ns, ns(t.read_wait_ticks));
        j.field(fields::write_acquisitions, t.acquisitions - t.read_acquisitions);
        j.field(fields::write_contended, t.contended - t.read_contended);
        j.field(fields::write_timeouts, t.timeouts - t.read_timeouts);
        j.field(fields::write_wait_ns, ns(t.wait_ticks) - ns(t.read_wait_ticks));
    }
    j.close('}');
}

// Acquisitions, busy trylocks, and the rwlocks' reads and writes: the live threads' stripes
// and the exited threads' totals.
struct stripe_counts {
    std::uint64_t acquisitions, trylock_busy, reads, writes;
};
stripe_counts stripe_totals() noexcept {
    stripes_guard g;
    stripe_counts c{state.exited_acquisitions, state.exited_trylock_busy, state.exited_reads, state.exited_writes};
    for (const stripe* s : state.stripes) {
        if (s == nullptr) continue;
        c.acquisitions += s->acquisitions();
        c.trylock_busy += s->trylock_busy.load(std::memory_order_relaxed);
        c.reads += s->rwlock_reads.load(std::memory_order_relaxed);
        c.writes += s->rwlock_writes.load(std::memory_order_relaxed);
    }
    return c;
}

std::string profile_text(const timespec& now, std::uint64_t now_ticks) {
    const double seconds = seconds_between(state.start_time, now);
    const std::uint64_t elapsed_ticks = now_ticks - state.start_ticks;
    const double ns_per_tick = elapsed_ticks > 0 ? seconds * 1e9 / static_cast<double>(elapsed_ticks) : 1.0;
    const std::string executable = executable_path();

    const auto [acquisitions, trylock_busy, reads, writes] = stripe_totals();

    const std::size_t records = std::min(state.records_used.load(), max_records);
    std::uint64_t contended = state.dropped.contended.load(), timeouts = state.dropped.timeouts.load(),
                  wait_ticks = state.dropped.wait_ticks.load();
    for (std::size_t i = 0; i < records; ++i) {
        const lock_record& r = state.records[i];
        if (r.address.load(std::memory_order_acquire) == nullptr) continue;
        contended += r.contended.load(std::memory_order_relaxed);
        timeouts += r.timeouts.load(std::memory_order_relaxed);
        wait_ticks += r.wait_ticks.load(std::memory_order_relaxed);
    }

    json_out j;
    j.open('{');
    j.key(fields::format);
    j.string(format_name);
    j.field(fields::pid, static_cast<std::uint64_t>(state.pid));
    j.key(fields::executable);
    j.string(executable.c_str());
    j.key(fields::lock);
    j.string(state.lock_name);
    j.key(fields::seconds);
    j.real(seconds);
    j.field(fields::hold_sample_period, hold_sample_period());
    j.field(fields::stack_sample_period, static_cast<std::uint64_t>(state.stack_sample_period));
    j.field(fields::acquisitions, acquisitions);
    j.field(fields::contended, contended);
    j.field(fields::trylock_busy, trylock_busy);
    j.field(fields::timeouts, timeouts);
    j.field(fields::wait_ns, static_cast<std::uint64_t>(static_cast<double>(wait_ticks) * ns_per_tick));
    j.field(fields::locks_dropped, state.locks_dropped.load());
    j.field(fields::read_acquisitions, reads);
    j.field(fields::write_acquisitions, writes);
    j.key(fields::locks);
    j.open('[');
    for (const auto& t : lock_totals(records)) write_lock(j, t, ns_per_tick, executable);
    j.close(']');
    j.close('}');
    return j.text() + "\n";
}

bool write_all(int fd, const std::string& text) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void complain(const std::string& path) {
    const std::string msg =
        "libcontend_interpose: cannot write the profile " + path + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
}

// The profile as it stands, written to DIR/<pid>.json, or with `snapshot` to the first free
// DIR/<pid>-<n>.json (an exec's: the next image of this pid writes DIR/<pid>.json), through
// DIR/.<pid>.json.tmp and a rename (a link for a snapshot, which must not replace another).
// Returns the path, or "" when nothing was written: the process never locked, or the write
// failed (said on standard error, and the process's `.running` marker stays for contend run
// to report). Threads still running keep counting: the file is a snapshot.
std::string write_profile(bool snapshot) {
    apply_pending(this_thread_stripe);
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const std::uint64_t now_ticks = ticks();
    if (stripe_totals().acquisitions == 0)
        return "";  // a process that never locked (a shell between the program and us)

    const std::string text = profile_text(now, now_ticks);
    const std::string dir = state.directory, pid = std::to_string(state.pid);
    const std::string temporary = dir + "/" + temporary_prefix + pid + temporary_suffix;
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        complain(temporary);
        return "";
    }
    const bool ok = write_all(fd, text);
    if (::close(fd) != 0 || !ok) {
        complain(temporary);
        ::unlink(temporary.c_str());
        return "";
    }
    std::string final_path = file_in_directory(profile_suffix);
    if (snapshot) {
        for (int n = 1;; ++n) {
            final_path = dir + "/" + pid + image_separator + std::to_string(n) + profile_suffix;
            if (::link(temporary.c_str(), final_path.c_str()) == 0) break;
            if (errno != EEXIST || n == 100000) {
                complain(final_path);
                ::unlink(temporary.c_str());
                return "";
            }
        }
        ::unlink(temporary.c_str());
    } else if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
        complain(final_path);
        ::unlink(temporary.c_str());
        return "";
    }
    remove_running_marker();
    return final_path;
}

bool owns_profile() noexcept { return state.phase.load() == 2 && ::getpid() == state.pid; }

bool final_written = false;
std::string exec_snapshot;  // the file written before an exec that may still fail

// At exit (the library's destructor runs after the program's own atexit handlers and static
// destructors): the process that started the profile, or a forked child that profiles itself
// since the fork, writes it.
[[gnu::destructor]] void write_profile_at_exit() {
    if (!owns_profile() || final_written) return;
    final_written = true;
    (void)write_profile(false);
}

// std::quick_exit runs neither the destructor above nor atexit handlers, only at_quick_exit
// handlers, last registered first: registered at load, this one runs after the program's.
// quick_exit is a plain call (not async-signal-safe), so writing the file there is as safe as
// at exit.
void write_profile_at_quick_exit() { write_profile_at_exit(); }
[[maybe_unused]] const bool quick_exit_handler_registered = std::at_quick_exit(write_profile_at_quick_exit) == 0;

}  // namespace

bool snapshot_before_exec() noexcept {
    if (!owns_profile()) return false;  // a vfork child: its parent's profile is not its own
    try {
        exec_snapshot = write_profile(true);
    } catch (...) {
        exec_snapshot.clear();
    }
    return !exec_snapshot.empty();
}

void exec_failed() noexcept {
    ::unlink(exec_snapshot.c_str());  // the counts go on, into the file written at exit
    exec_snapshot.clear();
    make_running_marker();
}

void write_before_exit() noexcept {
    // A forked child only: there _exit is how a program leaves (POSIX asks it of the child of a
    // threaded process). A process that did not fork may call _exit from a signal handler,
    // which may have interrupted malloc or the loader, which writing the file needs: its profile
    // is lost, and said so, rather than the process hung.
    if (!state.forked_child || !owns_profile() || final_written) return;
    final_written = true;
    try {
        (void)write_profile(false);
    } catch (...) {
    }
}

}  // namespace contend::interpose::profile
