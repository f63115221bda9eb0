// A program that locks with C11's mtx_lock, which glibc runs on its own mutex through an
// internal call: contend run must say that it is not interposed (tests/lab/run_losses_test.cpp).
#include <threads.h>

int main() {
    mtx_t m;
    if (mtx_init(&m, mtx_plain) != thrd_success || mtx_lock(&m) != thrd_success) return 1;
    mtx_unlock(&m);
    mtx_destroy(&m);
    return 0;
}
