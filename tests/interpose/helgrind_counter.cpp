// A program helgrind must find free of races when the interposer runs its mutexes and conds
// (tests/interpose/helgrind_clean.sh). Threads add to a counter under one mutex, now and then
// yielding while they hold it, so that the others find it held and park (helgrind runs one
// thread at a time: without the yield nobody would wait); then they take turns on a cond
// with that mutex (each waits for its turn, and broadcasts when it has had it); main waits on
// another cond until each has said it is done. Only the pthread functions order its accesses,
// so every access helgrind calls a race is one the interposer failed to tell it about
// (docs/interpose.md). With the argument `race`, main and each thread also add to a second
// counter without the mutex, before either takes it: a real race, which helgrind must still
// report. Small on purpose: helgrind
// runs it slowly.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int threads = 4;
constexpr int increments = 200;
constexpr int rounds = 3;

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
long counter = 0;  // plain: only m orders it
int turn = 0;  // plain: only m orders it
int finished = 0;  // plain: only m orders it
bool race = false;
long unguarded = 0;  // with `race`: written by main and every thread without m

void check(int rc) {
    if (rc != 0) {
        std::fprintf(stderr, "FAIL a pthread call returned %d (%s)\n", rc, std::strerror(rc));
        std::abort();
    }
}

void* add(void* arg) {
    const int me = static_cast<int>(reinterpret_cast<long>(arg));
    if (race) ++unguarded;
    for (int i = 0; i < increments; ++i) {
        check(pthread_mutex_lock(&m));
        ++counter;
        if (i % 25 == 0) sched_yield();  // the others find the mutex held
        check(pthread_mutex_unlock(&m));
    }
    // Turns: the waits end because every thread takes its turns (each broadcast under m).
    for (int r = 0; r < rounds; ++r) {
        check(pthread_mutex_lock(&m));
        while (turn % threads != me) check(pthread_cond_wait(&turn_changed, &m));
        ++turn;
        check(pthread_cond_broadcast(&turn_changed));
        check(pthread_mutex_unlock(&m));
    }
    check(pthread_mutex_lock(&m));
    ++finished;
    check(pthread_cond_signal(&all_done));
    check(pthread_mutex_unlock(&m));
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    race = argc > 1 && std::strcmp(argv[1], "race") == 0;
    pthread_t t[threads];
    for (long i = 0; i < threads; ++i) check(pthread_create(&t[i], nullptr, add, reinterpret_cast<void*>(i)));
    if (race) ++unguarded;
    // The wait ends when every thread has finished (each signals under the mutex after it
    // counted itself), so it is bounded by the threads' own work.
    check(pthread_mutex_lock(&m));
    while (finished < threads) check(pthread_cond_wait(&all_done, &m));
    const long seen = counter;
    const int turns = turn;
    check(pthread_mutex_unlock(&m));
    for (pthread_t& each : t) check(pthread_join(each, nullptr));
    // Which lock ran it (the interposer's name for it), so that a run the preload missed
    // cannot pass for a clean one.
    using active_fn = const char* (*)();
    const auto active = reinterpret_cast<active_fn>(dlsym(RTLD_DEFAULT, "contend_interpose_active"));
    std::printf("counter %ld of %d, turns %d of %d, lock %s\n", seen, threads * increments, turns, threads * rounds,
                active ? active() : "none");
    return seen == long{threads} * increments && turns == threads * rounds ? 0 : 1;
}
