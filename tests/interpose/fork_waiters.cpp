// interpose_fork: fork() while the forking thread holds a mutex that other threads wait for,
// the pthread_atfork pattern (the prepare handler locks the mutex, the parent's handler
// unlocks it, and so does the child's). The child has one thread; the waiters exist only in
// the parent, and the child must find the mutex free after its unlock and usable by threads
// it starts. ctest runs this preloaded under each lock choice and without the preload.
//
// Every wait is bounded: each child by alarm() and by the parent's deadline for it, the run
// by alarm(). Prints one "ok" line; on a failure "FAIL <why>" and exits 1.
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
long counter = 0;  // under `shared`
// Contended in the parent too, but not held by the forking thread: the child finds it held
// by a thread it does not have (then locked for good, as under glibc, and skipped), or free,
// possibly with the marks of the parent's waiters on it, and then it must work.
pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
long other_counter = 0;  // under `other`
std::atomic<bool> stop{false};

[[noreturn]] void fail(const char* why, long value = 0) {
    std::printf("FAIL %s (%ld)\n", why, value);
    std::fflush(stdout);
    std::_Exit(1);
}

void prepare() {
    pthread_mutex_lock(&shared);
    // Long enough for the waiters to queue up behind it (spinning, parked, or with tickets).
    usleep(2000);
}
void parent_after() { pthread_mutex_unlock(&shared); }
void child_after() {
    if (const int rc = pthread_mutex_unlock(&shared)) _exit(10 + rc % 100);
}

timespec after_s(long s) {
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += s;
    return t;
}

void* hammer(void* which) {
    pthread_mutex_t* m = which != nullptr ? &other : &shared;
    long* n = which != nullptr ? &other_counter : &counter;
    while (!stop.load(std::memory_order_relaxed)) {
        pthread_mutex_lock(m);
        ++*n;
        for (int spin = 0; spin < 200; ++spin) asm volatile("" ::: "memory");  // a short hold
        pthread_mutex_unlock(m);
    }
    return nullptr;
}

