// A program helgrind must find free of races when the interposer runs its mutexes and conds
// (tests/interpose/helgrind_clean.sh): threads add to a counter under one mutex, and main
// waits on a cond, with that mutex, until each has said it is done. Only the pthread
// functions order its accesses, so every access helgrind calls a race is one the interposer
// failed to tell it about (docs/interpose.md). Small on purpose: helgrind runs it slowly.
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int threads = 4;
constexpr int increments = 200;

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
long counter = 0;  // plain: only m orders it
int finished = 0;  // plain: only m orders it

void* add(void*) {
    for (int i = 0; i < increments; ++i) {
        if (pthread_mutex_lock(&m) != 0) std::abort();
        ++counter;
        if (pthread_mutex_unlock(&m) != 0) std::abort();
    }
    if (pthread_mutex_lock(&m) != 0) std::abort();
    ++finished;
    if (pthread_cond_signal(&all_done) != 0) std::abort();
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    return nullptr;
}

}  // namespace

int main() {
    pthread_t t[threads];
    for (pthread_t& each : t)
        if (pthread_create(&each, nullptr, add, nullptr) != 0) std::abort();
    // The wait ends when every thread has finished (each signals under the mutex after it
    // counted itself), so it is bounded by the threads' own work.
    if (pthread_mutex_lock(&m) != 0) std::abort();
    while (finished < threads)
        if (pthread_cond_wait(&all_done, &m) != 0) std::abort();
    const long seen = counter;
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    for (pthread_t& each : t)
        if (pthread_join(each, nullptr) != 0) std::abort();
    // Which lock ran it (the interposer's name for it), so that a run the preload missed
    // cannot pass for a clean one.
    using active_fn = const char* (*)();
    const auto active = reinterpret_cast<active_fn>(dlsym(RTLD_DEFAULT, "contend_interpose_active"));
    std::printf("counter %ld of %d, lock %s\n", seen, threads * increments, active ? active() : "none");
    return seen == long{threads} * increments ? 0 : 1;
}
