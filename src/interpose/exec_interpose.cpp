// exec and _exit, for the profile and for contend run (docs/interpose.md, "Profiling").
//
// An exec replaces the process's image, and with it the counts of the profile, which the
// image writes at exit(): every exec function writes them first (profile.hpp), and the exec'd
// image, preloaded again, profiles itself. _exit and _Exit leave without the library's
// destructor: in a forked child they write the profile first, as exit() would (profile.hpp). glibc's exec functions
// call its internal execve, not ours, so each one a program can call is defined here; each passes straight to glibc's
// own, resolved at load, when there is no profile.
//
// At load, with CONTEND_INTERPOSE_RUN_DIR set (contend run sets it), the library leaves the
// empty file DIR/<pid>.loaded.<lock>: contend run checks after the run that the program
// loaded the library and took the lock it was asked for (a static or setuid program, or a
// CONTEND_INTERPOSE_LIBRARY that is another library, never does).
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <alloca.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "interpose/exports.hpp"
#include "interpose/format/profile_format.hpp"
#include "interpose/lock_choice.hpp"
#include "interpose/profile.hpp"

namespace {

using namespace contend::interpose;

struct exec_functions {
    int (*execve)(const char*, char* const[], char* const[]);
    int (*execv)(const char*, char* const[]);
    int (*execvp)(const char*, char* const[]);
    int (*execvpe)(const char*, char* const[], char* const[]);
    int (*fexecve)(int, char* const[], char* const[]);
    int (*execveat)(int, const char*, char* const[], char* const[], int);
    void (*exit_now)(int);
    void (*exit_now_c99)(int);
};

template <class F>
void resolve(F& f, const char* name) noexcept {
    if (f == nullptr) f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// Resolved at load (a lookup in a vfork child could wait for the loader's lock, held by a
// thread of the parent), and on first use before that.
exec_functions& real() noexcept {
    static exec_functions f{};
    resolve(f.execve, "execve");
    resolve(f.execv, "execv");
    resolve(f.execvp, "execvp");
    resolve(f.execvpe, "execvpe");
    resolve(f.fexecve, "fexecve");
    resolve(f.execveat, "execveat");
    resolve(f.exit_now, "_exit");
    resolve(f.exit_now_c99, "_Exit");
    return f;
}

int missing() noexcept {
    errno = ENOSYS;
    return -1;
}

// The profile written, the exec made; if it fails, the profile's file is taken back.
template <class Exec>
int exec_with_profile(Exec&& exec) noexcept {
    const bool written = profiling() && profile::snapshot_before_exec();
    const int rc = exec();
    if (written) {
        const int e = errno;
        profile::exec_failed();
        errno = e;
    }
    return rc;
}

// The arguments of execl, execle and execlp: argv (on the caller's stack, as glibc does), and
// what follows the terminating null (execle's envp).
#define CONTEND_COLLECT_ARGS(arg, argv, after_null)                         \
    std::size_t count = 1;                                                  \
    {                                                                       \
        va_list counting;                                                   \
        va_start(counting, arg);                                            \
        while (va_arg(counting, const char*) != nullptr) ++count;           \
        va_end(counting);                                                   \
    }                                                                       \
    char** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*))); \
    argv[0] = const_cast<char*>(arg);                                       \
    va_list args;                                                           \
    va_start(args, arg);                                                    \
    for (std::size_t i = 1; i <= count; ++i) argv[i] = va_arg(args, char*); \
    after_null;                                                             \
    va_end(args)

[[gnu::constructor]] void leave_loaded_marker() {
    (void)real();
    const char* dir = std::getenv("CONTEND_INTERPOSE_RUN_DIR");
    if (dir == nullptr || *dir != '/') return;
    char path[4096];
    const int n = std::snprintf(path, sizeof path, "%s/%d%s%s", dir, static_cast<int>(::getpid()),
                                contend::interpose::profile_format::loaded_infix, lock_name(current_lock()));
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path) return;
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
}

}  // namespace

extern "C" {

CONTEND_INTERPOSE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
    auto* f = real().execve;
    return f ? exec_with_profile([&] { return f(path, argv, envp); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int execv(const char* path, char* const argv[]) noexcept {
    auto* f = real().execv;
    return f ? exec_with_profile([&] { return f(path, argv); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
    auto* f = real().execvp;
    return f ? exec_with_profile([&] { return f(file, argv); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
    auto* f = real().execvpe;
    return f ? exec_with_profile([&] { return f(file, argv, envp); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
    auto* f = real().fexecve;
    return f ? exec_with_profile([&] { return f(fd, argv, envp); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                                      int flags) noexcept {
    auto* f = real().execveat;
    return f ? exec_with_profile([&] { return f(dirfd, path, argv, envp, flags); }) : missing();
}

CONTEND_INTERPOSE_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
    CONTEND_COLLECT_ARGS(arg, argv, (void)0);
    return execve(path, argv, environ);
}

CONTEND_INTERPOSE_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
    char* const* envp = nullptr;
    CONTEND_COLLECT_ARGS(arg, argv, envp = va_arg(args, char* const*));
    return execve(path, argv, envp);
}

CONTEND_INTERPOSE_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
    CONTEND_COLLECT_ARGS(arg, argv, (void)0);
    return execvp(file, argv);
}

CONTEND_INTERPOSE_EXPORT void _exit(int status) {
    if (profiling()) profile::write_before_exit();
    if (auto* f = real().exit_now) f(status);
    __builtin_trap();  // glibc's _exit was not found: never reached in practice
}

CONTEND_INTERPOSE_EXPORT void _Exit(int status) noexcept {
    if (profiling()) profile::write_before_exit();
    if (auto* f = real().exit_now_c99) f(status);
    __builtin_trap();
}

}  // extern "C"
