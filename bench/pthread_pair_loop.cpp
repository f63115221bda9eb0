// A plain pthread program for `contend run`'s cost (scripts/profile_overhead.sh): one thread
// locks and unlocks one mutex in batches of a million pairs and prints the best batch's and
// the mean batch's nanoseconds a pair. It knows nothing of contend; preloaded, its calls are
// the interposer's.
//
// The mutex is contended once first, so that under `--profile` it has a record, as a program's
// hot mutex would: a mutex never contended skips the record's work and would price the
// profile too low. The best batch is the figure to compare: on a shared VM a batch that a
// preemption or a neighbour's burst reached is slower, never faster.
//
//   pthread_pair_loop [BATCHES]   (default 60)
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
constexpr long pairs_per_batch = 1'000'000;

double now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Holds the mutex 2 ms, long enough for main, started 0.5 ms in, to wait for it.
void* hold_a_while(void*) {
    if (pthread_mutex_lock(&m) != 0) std::abort();
    usleep(2000);
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    const long batches = argc > 1 ? std::atol(argv[1]) : 60;
    if (batches < 1) {
        std::fprintf(stderr, "usage: pthread_pair_loop [BATCHES >= 1]\n");
        return 2;
    }
    pthread_t holder;
    if (pthread_create(&holder, nullptr, hold_a_while, nullptr) != 0) std::abort();
    usleep(500);
    if (pthread_mutex_lock(&m) != 0 || pthread_mutex_unlock(&m) != 0) std::abort();
    pthread_join(holder, nullptr);

    double best = 1e300, sum = 0;
    for (long b = 0; b < batches; ++b) {
        const double start = now_ns();
        for (long i = 0; i < pairs_per_batch; ++i) {
            pthread_mutex_lock(&m);
            asm volatile("" ::: "memory");  // the pair is not folded away, nor moved out of the loop
            pthread_mutex_unlock(&m);
        }
        const double per_pair = (now_ns() - start) / pairs_per_batch;
        best = per_pair < best ? per_pair : best;
        sum += per_pair;
    }
    std::printf("best %.3f mean %.3f ns a pair (%ld batches of %ld)\n", best, sum / batches, batches, pairs_per_batch);
    return 0;
}
