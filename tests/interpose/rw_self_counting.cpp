// A program that counts its own rwlock acquisitions and contentions, by mode, for the
// profile's test (profile_test.cpp): what the interposer's profile says of the rwlock must
// agree with what the program saw.
//
// Two threads take turns with one rwlock for `rounds` rounds (argv[1]). In an even round main
// holds it for writing and the helper reads; in an odd one main reads and the helper writes.
// Main holds until the helper has said it is about to try, and 20 us longer, so the helper's
// try (tryrdlock or trywrlock) fails, which the program counts as a contention of that mode,
// and the helper then waits with rdlock or wrlock. The profile's count of contended reads and
// writes can only fall short by a blocking call that finds the rwlock free again (a helper
// preempted between its try and its lock). Every acquisition is counted, by mode; at the end
// the program prints one line of counts. Every wait is bounded: alarm().
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using clock_type = std::chrono::steady_clock;

pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
std::atomic<long> holding{-1}, announced{-1}, done{-1};
std::atomic<long> reads{0}, writes{0}, read_contentions{0}, write_contentions{0}, busy{0};
long rounds = 0;

void spin_for(std::chrono::microseconds d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

void wait_until(const std::atomic<long>& v, long value) {
    while (v.load() != value) sched_yield();
}

void* helper(void*) {
    for (long r = 0; r < rounds; ++r) {
        wait_until(holding, r);
        const bool reading = r % 2 == 0;
        announced.store(r);
        const int rc = reading ? pthread_rwlock_tryrdlock(&rw) : pthread_rwlock_trywrlock(&rw);
        if (rc != 0) {
            ++busy;
            ++(reading ? read_contentions : write_contentions);
            if ((reading ? pthread_rwlock_rdlock(&rw) : pthread_rwlock_wrlock(&rw)) != 0) std::abort();
        }
        ++(reading ? reads : writes);
        pthread_rwlock_unlock(&rw);
        done.store(r);
    }
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    alarm(60);
    rounds = argc > 1 ? std::atol(argv[1]) : 1000;
    pthread_t t;
    pthread_create(&t, nullptr, helper, nullptr);
    for (long r = 0; r < rounds; ++r) {
        const bool writing = r % 2 == 0;
        if ((writing ? pthread_rwlock_wrlock(&rw) : pthread_rwlock_rdlock(&rw)) != 0) std::abort();
        ++(writing ? writes : reads);
        holding.store(r);
        wait_until(announced, r);
        spin_for(std::chrono::microseconds(20));
        pthread_rwlock_unlock(&rw);
        wait_until(done, r);
    }
    pthread_join(t, nullptr);
    std::printf("reads=%ld writes=%ld read_contentions=%ld write_contentions=%ld busy=%ld\n", reads.load(),
                writes.load(), read_contentions.load(), write_contentions.load(), busy.load());
    return 0;
}
