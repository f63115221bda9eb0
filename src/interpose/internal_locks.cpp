// The std::mutex objects inside this library's copy of contend (the parking lot's pool of
// thread slots, the thread-id pool) must not run on contend::mutex: the parking lot would
// take them while parking for one of them. The library is linked with
// -Wl,--wrap=pthread_mutex_{lock,trylock,unlock} (src/interpose/CMakeLists.txt), which sends
// the calls of its own objects here, straight to glibc; the program's calls still reach the
// exported pthread_mutex_* of this library.
//
// Going straight to glibc also goes past ThreadSanitizer's interceptors: under TSan each call
// tells it of the acquire or the release, or it would report as races the accesses these
// mutexes order.
#include <pthread.h>

#include "contend/internal/tsan.hpp"
#include "interpose/glibc_functions.hpp"

using contend::internal::tsan_acquired;
using contend::internal::tsan_releasing;
using contend::interpose::glibc;

extern "C" {
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_lock(pthread_mutex_t* m) {
    const int rc = glibc().mutex_lock(m);
    if (rc == 0) tsan_acquired(m);
    return rc;
}
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_trylock(pthread_mutex_t* m) {
    const int rc = glibc().mutex_trylock(m);
    if (rc == 0) tsan_acquired(m);
    return rc;
}
__attribute__((visibility("hidden"))) int __wrap_pthread_mutex_unlock(pthread_mutex_t* m) {
    tsan_releasing(m);
    return glibc().mutex_unlock(m);
}
}
