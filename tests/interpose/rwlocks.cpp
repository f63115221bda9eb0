// interpose_rwlocks: pthread_rwlock_* as glibc answers them, run with libcontend_interpose.so
// preloaded under each lock choice and without it: the errors glibc gives (EDEADLK, EBUSY,
// ETIMEDOUT, EINVAL), a recursive read while a writer waits, which kinds reach glibc, and a
// torture (readers check a table is never torn, writers check they are alone).
//
// CONTEND_INTERPOSE_EXPECT names the lock the run should find active, or none: the default
// rwlock is contend's under every lock but glibc (and none), and only there is an unlock of a
// free rwlock EPERM (glibc's says 0). Prints "ok <check>" lines; on a failure "FAIL ..." and
// exits 1. Every wait is bounded: timed calls where a wait could go wrong, and alarm().
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "check_lines.hpp"

namespace {

using namespace interpose_test;

// Whether contend runs the default rwlock in this run.
bool contend_runs_rwlocks() {
    const char* want = std::getenv("CONTEND_INTERPOSE_EXPECT");
    const std::string lock = want ? want : "none";
    return lock != "none" && lock != "glibc";
}

void check_errors(bool ours) {
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    timespec bad{0, 1'000'000'000};
    // glibc checks the timeout and the clock before anything, even on a free rwlock.
    expect_eq("einval", "timedrdlock, tv_nsec 1e9, free", pthread_rwlock_timedrdlock(&l, &bad), EINVAL);
    expect_eq("einval", "timedwrlock, tv_nsec -1, free", pthread_rwlock_timedwrlock(&l, &(bad = {0, -1})), EINVAL);
    timespec t = after_ms(CLOCK_MONOTONIC, 1000);
    expect_eq("einval", "clockrdlock on CLOCK_PROCESS_CPUTIME_ID",
              pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &t), EINVAL);
    expect_eq("einval", "clockwrlock on CLOCK_THREAD_CPUTIME_ID",
              pthread_rwlock_clockwrlock(&l, CLOCK_THREAD_CPUTIME_ID, &t), EINVAL);
    ok("EINVAL: a bad timeout or clock, even on a free rwlock");

    expect_eq("edeadlk", "wrlock", pthread_rwlock_wrlock(&l), 0);
    expect_eq("edeadlk", "wrlock by the writer", pthread_rwlock_wrlock(&l), EDEADLK);
    expect_eq("edeadlk", "rdlock by the writer", pthread_rwlock_rdlock(&l), EDEADLK);
    t = after_ms(CLOCK_REALTIME, 1000);
    expect_eq("edeadlk", "timedrdlock by the writer", pthread_rwlock_timedrdlock(&l, &t), EDEADLK);
    expect_eq("edeadlk", "timedwrlock by the writer", pthread_rwlock_timedwrlock(&l, &t), EDEADLK);
    t = after_ms(CLOCK_MONOTONIC, 1000);
    expect_eq("edeadlk", "clockrdlock by the writer", pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &t), EDEADLK);
    expect_eq("edeadlk", "clockwrlock by the writer", pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &t), EDEADLK);
    expect_eq("ebusy", "tryrdlock by the writer", pthread_rwlock_tryrdlock(&l), EBUSY);
    expect_eq("ebusy", "trywrlock by the writer", pthread_rwlock_trywrlock(&l), EBUSY);
    on_thread([&] {
        expect_eq("ebusy", "tryrdlock of a written rwlock", pthread_rwlock_tryrdlock(&l), EBUSY);
        expect_eq("ebusy", "trywrlock of a written rwlock", pthread_rwlock_trywrlock(&l), EBUSY);
        timespec d = after_ms(CLOCK_REALTIME, 20);
        expect_eq("etimedout", "timedrdlock of a written rwlock", pthread_rwlock_timedrdlock(&l, &d), ETIMEDOUT);
        d = after_ms(CLOCK_MONOTONIC, 20);
        expect_eq("etimedout", "clockrdlock of a written rwlock", pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &d),
                  ETIMEDOUT);
        d = after_ms(CLOCK_REALTIME, 20);
        expect_eq("etimedout", "timedwrlock of a written rwlock", pthread_rwlock_timedwrlock(&l, &d), ETIMEDOUT);
        // A deadline already passed, on a rwlock that is not free: ETIMEDOUT, not EINVAL.
        d = {0, 0};
        expect_eq("etimedout", "clockwrlock, deadline passed", pthread_rwlock_clockwrlock(&l, CLOCK_REALTIME, &d),
                  ETIMEDOUT);
    });
    expect_eq("unlock", "unlock by the writer", pthread_rwlock_unlock(&l), 0);
    ok("EDEADLK for the writer's own rdlock and wrlock, EBUSY for the try forms, ETIMEDOUT when written");

    expect_eq("read", "rdlock", pthread_rwlock_rdlock(&l), 0);
    expect_eq("read", "tryrdlock beside it", pthread_rwlock_tryrdlock(&l), 0);
    on_thread([&] {
        expect_eq("ebusy", "trywrlock of a read rwlock", pthread_rwlock_trywrlock(&l), EBUSY);
        timespec d = after_ms(CLOCK_MONOTONIC, 20);
        expect_eq("etimedout", "clockwrlock of a read rwlock", pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &d),
                  ETIMEDOUT);
        d = after_ms(CLOCK_REALTIME, 1000);
        expect_eq("read", "timedrdlock by another reader", pthread_rwlock_timedrdlock(&l, &d), 0);
        expect_eq("read", "its unlock", pthread_rwlock_unlock(&l), 0);
    });
    expect_eq("read", "unlock", pthread_rwlock_unlock(&l), 0);
    expect_eq("read", "unlock", pthread_rwlock_unlock(&l), 0);
    on_thread([&] {
        expect_eq("free", "trywrlock once every read is released", pthread_rwlock_trywrlock(&l), 0);
        expect_eq("free", "its unlock", pthread_rwlock_unlock(&l), 0);
    });
    // glibc's unlock of a free rwlock says 0 (and corrupts it): ours says EPERM.
    if (ours) {
        pthread_rwlock_t free_lock = PTHREAD_RWLOCK_INITIALIZER;
        expect_eq("eperm", "unlock of a free rwlock", pthread_rwlock_unlock(&free_lock), EPERM);
        expect_eq("eperm", "the rwlock is still usable", pthread_rwlock_trywrlock(&free_lock), 0);
        expect_eq("eperm", "its unlock", pthread_rwlock_unlock(&free_lock), 0);
    }
    expect_eq("destroy", "destroy", pthread_rwlock_destroy(&l), 0);
    ok("reads share, a write waits for every read, an unlock of a free rwlock is not corruption");
}

