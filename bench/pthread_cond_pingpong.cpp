// A plain pthread program for condition-variable handoffs under `contend run`: THREADS
// threads take turns under one mutex and one cond. Each waits until the shared turn is its
// own, passes it to the next thread and wakes the others (pthread_cond_signal with two
// threads, where the one waiter is the next, pthread_cond_broadcast with more), ROUNDS turns
// in all. Prints the wall time and the time per turn. It knows nothing of contend; preloaded,
// its calls are the interposer's (scripts/cond_handoff.sh runs it under every lock,
// interleaved).
//
//   pthread_cond_pingpong [THREADS] [ROUNDS]   (default 2 threads, 200,000 turns)
//
// PIN=spread puts thread i on the i-th CPU it may run on (modulo their count), PIN=one puts
// every thread on the first: on a small machine the scheduler otherwise picks either
// placement from run to run, and a wake-up across CPUs costs several times one on the waker's
// CPU, so the two placements are measured apart.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t c = PTHREAD_COND_INITIALIZER;
long turn = 0;  // guarded by m: the count of turns taken; thread turn % threads goes next
long threads = 2;
long rounds = 200'000;

double now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Pins the calling thread as PIN says (see the top of this file); exits 2 on a bad value.
void pin(long me) {
    const char* how = std::getenv("PIN");
    if (how == nullptr || *how == '\0') return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) std::abort();
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    const std::string_view mode(how);
    if (mode != "spread" && mode != "one") {
        std::fprintf(stderr, "pthread_cond_pingpong: PIN is 'spread' or 'one', not '%s'\n", how);
        std::exit(2);
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[mode == "one" ? 0 : static_cast<std::size_t>(me) % cpus.size()], &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) std::abort();
}

void* take_turns(void* arg) {
    const long me = reinterpret_cast<long>(arg);
    pin(me);
    if (pthread_mutex_lock(&m) != 0) std::abort();
    for (;;) {
        while (turn < rounds && turn % threads != me)
            if (pthread_cond_wait(&c, &m) != 0) std::abort();
        if (turn >= rounds) break;
        ++turn;
        if ((threads == 2 ? pthread_cond_signal(&c) : pthread_cond_broadcast(&c)) != 0) std::abort();
    }
    if (pthread_cond_broadcast(&c) != 0) std::abort();  // the others see the end
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    return nullptr;
}

long parse(const char* s, long lo, long hi) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        std::fprintf(stderr, "usage: pthread_cond_pingpong [THREADS 2..64] [ROUNDS 1..1e9]\n");
        std::exit(2);
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1) threads = parse(argv[1], 2, 64);
    if (argc > 2) rounds = parse(argv[2], 1, 1'000'000'000);
    std::vector<pthread_t> ts(static_cast<std::size_t>(threads));
    const double start = now_ns();
    for (long i = 0; i < threads; ++i)
        if (pthread_create(&ts[static_cast<std::size_t>(i)], nullptr, take_turns, reinterpret_cast<void*>(i)) != 0)
            std::abort();
    for (auto& t : ts) pthread_join(t, nullptr);
    const double ns = now_ns() - start;
    std::printf("threads=%ld turns=%ld ms=%.1f ns_per_turn=%.0f\n", threads, turn, ns / 1e6,
                ns / static_cast<double>(turn));
    return 0;
}
