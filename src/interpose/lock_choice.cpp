#include "interpose/lock_choice.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "interpose/exports.hpp"
#include "interpose/helgrind_notes.hpp"
#include "interpose/profile.hpp"

namespace contend::interpose {

namespace detail {
constinit std::atomic<int> chosen_lock{0};

namespace {
struct named_choice {
    const char* name;
    const char* alias;  // "" for none
    lock_choice choice;
};
constexpr named_choice choices[] = {
#define CONTEND_INTERPOSE_CHOICE(name, alias, type, description) {#name, alias, lock_choice::name},
    CONTEND_INTERPOSE_LOCKS(CONTEND_INTERPOSE_CHOICE)
#undef CONTEND_INTERPOSE_CHOICE
};
// The choice shares chosen_lock with the flags above it.
static_assert(std::size(choices) < static_cast<std::size_t>(profile_flag) && profile_flag < valgrind_flag);

// "libcontend_interpose: unknown CONTEND_INTERPOSE_LOCK (known: NAME, NAME...); using glibc\n",
// built at compile time: it is written with write(2), with no allocation.
constexpr std::string_view unknown_head = "libcontend_interpose: unknown CONTEND_INTERPOSE_LOCK (known: ";
constexpr std::string_view unknown_tail = "); using glibc\n";
constexpr std::size_t unknown_message_size = [] {
    std::size_t n = unknown_head.size() + unknown_tail.size();
    for (const auto& c : choices) n += std::string_view(c.name).size() + 2;
    return n - 2;
}();
constexpr auto unknown_message = [] {
    std::array<char, unknown_message_size> m{};
    std::size_t at = 0;
    const auto append = [&](std::string_view s) {
        for (char ch : s) m[at++] = ch;
    };
    append(unknown_head);
    for (std::size_t i = 0; i < std::size(choices); ++i) {
        if (i > 0) append(", ");
        append(choices[i].name);
    }
    append(unknown_tail);
    return m;
}();

// The choice named, by its name or its alias; unresolved when none is.
lock_choice choice_named(const char* name) noexcept {
    for (const auto& n : choices)
        if (std::strcmp(name, n.name) == 0 || (*n.alias != '\0' && std::strcmp(name, n.alias) == 0)) return n.choice;
    return lock_choice::unresolved;
}
}  // namespace

lock_choice resolve_lock_choice() noexcept {
    // getenv takes no lock and allocates nothing; environ is set before any constructor.
    const char* name = std::getenv("CONTEND_INTERPOSE_LOCK");
    lock_choice c = lock_choice::contend_mutex;
    bool unknown = false;
    if (name != nullptr && *name != '\0') {
        c = choice_named(name);
        unknown = c == lock_choice::unresolved;
        if (unknown) c = lock_choice::glibc;
    }
    // The profile starts before the choice is published: no call takes the profiled path
    // before its table exists.
    int flags = profile::start_from_environment(lock_name(c)) ? profile_flag : 0;
    // Under glibc every call reaches glibc's functions, which helgrind wraps itself.
    if (c != lock_choice::glibc && helgrind::running()) flags |= valgrind_flag;
    int expected = 0;
    // The first thread to decide reports an unknown name; write(2), not stdio, since this may
    // run inside the program's first lock call.
    if (chosen_lock.compare_exchange_strong(expected, static_cast<int>(c) | flags) && unknown)
        (void)!::write(STDERR_FILENO, unknown_message.data(), unknown_message.size());
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