// Threads of the child's own contend for `m`: it must hand itself on among them. One takes it
// with timedlock, the others with lock (bounded by the alarm). They start while this thread
// holds it, so that they queue before its first release.
void contend_in_child(pthread_mutex_t* m, long* n) {
    if (pthread_mutex_lock(m) != 0) _exit(3);
    constexpr int threads = 3;
    constexpr long rounds = 1000;
    struct job {
        pthread_mutex_t* m;
        long* n;
        bool timed;
    } jobs[threads];
    pthread_t t[threads];
    const long before = *n;
    for (int k = 0; k < threads; ++k) {
        jobs[k] = {m, n, k == 0};
        pthread_create(
            &t[k], nullptr,
            [](void* p) -> void* {
                const job& j = *static_cast<job*>(p);
                for (long i = 0; i < rounds; ++i) {
                    // Past the alarm: the spin locks' timed lock polls, and may wait for the
                    // other threads' rounds to end; the alarm is the bound.
                    const timespec deadline = after_s(120);
                    if (j.timed ? pthread_mutex_timedlock(j.m, &deadline) != 0 : pthread_mutex_lock(j.m) != 0) _exit(3);
                    ++*j.n;
                    pthread_mutex_unlock(j.m);
                }
                return nullptr;
            },
            &jobs[k]);
    }
    usleep(50'000);
    pthread_mutex_unlock(m);
    for (auto& th : t) pthread_join(th, nullptr);
    if (*n != before + threads * rounds) _exit(4);
}

// One thread of the child waits for `m` long enough to go to sleep (no crowd to yield in, no
// spin left), and this one releases it: an unlock that leaves the waiter to a designee the
// child does not have would leave it asleep until the alarm.
void one_sleeper_in_child(pthread_mutex_t* m) {
    if (pthread_mutex_lock(m) != 0) _exit(3);
    pthread_t t;
    pthread_create(
        &t, nullptr,
        [](void* p) -> void* {
            auto* m = static_cast<pthread_mutex_t*>(p);
            if (pthread_mutex_lock(m) != 0) _exit(3);
            pthread_mutex_unlock(m);
            return nullptr;
        },
        m);
    usleep(50'000);
    pthread_mutex_unlock(m);
    pthread_join(t, nullptr);
}

// The child's part. Exit codes: 0 right; 2 trylock after the unlock failed; 3 a thread of
// the child could not take the mutex in time; 4 the count is off; 10+ the unlock failed.
void child() {
    alarm(40);
    if (pthread_mutex_trylock(&shared) != 0) _exit(2);
    pthread_mutex_unlock(&shared);
    contend_in_child(&shared, &counter);
    if (pthread_mutex_trylock(&other) == 0) {
        pthread_mutex_unlock(&other);
        contend_in_child(&other, &other_counter);
    }
    _exit(0);
}

// Forks and checks the child: it must exit 0 within 60 s (its own alarm fires at 40 s).
void run_child(int i, void (*body)()) {
    const pid_t pid = fork();
    if (pid < 0) fail("fork", errno);
    if (pid == 0) {
        body();
        _exit(0);
    }
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; (done = waitpid(pid, &status, WNOHANG)) == 0 && waited_ms < 60'000; waited_ms += 5)
        usleep(5000);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        std::printf("FAIL child %d did not finish in 60 s (it hangs on the mutex)\n", i);
        std::fflush(stdout);
        std::_Exit(1);
    }
    if (!WIFEXITED(status)) fail("a child died of a signal (SIGALRM: it hung)", WTERMSIG(status));
    if (WEXITSTATUS(status) != 0) {
        std::printf(
            "FAIL child %d exited with %d (2: trylock after the unlock failed; 3: a lock call failed; "
            "4: count; 10+: the unlock failed)\n",
            i, WEXITSTATUS(status));
        std::fflush(stdout);
        std::_Exit(1);
    }
}

// A mutex that a waiter of the parent serves as contend::mutex's designee (the one waiter
// that stays awake, marked in the mutex) when the forking thread, its holder, forks: the
// child has the mark and not the designee, and once the child unlocks it the mutex is free
// with a mark nobody will act on. The parent's waiter is left running: an earlier version
// held it in a signal handler so that the mutex could be released first, and on a loaded
// machine the signal landed inside malloc (the waiter's first park allocates the parking
// lot's table), so the fork waited for good on the arena lock the handler kept.
void mutex_marked_by_a_designee_the_child_lacks() {
    pthread_mutex_t* m = &other;
    pthread_mutex_lock(m);
    pthread_t waiter;
    pthread_create(
        &waiter, nullptr,
        [](void*) -> void* {
            pthread_mutex_lock(&other);
            pthread_mutex_unlock(&other);
            return nullptr;
        },
        nullptr);
    // Under contend_mutex the waiter marks the mutex WAKING (0x02 in its byte) as it becomes
    // the designee; elsewhere it just waits.
    const char* lock = std::getenv("CONTEND_INTERPOSE_LOCK");
    if (lock != nullptr && std::strcmp(lock, "contend_mutex") == 0) {
        int waited_ms = 0;
        while ((__atomic_load_n(reinterpret_cast<unsigned char*>(m), __ATOMIC_RELAXED) & 2) == 0) {
            if (++waited_ms > 10'000) fail("the waiter never became the designee");
            usleep(1000);
        }
    } else {
        usleep(50'000);
    }
    run_child(-1, [] {
        alarm(40);
        // Held by this thread (the forking one): its unlock leaves the mutex free, with the
        // designee's mark under contend_mutex, and a ghost ticket under the ticket lock.
        if (const int rc = pthread_mutex_unlock(&other)) _exit(10 + rc % 100);
        if (pthread_mutex_trylock(&other) != 0) _exit(2);
        pthread_mutex_unlock(&other);
        contend_in_child(&other, &other_counter);
    });
    pthread_mutex_unlock(m);
    pthread_join(waiter, nullptr);
    if (lock != nullptr && std::strcmp(lock, "contend_mutex") == 0) {
        // The same mark on a free mutex: the parent's holder had released it and its designee
        // had not yet taken it when the parent forked. Then the child's first lock keeps the
        // mark, and its unlock leaves a waiter of the child to that designee. The moment is
        // written into the byte here: catching it for real means stopping the designee, and a
        // signal that stops a thread stops it wherever it is (inside malloc, in the version
        // above). The parent's mutex has no designee now, so the mark is taken off after.
        auto* byte = reinterpret_cast<unsigned char*>(m);
        if (__atomic_load_n(byte, __ATOMIC_RELAXED) != 0) fail("the mutex is not free and unmarked", *byte);
        __atomic_store_n(byte, 2, __ATOMIC_RELAXED);
        run_child(-2, [] {
            alarm(40);
            one_sleeper_in_child(&other);
            contend_in_child(&other, &other_counter);
        });
        __atomic_store_n(byte, 0, __ATOMIC_RELAXED);
    }
    std::printf("ok fork: the child used a mutex marked by a designee it does not have\n");
    std::fflush(stdout);
}

}  // namespace

int main() {
    alarm(280);
    mutex_marked_by_a_designee_the_child_lacks();
    if (pthread_atfork(prepare, parent_after, child_after) != 0) fail("pthread_atfork");
    constexpr int waiters = 6;
    pthread_t t[waiters];
    for (int k = 0; k < waiters; ++k) pthread_create(&t[k], nullptr, hammer, k % 2 ? &other : nullptr);
    constexpr int children = 20;
    for (int i = 0; i < children; ++i) run_child(i, child);
    stop = true;
    for (auto& th : t) pthread_join(th, nullptr);
    std::printf("ok fork: %d children unlocked a mutex their parent's threads waited for, and used it\n", children);
    return 0;
}
