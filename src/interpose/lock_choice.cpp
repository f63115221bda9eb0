#include "interpose/lock_choice.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "interpose/exports.hpp"

namespace contend::interpose {

namespace detail {
constinit std::atomic<int> chosen_lock{0};

lock_choice resolve_lock_choice() noexcept {
    // getenv takes no lock and allocates nothing; environ is set before any constructor.
    const char* name = std::getenv("CONTEND_INTERPOSE_LOCK");
    lock_choice c = lock_choice::contend_mutex;
    if (name != nullptr && std::strcmp(name, "glibc") == 0) {
        c = lock_choice::glibc;
    } else if (name != nullptr && *name != '\0' && std::strcmp(name, "contend_mutex") != 0) {
        c = lock_choice::glibc;
        // write(2), not stdio: this may run inside the program's first lock call.
        static constexpr char msg[] =
            "libcontend_interpose: unknown CONTEND_INTERPOSE_LOCK (known: contend_mutex, glibc); using glibc\n";
        int expected = 0;
        if (chosen_lock.compare_exchange_strong(expected, static_cast<int>(c)))
            (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        return static_cast<lock_choice>(chosen_lock.load());
    }
    int expected = 0;
    chosen_lock.compare_exchange_strong(expected, static_cast<int>(c));
    return static_cast<lock_choice>(chosen_lock.load());
}

// Read at load time, so the choice (and its message) does not wait for the first lock.
[[gnu::constructor]] void read_lock_choice_at_load() { (void)current_lock(); }
}  // namespace detail

const char* lock_name(lock_choice c) noexcept {
    switch (c) {
        case lock_choice::glibc:
            return "glibc";
        case lock_choice::contend_mutex:
            return "contend_mutex";
        default:
            return "unresolved";
    }
}

}  // namespace contend::interpose

// For programs and tests: which lock is active ("glibc" or "contend_mutex"). A program
// looks it up with dlsym(RTLD_DEFAULT, "contend_interpose_active"); absent means not preloaded.
extern "C" CONTEND_INTERPOSE_EXPORT const char* contend_interpose_active() {
    return contend::interpose::lock_name(contend::interpose::current_lock());
}
