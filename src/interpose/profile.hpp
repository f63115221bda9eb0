// The lock profile (CONTEND_INTERPOSE_PROFILE=DIR): what each contended mutex cost, written
// to DIR/<pid>.json when the process exits (docs/interpose.md, "Profiling").
//
// Costs, and what is exact and what is sampled:
//  - every acquisition of a kind-0 mutex counts down this thread's stripe (in its static TLS;
//    the thread's acquisitions are derived from it) and adds one to a count kept in the mutex
//    itself, in bytes glibc leaves unused for this kind (__list): the holder writes it, on the
//    line the lock is already on. Both are counted after the lock's CAS, and both are exact;
//  - a mutex gets a record (a table entry, pointed to from the mutex's __list) the first time
//    an acquisition of it finds it held. From then on its contended acquisitions are timed
//    (total, max and a log-linear histogram of the wait), and the count in the mutex is moved
//    into the record at each of them and at each timed hold;
//  - each thread times the hold of one of its acquisitions in hold_sample_period(), on
//    average, when that mutex has a record. The gaps are drawn at random from half to one and
//    a half periods: a fixed gap aliases with a program's own rhythm (two threads taking
//    turns, one holding long and one short: an even gap times only one of them);
//  - uncontended mutexes have no record: they are in the program's totals only.
// Times are read with the CPU's cycle counter and turned into nanoseconds against the steady
// clock over the whole run.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "interpose/glibc_layout.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace contend::interpose::profile {

// Each thread times one acquisition in this many, on average, by default
// (CONTEND_INTERPOSE_HOLD_SAMPLE_PERIOD sets another, 2 to 2^20). A timed hold costs two
// cycle-counter reads and, after the release, a note applied to the mutex's record with
// atomic adds on lines every contending thread writes: about 140 ns in sysbench's mutex test
// on the AMD EPYC VM. At 1 in 1,024 that is 0.14 ns an acquisition, within the test's noise
// (docs/interpose.md has the denser period's cost), and a lock taken a million times still
// gets about 1,000 samples for its p99. The
// cost is mostly those atomic adds, which on the Intel Xeon VM cost about twice the AMD's
// (a locked CAS 10-13 ns against 5): 1 in 1,024 keeps it under 0.3 ns an acquisition there
// too, reasoned, not measured. A short program or a rare lock wants a denser period.
inline constexpr std::uint64_t default_hold_sample_period = 1024;
std::uint64_t hold_sample_period() noexcept;

// Each thread takes the call stack of one contended wait in this many (its first one among
// them) by default (CONTEND_INTERPOSE_STACK_SAMPLE_PERIOD sets another, 1 to 2^20, or 0 for
// none): an unwind of up to max_stack_frames frames through the callers' unwind tables
// (_Unwind_Backtrace), taken before the thread waits, so the holder never waits for it, and
// added to the lock's record with the wait's time after the release. Only contended
// acquisitions pay it: an uncontended one runs no instruction more. Its cost is measured in
// docs/interpose.md ("The cost of the call stacks").
inline constexpr std::uint32_t default_stack_sample_period = 4;
inline constexpr unsigned max_stack_frames = 16;

// The words of a kind-0 mutex the profile keeps its count and its record in:
// glibc_layout.hpp, record_word_offset and count_word_offset.
struct lock_record;

inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    std::uint64_t t;
    asm volatile("mrs %0, cntvct_el0" : "=r"(t));
    return t;
#else
#error "profile: no cycle counter on this architecture"
#endif
}

inline std::uint64_t* count_word(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(m) + count_word_offset);
}
inline std::uintptr_t* record_word(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<std::uintptr_t*>(reinterpret_cast<char*>(m) + record_word_offset);
}
inline lock_record* record_of(pthread_mutex_t* m) noexcept {
    return reinterpret_cast<lock_record*>(__atomic_load_n(record_word(m), __ATOMIC_ACQUIRE));
}

// This thread's counters, in its own static TLS block (initial-exec: the preloaded library's
// TLS is allocated with the thread, and an access is one %fs-relative instruction); written
// by this thread only. A thread registers its stripe at its first acquisition, so that the
// profile can sum the stripes, and folds it into the profile's totals when it exits.
struct stripe {
    // The acquisitions this thread made are consumed + gap - until_sample: the fast path only
    // counts down until_sample, the acquisitions until it next times a hold (of a mutex that
    // has a record); the slow path, at the end of each gap, adds the gap to consumed and
    // draws the next. 0 on a new thread, whose first acquisition then takes the slow path and
    // registers the stripe. (One counter, not two: each store before the lock's CAS waits
    // for the CAS to drain it, and a second counter cost 0.5 ns a lock and unlock.)
    std::atomic<std::uint64_t> until_sample{0}, gap{0}, consumed{0};
    std::atomic<std::uint64_t> trylock_busy{0};
    // Of the acquisitions, the reads and writes of rwlocks (profile_rwlock.hpp).
    std::atomic<std::uint64_t> rwlock_reads{0}, rwlock_writes{0};
    std::uint64_t acquisitions() const noexcept {
        const std::uint64_t g = gap.load(std::memory_order_relaxed), u = until_sample.load(std::memory_order_relaxed);
        return consumed.load(std::memory_order_relaxed) + (g > u ? g - u : 0);
    }
    bool registered = false;
    // What a holder learned about a record (a contended wait, a timed hold, the mutex's count)
    // is noted here and applied to the record after the release: the record's lines are
    // written by every thread that contends for the mutex, and writing them inside the
    // critical section would lengthen it by their cache misses.
    struct note {
        lock_record* record = nullptr;
        std::uint64_t acquisitions = 0, wait = 0, hold = 0;
        bool contended = false, held = false;
        std::uint8_t stack_depth = 0;  // the contended wait's sampled call stack, when one was
        std::uintptr_t stack[max_stack_frames]{};
    } pending;
    // The call stack take_stack sampled before a contended wait, which contended() moves into
    // the note (a nested contended lock before the release takes its own), and the contended
    // waits until the next sample.
    std::uint8_t scratch_depth = 0;
    std::uintptr_t scratch_stack[max_stack_frames]{};
    std::uint32_t until_stack = 0;
    bool unwinding = false;  // the unwinder may lock a mutex of its own: no sample inside it
    // The mutex whose hold this thread is timing. Kept here, not in the mutex: every release
    // checks it, and on this thread's own line the check cannot stall as a load from the
    // lock's line can (a waiter may have just taken that line away).
    pthread_mutex_t* timing = nullptr;
    std::uint64_t hold_start = 0;
};
extern constinit thread_local stripe this_thread_stripe __attribute__((tls_model("initial-exec")));

