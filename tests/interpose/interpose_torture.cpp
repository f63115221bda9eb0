// interpose_torture: every pthread function that libcontend_interpose.so replaces, used as a
// program would, with results that must not depend on who runs the locks. ctest runs it
// with the library preloaded (each lock choice) and without it, and compares the outputs.
//
// Prints one "ok <check>" line per check; on a failure "FAIL <check>: <why>" and exits 1.
// Every wait is bounded: timed calls where the API has them, and alarm() over the whole run,
// so a lost wake-up fails the test instead of hanging it.
//
// CONTEND_INTERPOSE_EXPECT says which lock the run should find active (a
// CONTEND_INTERPOSE_LOCK name), or none (not preloaded).
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "check_lines.hpp"

namespace {

using namespace interpose_test;

void check_interposition() {
    const char* want = std::getenv("CONTEND_INTERPOSE_EXPECT");
    auto active = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "contend_interpose_active"));
    const std::string got = active ? active() : "none";
    if (want == nullptr || got != want) {
        std::printf("FAIL interposition: active lock is %s, expected %s\n", got.c_str(), want ? want : "(unset)");
        std::fflush(stdout);
        std::_Exit(1);
    }
    // And the mutex itself says who locked it: glibc records the owner's thread id in
    // __owner, contend's locks use only the first bytes.
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    const int owner = m.__data.__owner;
    pthread_mutex_unlock(&m);
    expect_eq("interposition", "__owner of a locked normal mutex", owner,
              got == "glibc" || got == "none" ? gettid() : 0);
    ok("interposition as expected");
}

pthread_mutex_t static_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t init_mutex;
long static_count = 0;
long init_count = 0;
// At most one thread per CPU (2 to 4): the spin-lock choices (ttas, ticket) never yield, and
// with more runnable threads than CPUs each handoff can wait out a preempted holder's time
// slice (seconds per run on a loaded 2-core machine), which would test the scheduler.
constexpr int max_counter_threads = 4;
constexpr long counter_rounds = 20'000;

void check_counters() {
    if (int rc = pthread_mutex_init(&init_mutex, nullptr)) fail("counters", "init", rc);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int counter_threads = cpus < 2                     ? 2
                                : cpus > max_counter_threads ? max_counter_threads
                                                             : static_cast<int>(cpus);
    pthread_t threads[max_counter_threads];
    for (int i = 0; i < counter_threads; ++i) {
        pthread_t& t = threads[i];
        pthread_create(
            &t, nullptr,
            [](void*) -> void* {
                for (long i = 0; i < counter_rounds; ++i) {
                    pthread_mutex_lock(&static_mutex);
                    ++static_count;
                    pthread_mutex_unlock(&static_mutex);
                    pthread_mutex_lock(&init_mutex);
                    ++init_count;
                    pthread_mutex_unlock(&init_mutex);
                }
                return nullptr;
            },
            nullptr);
    }
    for (int i = 0; i < counter_threads; ++i) pthread_join(threads[i], nullptr);
    expect_eq("counters", "static-initialized count", static_count, counter_threads * counter_rounds);
    expect_eq("counters", "init(NULL) count", init_count, counter_threads * counter_rounds);
    ok("counters under a static and an init(NULL) mutex are exact");
}

