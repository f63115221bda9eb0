// A mutex unlocked by a thread other than the one that locked it, for the profile's test
// (profile_test.cpp). POSIX leaves this undefined for a normal mutex, glibc allows it, and
// programs do it (a lock handed to a worker that releases it). The profile times a hold from
// an acquisition to the same thread's release: a hold begun by the locking thread must not
// run on to that thread's next release of the mutex, over the gap between.
//
// The mutex is contended once (holds are timed only on mutexes with a record). Then, in each
// of `rounds` rounds (argv[1]): main locks it, a new thread unlocks it, main spins 100 us,
// then locks and unlocks it at once. Every hold main really makes is a few nanoseconds long.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void spin_for(std::chrono::microseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
}

std::atomic<bool> held{false}, trying{false};

// Every wait is bounded: a lost turn ends the program instead of hanging it.
template <class Done>
void wait_until(Done done) {
    const auto give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
        if (std::chrono::steady_clock::now() > give_up_at) {
            std::printf("FAIL a turn never came\n");
            std::exit(1);
        }
        sched_yield();
    }
}

// Holds the mutex from before main tries it until 20 ms after main said it was about to.
void* hold_a_while(void*) {
    if (pthread_mutex_lock(&m) != 0) std::abort();
    held = true;
    wait_until([] { return trying.load(); });
    spin_for(std::chrono::milliseconds(20));
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    return nullptr;
}

void* unlock_it(void*) {
    if (pthread_mutex_unlock(&m) != 0) std::abort();
    return nullptr;
}

void run_thread(void* (*f)(void*)) {
    pthread_t t;
    if (pthread_create(&t, nullptr, f, nullptr) != 0) std::abort();
    pthread_join(t, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    const long rounds = argc > 1 ? std::atol(argv[1]) : 200;
    // One contention.
    pthread_t holder;
    if (pthread_create(&holder, nullptr, hold_a_while, nullptr) != 0) std::abort();
    wait_until([] { return held.load(); });
    trying = true;
    if (pthread_mutex_lock(&m) != 0 || pthread_mutex_unlock(&m) != 0) std::abort();
    pthread_join(holder, nullptr);

    for (long i = 0; i < rounds; ++i) {
        if (pthread_mutex_lock(&m) != 0) std::abort();
        run_thread(unlock_it);
        spin_for(std::chrono::microseconds(100));
        if (pthread_mutex_lock(&m) != 0 || pthread_mutex_unlock(&m) != 0) std::abort();
    }
    std::printf("rounds=%ld\n", rounds);
    return 0;
}