inline stripe& this_stripe() noexcept { return this_thread_stripe; }

inline void add_one(std::atomic<std::uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The slow parts, out of line.
bool start_next_gap(stripe& s) noexcept;
void register_stripe(stripe& s) noexcept;
void sample_hold(pthread_mutex_t* m, stripe& s) noexcept;
void end_hold_sample(pthread_mutex_t* m) noexcept;
void apply_pending(stripe& s) noexcept;

// Counts an acquisition this thread has just made, after the lock's CAS (a store before it
// would wait for the locked instruction to drain it). True when its hold is to be timed.
inline bool count_acquisition(stripe& s) noexcept {
    const std::uint64_t left = s.until_sample.load(std::memory_order_relaxed);
    if (left <= 1) [[unlikely]]
        return start_next_gap(s);
    s.until_sample.store(left - 1, std::memory_order_relaxed);
    return false;
}

// Under the lock just taken: the mutex's own count (a relaxed load and store on the lock's
// line, which the holder owns right after its CAS), and the start of a timed hold. Counted
// at the release instead, it cost more (docs/interpose.md, "Cost"): by then a spinning
// waiter may have the line shared again.
inline void acquired_counted(pthread_mutex_t* m, stripe& s, bool time_hold) noexcept {
    std::uint64_t* count = count_word(m);
    __atomic_store_n(count, __atomic_load_n(count, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    if (time_hold) [[unlikely]]
        sample_hold(m, s);
}

// After an acquisition of a kind-0 mutex: lock, trylock, the timed locks, a cond wait's retake.
inline void acquired(pthread_mutex_t* m) noexcept {
    stripe& s = this_stripe();
    acquired_counted(m, s, count_acquisition(s));
}

// Before the holder releases a kind-0 mutex: the end of a timed hold, found on this thread's
// own line.
inline void releasing(pthread_mutex_t* m) noexcept {
    if (this_thread_stripe.timing == m) [[unlikely]]
        end_hold_sample(m);
}

// After the release: the holder's notes go to their record.
inline void released() noexcept {
    if (this_thread_stripe.pending.record != nullptr) [[unlikely]]
        apply_pending(this_thread_stripe);
}

// A pthread_mutex_trylock that said EBUSY.
inline void trylock_busy() noexcept {
    stripe& s = this_stripe();
    if (!s.registered) [[unlikely]]
        register_stripe(s);
    add_one(s.trylock_busy);
}

// The record of a mutex found held (created at its first contention, with the caller's
// return address as its site). Never null: past the table's capacity, a shared record that
// counts the dropped locks' contentions in the totals only.
lock_record* record_for(pthread_mutex_t* m, const void* site) noexcept;
// Before a contended wait at `site` (the return address into the lock's caller): on one wait
// in the stack sample period, the caller's call stack, from `site` outwards.
void take_stack(const void* site) noexcept;
// A contended wait that ended holding the mutex (the caller calls acquired() first), or one
// that timed out. The mutex's count goes into its record then, so that a record never holds
// more contentions than acquisitions.
void contended(pthread_mutex_t* m, lock_record* r, std::uint64_t wait_ticks) noexcept;
void timed_out(lock_record* r, std::uint64_t wait_ticks) noexcept;

// pthread_mutex_init and _destroy: a record the mutex's bytes point to is given what the
// mutex still counts before the bytes are reset (init checks that the pointer is one of ours
// for this address: the memory may hold anything before init).
void retire(pthread_mutex_t* m) noexcept;

// Starts profiling if CONTEND_INTERPOSE_PROFILE is set; false otherwise. Called once, before
// the lock choice is published, with the name of the lock chosen (a string that lives as long
// as the library), which the profile's file names. A forked child (pthread_atfork) profiles itself from the fork
// on and writes its own file.
bool start_from_environment(const char* lock_name) noexcept;

// The process's profile is written at exit(), and also (exec_interpose.cpp) before an exec,
// as DIR/<pid>-<n>.json (the exec'd image, preloaded again, profiles itself and writes
// DIR/<pid>.json at its exit), and, in a forked child, before _exit or _Exit, as at exit()
// (elsewhere _exit may come from a signal handler, where writing could hang). A process that has
// locked keeps DIR/<pid>.running until its profile is written: contend run reports one left
// at the end as a process whose profile was lost. snapshot_before_exec is true when it wrote
// a file, which exec_failed removes again (the counts go on, into the file written at exit).
bool snapshot_before_exec() noexcept;
void exec_failed() noexcept;
void write_before_exit() noexcept;

}  // namespace contend::interpose::profile