void check_trylock_and_timed() {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    on_thread([&] {
        expect_eq("trylock", "trylock of a held mutex", pthread_mutex_trylock(&m), EBUSY);
        timespec t = after_ms(CLOCK_REALTIME, 30);
        expect_eq("timedlock", "timedlock of a held mutex", pthread_mutex_timedlock(&m, &t), ETIMEDOUT);
        if (!reached(CLOCK_REALTIME, t)) fail("timedlock", "returned before its deadline");
        t = after_ms(CLOCK_MONOTONIC, 30);
        expect_eq("clocklock", "monotonic clocklock of a held mutex", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &t),
                  ETIMEDOUT);
        if (!reached(CLOCK_MONOTONIC, t)) fail("clocklock", "returned before its deadline");
        t.tv_nsec = 1'000'000'000;
        expect_eq("timedlock", "timedlock with tv_nsec 1e9", pthread_mutex_timedlock(&m, &t), EINVAL);
        expect_eq("clocklock", "clocklock on CLOCK_PROCESS_CPUTIME_ID",
                  pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &t), EINVAL);
    });
    expect_eq("destroy", "destroy of a held mutex", pthread_mutex_destroy(&m), EBUSY);
    pthread_mutex_unlock(&m);
    on_thread([&] {
        expect_eq("trylock", "trylock of a free mutex", pthread_mutex_trylock(&m), 0);
        pthread_mutex_unlock(&m);
        timespec t = after_ms(CLOCK_MONOTONIC, 1000);
        expect_eq("clocklock", "monotonic clocklock of a free mutex", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &t),
                  0);
        pthread_mutex_unlock(&m);
        t = after_ms(CLOCK_REALTIME, 1000);
        expect_eq("timedlock", "timedlock of a free mutex", pthread_mutex_timedlock(&m, &t), 0);
        pthread_mutex_unlock(&m);
    });
    expect_eq("destroy", "destroy of a free mutex", pthread_mutex_destroy(&m), 0);
    ok("trylock, timedlock and clocklock: EBUSY, ETIMEDOUT after the deadline, EINVAL, success");
}

// A predicate under a mutex and a cond: broadcast releases every waiter, signal a ping-pong.
struct gate {
    pthread_mutex_t* m;
    pthread_cond_t* c;
    int stage = 0;
    int arrived = 0;
};

void check_cond(pthread_mutex_t* m, const char* name) {
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    gate g{m, &c};
    constexpr int waiters = 3;
    pthread_t threads[waiters];
    for (auto& t : threads) {
        pthread_create(
            &t, nullptr,
            [](void* p) -> void* {
                auto& g = *static_cast<gate*>(p);
                pthread_mutex_lock(g.m);
                ++g.arrived;
                pthread_cond_broadcast(g.c);  // the main thread waits for arrivals on the same cond
                while (g.stage == 0) pthread_cond_wait(g.c, g.m);
                pthread_mutex_unlock(g.m);
                return nullptr;
            },
            &g);
    }
    pthread_mutex_lock(m);
    while (g.arrived < waiters) pthread_cond_wait(&c, m);
    g.stage = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(m);
    for (auto& t : threads) pthread_join(t, nullptr);

    // Ping-pong with signal: each side waits for its turn.
    constexpr int rounds = 500;
    g.stage = 0;
    pthread_t partner;
    pthread_create(
        &partner, nullptr,
        [](void* p) -> void* {
            auto& g = *static_cast<gate*>(p);
            pthread_mutex_lock(g.m);
            for (int i = 0; i < rounds; ++i) {
                while (g.stage % 2 == 0) pthread_cond_wait(g.c, g.m);
                ++g.stage;
                pthread_cond_signal(g.c);
            }
            pthread_mutex_unlock(g.m);
            return nullptr;
        },
        &g);
    pthread_mutex_lock(m);
    for (int i = 0; i < rounds; ++i) {
        while (g.stage % 2 == 1) pthread_cond_wait(&c, m);
        ++g.stage;
        pthread_cond_signal(&c);
    }
    while (g.stage < 2 * rounds) pthread_cond_wait(&c, m);
    pthread_mutex_unlock(m);
    pthread_join(partner, nullptr);
    expect_eq(name, "ping-pong stage", g.stage, 2 * rounds);

    // Timed waits that time out, on both clocks, and after their deadline.
    pthread_mutex_lock(m);
    timespec t = after_ms(CLOCK_REALTIME, 30);
    expect_eq(name, "timedwait", pthread_cond_timedwait(&c, m, &t), ETIMEDOUT);
    if (!reached(CLOCK_REALTIME, t)) fail(name, "timedwait returned before its deadline");
    t = after_ms(CLOCK_MONOTONIC, 30);
    expect_eq(name, "monotonic clockwait", pthread_cond_clockwait(&c, m, CLOCK_MONOTONIC, &t), ETIMEDOUT);
    if (!reached(CLOCK_MONOTONIC, t)) fail(name, "clockwait returned before its deadline");
    t.tv_nsec = -1;
    expect_eq(name, "timedwait with tv_nsec -1", pthread_cond_timedwait(&c, m, &t), EINVAL);
    pthread_mutex_unlock(m);
    expect_eq(name, "cond destroy", pthread_cond_destroy(&c), 0);
}

