// A library interpose_torture loads with dlopen: its mutex calls must bind to the preloaded
// interposer like the program's own.
#include <pthread.h>

namespace {
pthread_mutex_t module_mutex = PTHREAD_MUTEX_INITIALIZER;
long module_count = 0;
}  // namespace

// Increments a counter under the module's mutex `rounds` times; returns the mutex's
// __owner seen while holding it (glibc records the owner, contend's locks do not).
extern "C" __attribute__((visibility("default"))) int dlopened_increment(long rounds) {
    int owner = 0;
    for (long i = 0; i < rounds; ++i) {
        pthread_mutex_lock(&module_mutex);
        ++module_count;
        owner = module_mutex.__data.__owner;
        pthread_mutex_unlock(&module_mutex);
    }
    return owner;
}

extern "C" __attribute__((visibility("default"))) long dlopened_count() {
    pthread_mutex_lock(&module_mutex);
    const long n = module_count;
    pthread_mutex_unlock(&module_mutex);
    return n;
}
