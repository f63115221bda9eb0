// The std::mutex objects inside this library's copy of contend (the parking lot's pool of
// thread slots, the thread-id pool) must not run on contend::mutex: the parking lot would
// take them while parking for one of them. The library is linked with
// -Wl,--wrap=pthread_mutex_{lock,trylock,unlock} (src/interpose/CMakeLists.txt), which sends
// the calls of its own objects here, straight to glibc; the program's calls still reach the
// exported pthread_mutex_* of this library.
#include <pthread.h>

#include "interpose/glibc_functions.hpp"

using contend::interpose::glibc;

extern "C" {
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_lock(pthread_mutex_t* m) {
    return glibc().mutex_lock(m);
}
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_trylock(pthread_mutex_t* m) {
    return glibc().mutex_trylock(m);
}
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_unlock(pthread_mutex_t* m) {
    return glibc().mutex_unlock(m);
}
}
