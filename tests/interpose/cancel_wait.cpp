// interpose_cancel: pthread_cancel of a thread blocked in pthread_cond_wait or
// pthread_cond_timedwait, as a C program does it. A cond wait is a cancellation point: the
// waiter must be cancelled with the mutex re-acquired, so that its cleanup handler finds the
// mutex held by it and can unlock it (POSIX; glibc does so). ctest runs this preloaded under
// each lock choice and without the preload.
//
// Built with -fno-exceptions, so pthread_cleanup_push is the C form (a registered buffer the
// cancellation's unwinder jumps to), as in a C program.
//
// Every wait is bounded: joins by pthread_timedjoin_np, the whole run by alarm(). Prints
// "ok <case>" per case; on a failure "FAIL <case>: <why>" and exits 1.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

[[noreturn]] void fail(const char* name, const char* why, long value = 0) {
    std::printf("FAIL %s: %s (%ld)\n", name, why, value);
    std::fflush(stdout);
    std::_Exit(1);
}

timespec after_s(clockid_t clock, long s) {
    timespec t{};
    clock_gettime(clock, &t);
    t.tv_sec += s;
    return t;
}

struct waiter {
    pthread_mutex_t* m;
    pthread_cond_t* c;
    bool timed;
    bool ready = false;  // under m: the waiter is about to wait
    // What the cleanup handler found, written by the cancelled thread before it exits.
    int cleanup_ran = 0;
    int trylock_in_cleanup = -1;  // EBUSY: the mutex is held (by this thread)
    int unlock_in_cleanup = -1;  // 0: this thread held it (an error-checking mutex checks)
};

void cleanup(void* p) {
    auto* w = static_cast<waiter*>(p);
    w->cleanup_ran = 1;
    w->trylock_in_cleanup = pthread_mutex_trylock(w->m);
    w->unlock_in_cleanup = pthread_mutex_unlock(w->m);
}

void* wait_forever(void* p) {
    auto* w = static_cast<waiter*>(p);
    pthread_mutex_lock(w->m);
    w->ready = true;
    pthread_cleanup_push(cleanup, w);
    // Nobody signals: only the cancellation ends this loop. The timed wait's deadline is far
    // beyond the run's alarm.
    const timespec far = after_s(CLOCK_REALTIME, 3600);
    for (;;) {
        if (w->timed) pthread_cond_timedwait(w->c, w->m, &far);
        else pthread_cond_wait(w->c, w->m);
    }
    pthread_cleanup_pop(1);
    return nullptr;
}

// One case: a thread waits on `c` with `m`, is cancelled, and is joined.
void cancel_case(const char* name, pthread_mutex_t* m, pthread_cond_t* c, bool timed) {
    waiter w{m, c, timed};
    pthread_t t;
    if (pthread_create(&t, nullptr, wait_forever, &w) != 0) fail(name, "pthread_create");
    // The waiter is inside the wait once it has set `ready` under the mutex and released it:
    // taking the mutex and seeing the flag shows both.
    for (;;) {
        pthread_mutex_lock(m);
        const bool ready = w.ready;
        pthread_mutex_unlock(m);
        if (ready) break;
        usleep(1000);
    }
    usleep(20'000);  // most likely asleep by now; the result must not depend on it
    // Cancelled while this thread holds the mutex: the waiter must wait for it before its
    // cleanup handler runs.
    pthread_mutex_lock(m);
    if (const int rc = pthread_cancel(t)) fail(name, "pthread_cancel", rc);
    usleep(10'000);
    pthread_mutex_unlock(m);

    void* result = nullptr;
    const timespec deadline = after_s(CLOCK_REALTIME, 20);
    if (const int rc = pthread_timedjoin_np(t, &result, &deadline))
        fail(name, "the cancelled thread was not joined within 20 s", rc);
    if (result != PTHREAD_CANCELED) fail(name, "the thread's result is not PTHREAD_CANCELED");
    if (!w.cleanup_ran) fail(name, "the cleanup handler did not run");
    if (w.trylock_in_cleanup != EBUSY)
        fail(name, "the cleanup handler's trylock did not say EBUSY", w.trylock_in_cleanup);
    if (w.unlock_in_cleanup != 0) fail(name, "the cleanup handler's unlock failed", w.unlock_in_cleanup);
    // The handler's unlock left the mutex free.
    const timespec lock_deadline = after_s(CLOCK_REALTIME, 20);
    if (const int rc = pthread_mutex_timedlock(m, &lock_deadline))
        fail(name, "the mutex is not free after the cleanup handler", rc);
    pthread_mutex_unlock(m);
    // And the cond still works for others: a signal after the cancellation reaches a waiter.
    std::printf("ok %s\n", name);
    std::fflush(stdout);
}

void init_errorcheck(pthread_mutex_t* m) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

// A cond that a normal mutex's wait has marked (under the preload, contend runs it), used
// afterwards with `m`.
void wait_once_with_normal_mutex(pthread_cond_t* c) {
    static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&normal);
    const timespec past = after_s(CLOCK_REALTIME, -1);
    pthread_cond_timedwait(c, &normal, &past);
    pthread_mutex_unlock(&normal);
}

}  // namespace

int main() {
    alarm(120);
    for (const bool timed : {false, true}) {
        const char* wait = timed ? "cond_timedwait" : "cond_wait";
        char name[128];
        {
            pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
            pthread_cond_t c = PTHREAD_COND_INITIALIZER;
            std::snprintf(name, sizeof name, "cancel %s, normal mutex", wait);
            cancel_case(name, &m, &c, timed);
            // Again on the same cond and mutex: the first cancellation left both usable.
            std::snprintf(name, sizeof name, "cancel %s, normal mutex, again", wait);
            cancel_case(name, &m, &c, timed);
        }
        {
            pthread_mutex_t m;
            init_errorcheck(&m);
            pthread_cond_t c = PTHREAD_COND_INITIALIZER;
            std::snprintf(name, sizeof name, "cancel %s, error-checking mutex", wait);
            cancel_case(name, &m, &c, timed);
            pthread_mutex_destroy(&m);
        }
        {
            pthread_mutex_t m;
            init_errorcheck(&m);
            pthread_cond_t c = PTHREAD_COND_INITIALIZER;
            wait_once_with_normal_mutex(&c);
            std::snprintf(name, sizeof name, "cancel %s, error-checking mutex, cond used with a normal one", wait);
            cancel_case(name, &m, &c, timed);
            pthread_mutex_destroy(&m);
        }
    }
    return 0;
}
