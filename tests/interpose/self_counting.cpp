// A program that counts its own lock contentions, for the profile's test (profile_test.cpp):
// whatever the interposer's profile says must agree with what the program saw itself.
//
// Two threads take one mutex for `seconds` (argv[1]): each tries pthread_mutex_trylock first
// and counts a failure as a contention of its own, then waits with pthread_mutex_lock. The
// hold (about 20 us of spinning) is long beside the gap between the failed trylock and the
// lock's first try (tens of nanoseconds), so a lock call that finds the mutex free again is
// rare. Then a condition-variable ping-pong on a second mutex, its contentions counted the
// same way. Every acquisition is counted by the program, the returns from
// pthread_cond_wait included; at the end it prints one line of counts and its duration.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using clock_type = std::chrono::steady_clock;

pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pong_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t pong_cond = PTHREAD_COND_INITIALIZER;

std::uint64_t shared_count = 0;  // under `hot`
clock_type::time_point stop_at;
std::atomic<std::uint64_t> acquisitions{0}, contentions{0};

void spin_for(std::chrono::microseconds d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

// The program's own count of a contention: a trylock that finds the mutex held.
void lock_counting(pthread_mutex_t* m, std::uint64_t& contended) {
    if (pthread_mutex_trylock(m) != 0) {
        ++contended;
        if (pthread_mutex_lock(m) != 0) std::abort();
    }
}

void* contend(void*) {
    std::uint64_t mine = 0, contended = 0;
    while (clock_type::now() < stop_at) {
        lock_counting(&hot, contended);
        ++mine;
        ++shared_count;
        spin_for(std::chrono::microseconds(20));
        pthread_mutex_unlock(&hot);
        spin_for(std::chrono::microseconds(2));
    }
    acquisitions += mine;
    contentions += contended;
    return nullptr;
}

// The ping-pong: `turn` says whose move it is; each side waits for its turn with the cond.
int turn = 0;
constexpr int rounds = 500;
std::atomic<std::uint64_t> pong_acquisitions{0};

void* pong_side(void* arg) {
    const int me = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
    std::uint64_t mine = 0, contended = 0;
    for (int i = 0; i < rounds; ++i) {
        lock_counting(&pong_mutex, contended);
        ++mine;
        while (turn != me) {
            pthread_cond_wait(&pong_cond, &pong_mutex);
            ++mine;  // the wait returns holding the mutex again
        }
        turn = 1 - me;
        pthread_cond_broadcast(&pong_cond);
        pthread_mutex_unlock(&pong_mutex);
    }
    pong_acquisitions += mine;
    contentions += contended;
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
    const auto start = clock_type::now();
    stop_at = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));

    pthread_t threads[2];
    for (auto& t : threads) pthread_create(&t, nullptr, contend, nullptr);
    for (auto& t : threads) pthread_join(t, nullptr);
    if (shared_count != acquisitions.load()) {
        std::printf("FAIL the hot mutex let %llu increments through for %llu acquisitions\n",
                    static_cast<unsigned long long>(shared_count),
                    static_cast<unsigned long long>(acquisitions.load()));
        return 1;
    }

    for (std::intptr_t side = 0; side < 2; ++side)
        pthread_create(&threads[side], nullptr, pong_side, reinterpret_cast<void*>(side));
    for (auto& t : threads) pthread_join(t, nullptr);
    const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();

    // Read by profile_test: the hot mutex's acquisitions, then the program's contentions and
    // acquisitions of every mutex, over the seconds main ran.
    std::printf("hot_acquisitions=%llu contentions=%llu seconds=%.6f all_acquisitions=%llu\n",
                static_cast<unsigned long long>(acquisitions.load()),
                static_cast<unsigned long long>(contentions.load()), elapsed,
                static_cast<unsigned long long>(acquisitions.load() + pong_acquisitions.load()));
    return 0;
}