void check_monotonic_cond() {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_t c;
    pthread_cond_init(&c, &a);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    // A deadline on the monotonic clock, read as realtime, would be decades past: the wait
    // would return at once, before it.
    const timespec t = after_ms(CLOCK_MONOTONIC, 30);
    expect_eq("monotonic cond", "timedwait", pthread_cond_timedwait(&c, &m, &t), ETIMEDOUT);
    if (!reached(CLOCK_MONOTONIC, t)) fail("monotonic cond", "timedwait returned before its deadline");
    pthread_mutex_unlock(&m);
    pthread_cond_destroy(&c);
    pthread_condattr_destroy(&a);
    ok("a CLOCK_MONOTONIC cond's timedwait waits on that clock");
}

void init_typed(pthread_mutex_t* m, int type) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    if (int rc = pthread_mutex_init(m, &a)) fail("init_typed", "init", rc);
    pthread_mutexattr_destroy(&a);
}

void check_recursive() {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_RECURSIVE);
    for (int i = 0; i < 3; ++i) expect_eq("recursive", "relock", pthread_mutex_lock(&m), 0);
    expect_eq("recursive", "trylock by the owner", pthread_mutex_trylock(&m), 0);
    on_thread([&] { expect_eq("recursive", "trylock by another thread", pthread_mutex_trylock(&m), EBUSY); });
    for (int i = 0; i < 4; ++i) expect_eq("recursive", "unlock", pthread_mutex_unlock(&m), 0);
    on_thread([&] {
        expect_eq("recursive", "trylock once free", pthread_mutex_trylock(&m), 0);
        pthread_mutex_unlock(&m);
    });
    pthread_mutex_destroy(&m);
    ok("a recursive mutex relocks (passed through)");
}

void check_errorcheck() {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
    expect_eq("errorcheck", "lock", pthread_mutex_lock(&m), 0);
    expect_eq("errorcheck", "relock", pthread_mutex_lock(&m), EDEADLK);
    expect_eq("errorcheck", "unlock", pthread_mutex_unlock(&m), 0);
    expect_eq("errorcheck", "unlock when free", pthread_mutex_unlock(&m), EPERM);
    pthread_mutex_destroy(&m);
    ok("an error-checking mutex says EDEADLK and EPERM (passed through)");
}

void check_explicit_normal() {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_NORMAL);
    check_cond(&m, "cond with an attr-initialized normal mutex");
    pthread_mutex_destroy(&m);
    ok("cond wait, signal, broadcast and timed waits with a normal mutex from attributes");
}

void check_cond_with_passthrough() {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
    check_cond(&m, "cond with an error-checking mutex");
    pthread_mutex_destroy(&m);
    ok("cond wait, signal, broadcast and timed waits with an error-checking mutex");
}

// A cond first waited on with a normal mutex, then with an error-checking one (at different
// times, as POSIX allows): the second wait must still be woken by a signal.
void check_cond_switching_mutex() {
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_t checked;
    init_typed(&checked, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_lock(&normal);
    timespec t = after_ms(CLOCK_REALTIME, 10);
    expect_eq("cond switching", "timedwait with the normal mutex", pthread_cond_timedwait(&c, &normal, &t), ETIMEDOUT);
    pthread_mutex_unlock(&normal);
    gate g{&checked, &c};
    pthread_t waiter;
    pthread_create(
        &waiter, nullptr,
        [](void* p) -> void* {
            auto& g = *static_cast<gate*>(p);
            pthread_mutex_lock(g.m);
            g.arrived = 1;
            pthread_cond_signal(g.c);
            while (g.stage == 0) pthread_cond_wait(g.c, g.m);
            pthread_mutex_unlock(g.m);
            return nullptr;
        },
        &g);
    pthread_mutex_lock(&checked);
    while (g.arrived == 0) pthread_cond_wait(&c, &checked);
    g.stage = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&checked);
    pthread_join(waiter, nullptr);
    pthread_cond_destroy(&c);
    pthread_mutex_destroy(&checked);
    ok("a cond used with a normal mutex, then an error-checking one, still wakes");
}

