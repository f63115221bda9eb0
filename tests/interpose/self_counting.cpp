// A program that counts its own lock contentions, for the profile's test (profile_test.cpp):
// whatever the interposer's profile says must agree with what the program saw itself.
//
// A program counts a contention the only way it can: a pthread_mutex_trylock that fails,
// after which it waits with pthread_mutex_lock. Two threads take turns with one mutex for
// `rounds` rounds (argv[1]); in each, one holds it until the other has said it is about to
// try, and 20 us longer, so every round has a contention however busy the machine is. The
// profile's count can only fall short by a lock call that finds the mutex free again after
// the program's trylock failed: the holder would have to release it within the tens of
// nanoseconds between the two calls, or the trying thread be preempted right there. Then a
// condition-variable ping-pong on a second mutex, its contentions counted the same way; there
// a holder keeps the mutex for a few instructions, so a lock call after a failed trylock often
// finds it free, and the profile sees only a part of those (the hot mutex's count is printed
// apart, for the exact comparison).
// Every acquisition is counted, the returns from pthread_cond_wait included; at the end the
// program prints one line of counts and how long main ran. A second argument `quick_exit`
// leaves through std::quick_exit.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

using clock_type = std::chrono::steady_clock;

pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pong_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t pong_cond = PTHREAD_COND_INITIALIZER;

std::uint64_t shared_count = 0;  // under `hot`
std::atomic<std::uint64_t> acquisitions{0}, contentions{0}, hot_contentions{0};

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

// Every wait of the protocol is bounded: a lost turn ends the program instead of hanging it.
clock_type::time_point give_up_at;
template <class Done>
void wait_for(Done done) {
    while (!done()) {
        if (clock_type::now() > give_up_at) {
            std::printf("FAIL a turn of the protocol never came\n");
            std::exit(1);
        }
        sched_yield();
    }
}

long rounds_of_turns = 0;
std::atomic<long> held{-1}, trying{-1};  // the round whose holder holds, and whose waiter tries

void* take_turns(void* arg) {
    const long me = static_cast<long>(reinterpret_cast<std::intptr_t>(arg));
    std::uint64_t mine = 0, contended = 0;
    for (long round = 0; round < rounds_of_turns; ++round) {
        if (round % 2 == me) {  // this round's holder
            lock_counting(&hot, contended);
            ++mine;
            ++shared_count;
            held.store(round, std::memory_order_release);
            wait_for([&] { return trying.load(std::memory_order_acquire) == round; });
            spin_for(std::chrono::microseconds(20));
            pthread_mutex_unlock(&hot);
        } else {  // this round's waiter
            wait_for([&] { return held.load(std::memory_order_acquire) == round; });
            trying.store(round, std::memory_order_release);
            lock_counting(&hot, contended);
            ++mine;
            ++shared_count;
            pthread_mutex_unlock(&hot);
        }
    }
    acquisitions += mine;
    contentions += contended;
    hot_contentions += contended;
    return nullptr;
}

// The ping-pong: `turn` says whose move it is; each side waits for its turn with the cond.
int turn = 0;
constexpr int rounds = 500;
std::atomic<std::uint64_t> pong_acquisitions{0}, cond_returns{0};

void* pong_side(void* arg) {
    const int me = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
    std::uint64_t mine = 0, contended = 0, returns = 0;
    for (int i = 0; i < rounds; ++i) {
        lock_counting(&pong_mutex, contended);
        ++mine;
        while (turn != me) {
            pthread_cond_wait(&pong_cond, &pong_mutex);
            ++mine;  // the wait returns holding the mutex again
            ++returns;
        }
        turn = 1 - me;
        pthread_cond_broadcast(&pong_cond);
        pthread_mutex_unlock(&pong_mutex);
    }
    pong_acquisitions += mine;
    contentions += contended;
    cond_returns += returns;
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    rounds_of_turns = argc > 1 ? std::atol(argv[1]) : 40'000;
    const auto start = clock_type::now();
    give_up_at = start + std::chrono::seconds(30);

    pthread_t threads[2];
    for (std::intptr_t side = 0; side < 2; ++side)
        pthread_create(&threads[side], nullptr, take_turns, reinterpret_cast<void*>(side));
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

    // Read by profile_test: the hot mutex's acquisitions and contentions, then the program's
    // contentions and acquisitions of every mutex (cond_returns of them returns from a cond
    // wait), over the seconds main ran.
    std::printf(
        "hot_acquisitions=%llu hot_contentions=%llu contentions=%llu seconds=%.6f all_acquisitions=%llu "
        "cond_returns=%llu\n",
        static_cast<unsigned long long>(acquisitions.load()), static_cast<unsigned long long>(hot_contentions.load()),
        static_cast<unsigned long long>(contentions.load()), elapsed,
        static_cast<unsigned long long>(acquisitions.load() + pong_acquisitions.load()),
        static_cast<unsigned long long>(cond_returns.load()));
    if (argc > 2 && std::string_view(argv[2]) == "quick_exit") {
        std::fflush(stdout);
        std::quick_exit(0);  // no atexit handlers, no static destructors: the profile's test
    }
    return 0;
}