// A thread that holds a read reads again while a writer waits: glibc's default kind lets it,
// and contend's lock passes the parked writer for a read this thread already holds. The
// writer's wait and the second read are both bounded (timed), so a deadlock fails the check.
// `count` rwlocks are read first, more than the thread's table holds when it is above 16
// (rwlock_thread.hpp: the overflow rule), and the writer waits on the last.
void check_recursive_read(int count) {
    pthread_rwlock_t locks[24];
    for (int i = 0; i < count; ++i) {
        pthread_rwlock_init(&locks[i], nullptr);
        expect_eq("recursive", "first read", pthread_rwlock_rdlock(&locks[i]), 0);
    }
    pthread_rwlock_t* l = &locks[count - 1];
    struct writer_state {
        pthread_rwlock_t* l;
        std::atomic<bool> started{false};
        int rc = -1;
    } w{l};
    pthread_t writer;
    pthread_create(
        &writer, nullptr,
        [](void* p) -> void* {
            auto* w = static_cast<writer_state*>(p);
            w->started.store(true);
            timespec d = after_ms(CLOCK_MONOTONIC, 20'000);
            w->rc = pthread_rwlock_clockwrlock(w->l, CLOCK_MONOTONIC, &d);
            if (w->rc == 0) pthread_rwlock_unlock(w->l);
            return nullptr;
        },
        &w);
    while (!w.started.load()) sched_yield();
    usleep(50'000);  // the writer is parked by now, most likely; the check holds either way
    timespec d = after_ms(CLOCK_REALTIME, 10'000);
    expect_eq("recursive", "a second read while a writer waits", pthread_rwlock_timedrdlock(l, &d), 0);
    expect_eq("recursive", "a third read (rdlock)", pthread_rwlock_rdlock(l), 0);
    expect_eq("recursive", "a fourth (tryrdlock)", pthread_rwlock_tryrdlock(l), 0);
    for (int k = 0; k < 4; ++k) expect_eq("recursive", "unlock", pthread_rwlock_unlock(l), 0);
    for (int i = 0; i < count - 1; ++i) expect_eq("recursive", "unlock", pthread_rwlock_unlock(&locks[i]), 0);
    pthread_join(writer, nullptr);
    expect_eq("recursive", "the writer's wrlock once the reads are gone", w.rc, 0);
    for (int i = 0; i < count; ++i) pthread_rwlock_destroy(&locks[i]);
}

// glibc's rwlock counts readers in __readers shifted by 3: one read makes it 8. contend's lock
// keeps a different word there, so the bytes say who ran the read.
bool glibc_ran_a_read(pthread_rwlock_t* l) {
    expect_eq("who", "rdlock", pthread_rwlock_rdlock(l), 0);
    const unsigned readers = l->__data.__readers;
    expect_eq("who", "unlock", pthread_rwlock_unlock(l), 0);
    return readers == 8;
}

void check_pass_through(bool ours) {
    pthread_rwlock_t zeroed;
    std::memset(&zeroed, 0, sizeof zeroed);
    expect_eq("kinds", "a zero-filled rwlock is glibc's", glibc_ran_a_read(&zeroed), !ours);
    pthread_rwlock_t dflt;
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlock_init(&dflt, &a);
    expect_eq("kinds", "a default-attr rwlock is glibc's", glibc_ran_a_read(&dflt), !ours);
    pthread_rwlock_destroy(&dflt);
    const struct {
        const char* name;
        int kind, pshared;
    } passed[] = {
        {"PTHREAD_RWLOCK_PREFER_WRITER_NP", PTHREAD_RWLOCK_PREFER_WRITER_NP, PTHREAD_PROCESS_PRIVATE},
        {"PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
         PTHREAD_PROCESS_PRIVATE},
        {"PTHREAD_PROCESS_SHARED", PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_PROCESS_SHARED},
    };
    for (const auto& p : passed) {
        pthread_rwlockattr_setkind_np(&a, p.kind);
        pthread_rwlockattr_setpshared(&a, p.pshared);
        pthread_rwlock_t l;
        expect_eq("kinds", "init", pthread_rwlock_init(&l, &a), 0);
        if (!glibc_ran_a_read(&l)) fail("kinds", p.name);
        // glibc's writer leaves its thread id, and glibc's own EDEADLK answers.
        expect_eq("kinds", "wrlock", pthread_rwlock_wrlock(&l), 0);
        expect_eq("kinds", "__cur_writer", l.__data.__cur_writer, gettid());
        expect_eq("kinds", "rdlock by the writer", pthread_rwlock_rdlock(&l), EDEADLK);
        expect_eq("kinds", "unlock", pthread_rwlock_unlock(&l), 0);
        expect_eq("kinds", "destroy", pthread_rwlock_destroy(&l), 0);
    }
    pthread_rwlockattr_destroy(&a);
    ok("the writer-preferring and process-shared kinds reach glibc");
}

// The torture: a table of 64 cache lines that writers fill with one value and readers check is
// never torn; a count of the threads inside checks a writer is alone. Every acquisition form.
constexpr int table_words = 64 * 8;
std::atomic<std::uint64_t> table[table_words];
std::atomic<int> writers_inside{0}, readers_inside{0};
pthread_rwlock_t torture_lock = PTHREAD_RWLOCK_INITIALIZER;
constexpr int torture_threads = 4, torture_rounds = 4'000;

void read_table() {
    readers_inside.fetch_add(1);
    if (writers_inside.load() != 0) fail("torture", "a reader beside a writer", writers_inside.load());
    const std::uint64_t first = table[0].load(std::memory_order_relaxed);
    for (const auto& w : table)
        if (w.load(std::memory_order_relaxed) != first) fail("torture", "a torn table", static_cast<int>(first));
    readers_inside.fetch_sub(1);
}

void write_table(std::uint64_t value) {
    if (writers_inside.fetch_add(1) != 0 || readers_inside.load() != 0)
        fail("torture", "a writer not alone", readers_inside.load());
    for (auto& w : table) w.store(value, std::memory_order_relaxed);
    writers_inside.fetch_sub(1);
}

void* torture_thread(void* arg) {
    const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
    for (int i = 0; i < torture_rounds; ++i) {
        const int op = static_cast<int>((id * 7 + static_cast<std::uint64_t>(i) * 13) % 16);
        // Each timed form's deadline on its own clock: timed* take CLOCK_REALTIME, clock* here
        // CLOCK_MONOTONIC.
        timespec real = after_ms(CLOCK_REALTIME, 20'000), mono = after_ms(CLOCK_MONOTONIC, 20'000);
        int rc;
        if (op < 3) {  // a write, one form each
            rc = op == 0   ? pthread_rwlock_wrlock(&torture_lock)
                 : op == 1 ? pthread_rwlock_clockwrlock(&torture_lock, CLOCK_MONOTONIC, &mono)
                           : pthread_rwlock_timedwrlock(&torture_lock, &real);
            if (rc != 0) fail("torture", "a write", rc);
            write_table(id << 32 | static_cast<std::uint64_t>(i));
        } else if (op == 3) {
            if (pthread_rwlock_trywrlock(&torture_lock) != 0) continue;
            write_table(id << 32 | static_cast<std::uint64_t>(i));
        } else {
            rc = op < 8    ? pthread_rwlock_rdlock(&torture_lock)
                 : op < 11 ? pthread_rwlock_timedrdlock(&torture_lock, &real)
                 : op < 14 ? pthread_rwlock_clockrdlock(&torture_lock, CLOCK_MONOTONIC, &mono)
                           : pthread_rwlock_tryrdlock(&torture_lock);
            if (rc == EBUSY && op >= 14) continue;
            if (rc != 0) fail("torture", "a read", rc);
            read_table();
            if (op % 4 == 0) {  // a recursive read now and then
                if ((rc = pthread_rwlock_rdlock(&torture_lock)) != 0) fail("torture", "a recursive read", rc);
                read_table();
                pthread_rwlock_unlock(&torture_lock);
            }
        }
        if ((rc = pthread_rwlock_unlock(&torture_lock)) != 0) fail("torture", "unlock", rc);
    }
    return nullptr;
}

void check_torture() {
    pthread_t threads[torture_threads];
    for (int i = 0; i < torture_threads; ++i)
        pthread_create(&threads[i], nullptr, torture_thread,
                       reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1)));
    for (auto& t : threads) pthread_join(t, nullptr);
    ok("torture: no reader saw a torn table, no writer had company");
}

}  // namespace

int main() {
    alarm(120);  // the whole run takes about a second; a hang fails here
    const bool ours = contend_runs_rwlocks();
    check_errors(ours);
    check_recursive_read(1);
    ok("a recursive read while a writer waits completes");
    check_recursive_read(20);
    ok("a recursive read of a rwlock past the thread's table while a writer waits completes");
    check_pass_through(ours);
    check_torture();
    std::printf("all checks passed\n");
    return 0;
}