// fork() while another thread holds a mutex: the child has a copy of memory and only the
// forking thread, so that mutex stays locked in it (as under glibc, where nobody will ever
// unlock it); one the forking thread holds is locked too, and the child may unlock it.
void check_fork() {
    static pthread_mutex_t held_elsewhere = PTHREAD_MUTEX_INITIALIZER;
    static pthread_mutex_t held_here = PTHREAD_MUTEX_INITIALIZER;
    static pthread_mutex_t state_mutex = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t state_cond = PTHREAD_COND_INITIALIZER;
    static int holder_state = 0;  // 1: holding; 2: told to release
    pthread_t holder;
    pthread_create(
        &holder, nullptr,
        [](void*) -> void* {
            pthread_mutex_lock(&held_elsewhere);
            pthread_mutex_lock(&state_mutex);
            holder_state = 1;
            pthread_cond_broadcast(&state_cond);
            while (holder_state != 2) pthread_cond_wait(&state_cond, &state_mutex);
            pthread_mutex_unlock(&state_mutex);
            pthread_mutex_unlock(&held_elsewhere);
            return nullptr;
        },
        nullptr);
    pthread_mutex_lock(&state_mutex);
    while (holder_state != 1) pthread_cond_wait(&state_cond, &state_mutex);
    pthread_mutex_unlock(&state_mutex);
    pthread_mutex_lock(&held_here);

    const pid_t child = fork();
    if (child < 0) fail("fork", "fork", errno);
    if (child == 0) {
        alarm(10);
        const timespec t = after_ms(CLOCK_REALTIME, 30);
        if (pthread_mutex_timedlock(&held_elsewhere, &t) != ETIMEDOUT) _exit(2);
        if (pthread_mutex_trylock(&held_here) != EBUSY) _exit(3);
        if (pthread_mutex_unlock(&held_here) != 0) _exit(4);
        if (pthread_mutex_trylock(&held_here) != 0) _exit(5);
        pthread_mutex_unlock(&held_here);
        pthread_mutex_lock(&state_mutex);
        pthread_cond_signal(&state_cond);
        pthread_mutex_unlock(&state_mutex);
        _exit(0);
    }
    pthread_mutex_unlock(&held_here);
    int status = 0;
    if (waitpid(child, &status, 0) != child) fail("fork", "waitpid", errno);
    if (!WIFEXITED(status)) fail("fork", "child did not exit", status);
    expect_eq("fork", "child's exit code", WEXITSTATUS(status), 0);
    pthread_mutex_lock(&state_mutex);
    holder_state = 2;
    pthread_cond_broadcast(&state_cond);
    pthread_mutex_unlock(&state_mutex);
    pthread_join(holder, nullptr);
    ok("fork: the child finds a mutex another thread held locked, and one it held unlockable");
}

// Every pthread_rwlock function once, with the answers glibc gives (interpose_rwlocks checks
// them in depth): two threads reading at once, a writer alone, the try and timed forms.
void check_rwlock_calls() {
    pthread_rwlock_t l;
    expect_eq("rwlock", "init", pthread_rwlock_init(&l, nullptr), 0);
    expect_eq("rwlock", "rdlock", pthread_rwlock_rdlock(&l), 0);
    timespec t = after_ms(CLOCK_REALTIME, 1000);
    on_thread([&] {
        expect_eq("rwlock", "tryrdlock beside a reader", pthread_rwlock_tryrdlock(&l), 0);
        expect_eq("rwlock", "unlock", pthread_rwlock_unlock(&l), 0);
        expect_eq("rwlock", "trywrlock beside a reader", pthread_rwlock_trywrlock(&l), EBUSY);
        timespec d = after_ms(CLOCK_MONOTONIC, 20);
        expect_eq("rwlock", "clockwrlock beside a reader", pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &d),
                  ETIMEDOUT);
        expect_eq("rwlock", "timedrdlock beside a reader", pthread_rwlock_timedrdlock(&l, &t), 0);
        expect_eq("rwlock", "unlock", pthread_rwlock_unlock(&l), 0);
    });
    expect_eq("rwlock", "unlock", pthread_rwlock_unlock(&l), 0);
    expect_eq("rwlock", "timedwrlock", pthread_rwlock_timedwrlock(&l, &t), 0);
    expect_eq("rwlock", "wrlock by the writer", pthread_rwlock_wrlock(&l), EDEADLK);
    on_thread([&] {
        timespec d = after_ms(CLOCK_MONOTONIC, 20);
        expect_eq("rwlock", "clockrdlock beside a writer", pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &d),
                  ETIMEDOUT);
        expect_eq("rwlock", "tryrdlock beside a writer", pthread_rwlock_tryrdlock(&l), EBUSY);
    });
    expect_eq("rwlock", "unlock", pthread_rwlock_unlock(&l), 0);
    expect_eq("rwlock", "wrlock", pthread_rwlock_wrlock(&l), 0);
    expect_eq("rwlock", "unlock", pthread_rwlock_unlock(&l), 0);
    expect_eq("rwlock", "destroy", pthread_rwlock_destroy(&l), 0);
    ok("rwlock: init, the read, write, try, timed and clock forms, unlock, destroy");
}

