#include "interpose/glibc_functions.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cerrno>

namespace contend::interpose {
namespace {

// pthread_cond_* exist twice in glibc: the default GLIBC_2.3.2 ones and the pre-NPTL ABI
// kept for old binaries, which a plain dlsym could return on some glibc builds. Ask for the
// version. pthread_cond_clockwait only ever had the new one.
#if defined(__x86_64__)
constexpr const char* cond_version = "GLIBC_2.3.2";
#else
constexpr const char* cond_version = nullptr;  // aarch64 has no old cond ABI
#endif

void* next_symbol(const char* name, const char* version) noexcept {
    if (version != nullptr) {
        if (void* p = dlvsym(RTLD_NEXT, name, version)) return p;
    }
    return dlsym(RTLD_NEXT, name);
}

int fail_again(...) { return EAGAIN; }

#if defined(__x86_64__)
// glibc's compatibility aliases: bound by symbol version, so they cannot resolve to our own
// definitions, and usable without dlsym.
extern "C" int compat_mutex_init(pthread_mutex_t*, const pthread_mutexattr_t*);
extern "C" int compat_mutex_destroy(pthread_mutex_t*);
extern "C" int compat_mutex_lock(pthread_mutex_t*);
extern "C" int compat_mutex_trylock(pthread_mutex_t*);
extern "C" int compat_mutex_unlock(pthread_mutex_t*);
__asm__(".symver compat_mutex_init,__pthread_mutex_init@GLIBC_2.2.5");
__asm__(".symver compat_mutex_destroy,__pthread_mutex_destroy@GLIBC_2.2.5");
__asm__(".symver compat_mutex_lock,__pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver compat_mutex_trylock,__pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver compat_mutex_unlock,__pthread_mutex_unlock@GLIBC_2.2.5");
#endif

template <class F>
F stand_in() noexcept {
    return reinterpret_cast<F>(reinterpret_cast<void (*)()>(&fail_again));
}

glibc_functions recursion_stand_ins() noexcept {
    glibc_functions f{};
    f.mutex_timedlock = stand_in<decltype(f.mutex_timedlock)>();
    f.mutex_clocklock = stand_in<decltype(f.mutex_clocklock)>();
    f.cond_init = stand_in<decltype(f.cond_init)>();
    f.cond_destroy = stand_in<decltype(f.cond_destroy)>();
    f.cond_wait = stand_in<decltype(f.cond_wait)>();
    f.cond_timedwait = stand_in<decltype(f.cond_timedwait)>();
    f.cond_clockwait = stand_in<decltype(f.cond_clockwait)>();
    f.cond_signal = stand_in<decltype(f.cond_signal)>();
    f.cond_broadcast = stand_in<decltype(f.cond_broadcast)>();
    f.rwlock_init = stand_in<decltype(f.rwlock_init)>();
    f.rwlock_destroy = stand_in<decltype(f.rwlock_destroy)>();
    f.rwlock_rdlock = stand_in<decltype(f.rwlock_rdlock)>();
    f.rwlock_tryrdlock = stand_in<decltype(f.rwlock_tryrdlock)>();
    f.rwlock_timedrdlock = stand_in<decltype(f.rwlock_timedrdlock)>();
    f.rwlock_clockrdlock = stand_in<decltype(f.rwlock_clockrdlock)>();
    f.rwlock_wrlock = stand_in<decltype(f.rwlock_wrlock)>();
    f.rwlock_trywrlock = stand_in<decltype(f.rwlock_trywrlock)>();
    f.rwlock_timedwrlock = stand_in<decltype(f.rwlock_timedwrlock)>();
    f.rwlock_clockwrlock = stand_in<decltype(f.rwlock_clockwrlock)>();
    f.rwlock_unlock = stand_in<decltype(f.rwlock_unlock)>();
#if defined(__x86_64__)
    f.mutex_init = &compat_mutex_init;
    f.mutex_destroy = &compat_mutex_destroy;
    f.mutex_lock = &compat_mutex_lock;
    f.mutex_trylock = &compat_mutex_trylock;
    f.mutex_unlock = &compat_mutex_unlock;
#else
    f.mutex_init = stand_in<decltype(f.mutex_init)>();
    f.mutex_destroy = stand_in<decltype(f.mutex_destroy)>();
    f.mutex_lock = stand_in<decltype(f.mutex_lock)>();
    f.mutex_trylock = stand_in<decltype(f.mutex_trylock)>();
    f.mutex_unlock = stand_in<decltype(f.mutex_unlock)>();
#endif
    return f;
}

template <class F>
void resolve(F& slot, const char* name, const char* version = nullptr) noexcept {
    slot = reinterpret_cast<F>(next_symbol(name, version));
}

// Built by whichever thread gets there first; others build their own copy meanwhile rather
// than wait (a thread waiting here could hold the loader's lock that dlsym needs), and the
// first complete table is published.
std::atomic<const glibc_functions*> published{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local bool resolving = false;

const glibc_functions& resolve_all() noexcept {
    static const glibc_functions stand_ins = recursion_stand_ins();
    if (resolving) return stand_ins;
    resolving = true;
    static glibc_functions tables[2];  // [0] by the publishing thread; rarely a second
    static std::atomic<int> next_table{0};
    const int mine = next_table.fetch_add(1) & 1;
    glibc_functions& f = tables[mine];
    resolve(f.mutex_init, "pthread_mutex_init");
    resolve(f.mutex_destroy, "pthread_mutex_destroy");
    resolve(f.mutex_lock, "pthread_mutex_lock");
    resolve(f.mutex_trylock, "pthread_mutex_trylock");
    resolve(f.mutex_timedlock, "pthread_mutex_timedlock");
    resolve(f.mutex_clocklock, "pthread_mutex_clocklock");
    resolve(f.mutex_unlock, "pthread_mutex_unlock");
    resolve(f.cond_init, "pthread_cond_init", cond_version);
    resolve(f.cond_destroy, "pthread_cond_destroy", cond_version);
    resolve(f.cond_wait, "pthread_cond_wait", cond_version);
    resolve(f.cond_timedwait, "pthread_cond_timedwait", cond_version);
    resolve(f.cond_clockwait, "pthread_cond_clockwait");
    resolve(f.cond_signal, "pthread_cond_signal", cond_version);
    resolve(f.cond_broadcast, "pthread_cond_broadcast", cond_version);
    resolve(f.rwlock_init, "pthread_rwlock_init");
    resolve(f.rwlock_destroy, "pthread_rwlock_destroy");
    resolve(f.rwlock_rdlock, "pthread_rwlock_rdlock");
    resolve(f.rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
    resolve(f.rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
    resolve(f.rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
    resolve(f.rwlock_wrlock, "pthread_rwlock_wrlock");
    resolve(f.rwlock_trywrlock, "pthread_rwlock_trywrlock");
    resolve(f.rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
    resolve(f.rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
    resolve(f.rwlock_unlock, "pthread_rwlock_unlock");
    resolving = false;
    const glibc_functions* expected = nullptr;
    published.compare_exchange_strong(expected, &f, std::memory_order_acq_rel);
    return *published.load(std::memory_order_acquire);
}

[[gnu::constructor]] void resolve_at_load() { (void)glibc(); }

}  // namespace

const glibc_functions& glibc() noexcept {
    if (const glibc_functions* f = published.load(std::memory_order_acquire)) [[likely]]
        return *f;
    return resolve_all();
}

}  // namespace contend::interpose
