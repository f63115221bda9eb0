// What the interposer's test programs (interpose_torture.cpp, rwlocks.cpp) share: their
// "ok <check>" and "FAIL <check>: ..." lines (a failure exits 1 at once, so a run's output is
// comparable line by line with another's), deadlines on a named clock, and a thread to run a
// check on.
#pragma once

#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace interpose_test {

[[noreturn]] inline void fail(const char* check, const char* why, int value = 0) {
    std::printf("FAIL %s: %s (%d)\n", check, why, value);
    std::fflush(stdout);
    std::_Exit(1);
}

inline void expect_eq(const char* check, const char* what, long got, long want) {
    if (got != want) {
        std::printf("FAIL %s: %s is %ld, expected %ld\n", check, what, got, want);
        std::fflush(stdout);
        std::_Exit(1);
    }
}

inline void ok(const char* check) {
    std::printf("ok %s\n", check);
    std::fflush(stdout);
}

inline timespec after_ms(clockid_t clock, long ms) {
    timespec t{};
    clock_gettime(clock, &t);
    t.tv_nsec += (ms % 1000) * 1'000'000;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1'000'000'000;
    t.tv_nsec %= 1'000'000'000;
    return t;
}

inline bool reached(clockid_t clock, const timespec& t) {
    timespec now{};
    clock_gettime(clock, &now);
    return now.tv_sec > t.tv_sec || (now.tv_sec == t.tv_sec && now.tv_nsec >= t.tv_nsec);
}

// Runs f on a thread and joins it.
template <class F>
void on_thread(F f) {
    pthread_t t;
    auto trampoline = [](void* p) -> void* {
        (*static_cast<F*>(p))();
        return nullptr;
    };
    if (pthread_create(&t, nullptr, trampoline, &f) != 0) fail("on_thread", "pthread_create");
    pthread_join(t, nullptr);
}

}  // namespace interpose_test