// Process-shared objects stay glibc's. A process-shared cond with a private normal mutex is
// the one documented difference: glibc waits, the interposer fails with EINVAL when it runs
// the mutex (docs/interpose.md).
void check_pshared(bool interposed) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_t m;
    pthread_mutex_init(&m, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_t c;
    pthread_cond_init(&c, &ca);
    pthread_mutex_lock(&m);
    expect_eq("pshared", "owner recorded", m.__data.__owner, gettid());
    timespec t = after_ms(CLOCK_REALTIME, 10);
    expect_eq("pshared", "timedwait", pthread_cond_timedwait(&c, &m, &t), ETIMEDOUT);
    pthread_mutex_unlock(&m);
    expect_eq("pshared", "signal", pthread_cond_signal(&c), 0);
    pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&normal);
    t = after_ms(CLOCK_REALTIME, 10);
    expect_eq("pshared", "timedwait with a private normal mutex", pthread_cond_timedwait(&c, &normal, &t),
              interposed ? EINVAL : ETIMEDOUT);
    pthread_mutex_unlock(&normal);
    pthread_cond_destroy(&c);
    pthread_mutex_destroy(&m);
    pthread_condattr_destroy(&ca);
    pthread_mutexattr_destroy(&ma);
    ok("process-shared mutexes and conds are passed through");
}

// A library loaded after start-up binds to the interposer too (its path is argv[1]).
void check_dlopen(const char* path, bool interposed) {
    void* module = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (module == nullptr) fail("dlopen", "cannot load the module (argv[1])");
    auto increment = reinterpret_cast<int (*)(long)>(dlsym(module, "dlopened_increment"));
    auto count = reinterpret_cast<long (*)()>(dlsym(module, "dlopened_count"));
    if (increment == nullptr || count == nullptr) fail("dlopen", "module symbols missing");
    constexpr int threads = 2;
    constexpr long rounds = 20'000;
    static int owners[threads];
    pthread_t t[threads];
    static decltype(increment) f;
    f = increment;  // before the threads start: they read it
    for (int i = 0; i < threads; ++i) {
        pthread_create(
            &t[i], nullptr,
            [](void* p) -> void* {
                *static_cast<int*>(p) = f(rounds);
                return nullptr;
            },
            &owners[i]);
    }
    for (auto& th : t) pthread_join(th, nullptr);
    expect_eq("dlopen", "module count", count(), threads * rounds);
    for (int owner : owners) {
        if ((owner == 0) != interposed) fail("dlopen", "the module's mutex records an owner", owner);
    }
    dlclose(module);
    ok("a dlopen'ed library's mutex runs on the same lock as the program's");
}

}  // namespace

int main(int argc, char** argv) {
    alarm(60);  // the whole run takes well under a second: a hang fails here
    check_interposition();
    check_counters();
    check_trylock_and_timed();
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    check_cond(&m, "cond with a static mutex");
    ok("cond wait, signal, broadcast and timed waits with a static mutex");
    check_explicit_normal();
    check_monotonic_cond();
    check_recursive();
    check_errorcheck();
    check_cond_with_passthrough();
    check_cond_switching_mutex();
    check_fork();
    check_rwlock_calls();
    const std::string active = std::getenv("CONTEND_INTERPOSE_EXPECT") ? std::getenv("CONTEND_INTERPOSE_EXPECT") : "";
    const bool interposed = active != "glibc" && active != "none";
    check_pshared(interposed);
    check_dlopen(argc > 1 ? argv[1] : nullptr, interposed);
    std::printf("all checks passed\n");
    return 0;
}
