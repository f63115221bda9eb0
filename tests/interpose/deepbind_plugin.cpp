// A plugin interpose_deepbind loads with dlopen(RTLD_DEEPBIND): its own scope (itself, then
// its dependencies, libc among them) comes before the global one, so its pthread calls bind
// to glibc's functions even when the program's bind to the preloaded interposer.
#include <pthread.h>

extern "C" __attribute__((visibility("default"))) int plugin_lock(pthread_mutex_t* m) { return pthread_mutex_lock(m); }
extern "C" __attribute__((visibility("default"))) int plugin_unlock(pthread_mutex_t* m) {
    return pthread_mutex_unlock(m);
}
