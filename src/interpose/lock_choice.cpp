#include "interpose/lock_choice.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "interpose/exports.hpp"
#include "interpose/helgrind_notes.hpp"
#include "interpose/profile.hpp"

namespace contend::interpose {

namespace detail {
constinit std::atomic<int> chosen_lock{0};

namespace {
struct named_choice {
    const char* name;
    lock_choice choice;
};
constexpr named_choice choices[] = {
    {"contend_mutex", lock_choice::contend_mutex},
    {"glibc", lock_choice::glibc},
    {"ttas", lock_choice::ttas},
    {"ticket", lock_choice::ticket},
};
}  // namespace

lock_choice resolve_lock_choice() noexcept {
    // getenv takes no lock and allocates nothing; environ is set before any constructor.
    const char* name = std::getenv("CONTEND_INTERPOSE_LOCK");
    lock_choice c = lock_choice::contend_mutex;
    bool unknown = false;
    if (name != nullptr && *name != '\0') {
        unknown = true;
        for (const auto& n : choices) {
            if (std::strcmp(name, n.name) == 0) {
                c = n.choice;
                unknown = false;
            }
        }
        if (unknown) c = lock_choice::glibc;
    }
    // The profile starts before the choice is published: no call takes the profiled path
    // before its table exists.
    int flags = profile::start_from_environment() ? profile_flag : 0;
    // Under glibc every call reaches glibc's functions, which helgrind wraps itself.
    if (c != lock_choice::glibc && helgrind::running()) flags |= valgrind_flag;
    int expected = 0;
    // The first thread to decide reports an unknown name; write(2), not stdio, since this may
    // run inside the program's first lock call.
    if (chosen_lock.compare_exchange_strong(expected, static_cast<int>(c) | flags) && unknown) {
        static constexpr char msg[] =
            "libcontend_interpose: unknown CONTEND_INTERPOSE_LOCK (known: contend_mutex, glibc, ttas, ticket); "
            "using glibc\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    }
    return static_cast<lock_choice>(chosen_lock.load() & ~noted_flags);
}

// Read at load time, so the choice (and its message) does not wait for the first lock.
[[gnu::constructor]] void read_lock_choice_at_load() { (void)current_lock(); }
}  // namespace detail

const char* lock_name(lock_choice c) noexcept {
    for (const auto& n : detail::choices)
        if (n.choice == c) return n.name;
    return "unresolved";
}

}  // namespace contend::interpose

// For programs and tests: which lock is active (a CONTEND_INTERPOSE_LOCK name). A program
// looks it up with dlsym(RTLD_DEFAULT, "contend_interpose_active"); absent means not preloaded.
extern "C" CONTEND_INTERPOSE_EXPORT const char* contend_interpose_active() {
    return contend::interpose::lock_name(contend::interpose::current_lock());
}
