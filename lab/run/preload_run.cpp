// `contend run`'s process handling: fork, exec with LD_PRELOAD, pass signals on, wait.
#include "run/preload_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#ifndef CONTEND_INTERPOSE_BUILD_PATH
#define CONTEND_INTERPOSE_BUILD_PATH ""
#endif
#ifndef CONTEND_INTERPOSE_INSTALL_LIBDIR
#define CONTEND_INTERPOSE_INSTALL_LIBDIR "lib"
#endif

extern char** environ;

namespace contend::lab {
namespace {

constexpr const char* library_file = "libcontend_interpose.so";

// The signals whose disposition a program inherits across exec, as contend itself inherited
// them (read before main, so before the lab's own handlers and its SIGPIPE/SIGXFSZ ignores):
// an ignored one (nohup's SIGHUP) stays ignored for the program, any other is the default.
constexpr int inherited_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
const auto ignored_at_start = [] {
    std::array<bool, std::size(inherited_signals)> ignored{};
    for (std::size_t i = 0; i < ignored.size(); ++i) {
        struct sigaction sa {};
        ignored[i] = sigaction(inherited_signals[i], nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN;
    }
    return ignored;
}();

// The child being waited for, for the forwarding handler (one run at a time per process).
std::atomic<pid_t> running_child{0};

extern "C" void forward_signal(int sig) {
    const pid_t child = running_child.load();
    if (child > 0) kill(child, sig);
}

// Signal dispositions while the child runs, put back as they were by the destructor.
class signals_while_waiting {
public:
    signals_while_waiting() {
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        struct sigaction forward {};
        forward.sa_handler = forward_signal;
        sigemptyset(&forward.sa_mask);
        sigaction(SIGINT, &ignore, &old_[0]);
        sigaction(SIGQUIT, &ignore, &old_[1]);
        sigaction(SIGTERM, &forward, &old_[2]);
        sigaction(SIGHUP, &forward, &old_[3]);
    }
    ~signals_while_waiting() {
        sigaction(SIGINT, &old_[0], nullptr);
        sigaction(SIGQUIT, &old_[1], nullptr);
        sigaction(SIGTERM, &old_[2], nullptr);
        sigaction(SIGHUP, &old_[3], nullptr);
    }
    signals_while_waiting(const signals_while_waiting&) = delete;
    signals_while_waiting& operator=(const signals_while_waiting&) = delete;

private:
    struct sigaction old_[4]{};
};

// The child's environment: ours, with LD_PRELOAD and the library's settings replaced.
std::vector<std::string> child_environment(const preload_request& r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view v(*e);
        if (v.starts_with("LD_PRELOAD=") || v.starts_with("CONTEND_INTERPOSE_LOCK=") ||
            v.starts_with("CONTEND_INTERPOSE_PROFILE="))
            continue;
        env.emplace_back(v);
    }
    env.push_back("LD_PRELOAD=" + preload_value(r.library, std::getenv("LD_PRELOAD")));
    env.push_back("CONTEND_INTERPOSE_LOCK=" + r.lock);
    if (!r.profile_path.empty()) env.push_back("CONTEND_INTERPOSE_PROFILE=" + r.profile_path);
    return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> p;
    p.reserve(strings.size() + 1);
    for (auto& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
}

}  // namespace

const std::vector<std::string>& interpose_lock_names() {
    static const std::vector<std::string> names = {"contend_mutex", "glibc", "ttas", "ticket"};
    return names;
}

std::string find_interpose_library() {
    if (const char* given = std::getenv("CONTEND_INTERPOSE_LIBRARY"); given && *given) {
        if (!std::filesystem::path(given).is_absolute() || access(given, R_OK) != 0)
            throw std::runtime_error(std::string("CONTEND_INTERPOSE_LIBRARY=") + given +
                                     ": not an absolute path to a readable file");
        return given;
    }
    std::vector<std::filesystem::path> tried;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) tried.push_back(self.parent_path().parent_path() / CONTEND_INTERPOSE_INSTALL_LIBDIR / library_file);
    if (*CONTEND_INTERPOSE_BUILD_PATH) tried.emplace_back(CONTEND_INTERPOSE_BUILD_PATH);
    for (const auto& p : tried)
        if (access(p.c_str(), R_OK) == 0) return p.string();
    std::string where;
    for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
    throw std::runtime_error(std::string("the interposition library ") + library_file + " was not found (looked at " +
                             (where.empty() ? "nothing" : where) +
                             "; set CONTEND_INTERPOSE_LIBRARY to its absolute path)");
}

std::string preload_value(std::string_view library, const char* inherited) {
    if (!inherited || !*inherited) return std::string(library);
    return std::string(inherited) + ' ' + std::string(library);
}

program_status run_preloaded(const preload_request& r) {
    if (r.argv.empty() || r.argv.front().empty()) throw std::invalid_argument("no program to run (after --)");
    const auto& names = interpose_lock_names();
    if (std::find(names.begin(), names.end(), r.lock) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument("--lock " + r.lock + ": not a lock this library has (" + list + ")");
    }
    if (!std::filesystem::path(r.library).is_absolute())
        throw std::invalid_argument("the interposition library path " + r.library + " is not absolute");

    std::vector<std::string> args = r.argv;
    std::vector<std::string> env = child_environment(r);
    std::vector<char*> argv = pointers(args);
    std::vector<char*> envp = pointers(env);

    // The exec's errno comes back through a close-on-exec pipe: EOF means it ran.
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    const signals_while_waiting signals;
    const pid_t child = fork();
    if (child < 0) {
        const int e = errno;
        close(report[0]);
        close(report[1]);
        throw std::system_error(e, std::generic_category(), "fork");
    }
    if (child == 0) {
        // The program gets the dispositions contend was started with, not the ones set for
        // waiting nor the lab's ignores (a program that writes to a closed pipe dies of SIGPIPE).
        for (std::size_t i = 0; i < ignored_at_start.size(); ++i)
            signal(inherited_signals[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
        execvpe(argv[0], argv.data(), envp.data());
        const int e = errno;
        (void)!write(report[1], &e, sizeof e);
        _exit(127);
    }
    running_child.store(child);
    close(report[1]);
    program_status status;
    int e = 0;
    ssize_t got;
    do {
        got = read(report[0], &e, sizeof e);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == static_cast<ssize_t>(sizeof e)) status.start_error = e;
    int w = 0;
    struct rusage usage {};
    while (wait4(child, &w, 0, &usage) < 0) {
        if (errno != EINTR) {
            running_child.store(0);
            throw std::system_error(errno, std::generic_category(), "wait4");
        }
    }
    running_child.store(0);
    if (status.start_error == 0) status.pid = child;
    const auto ns = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3;
    };
    status.cpu_ns = ns(usage.ru_utime) + ns(usage.ru_stime);
    if (WIFSIGNALED(w)) {
        status.signalled = true;
        status.value = WTERMSIG(w);
    } else {
        status.value = WEXITSTATUS(w);
    }
    return status;
}

int exit_code_of(const program_status& s) noexcept {
    if (s.start_error != 0) return s.start_error == ENOENT ? 127 : 126;
    return s.signalled ? 128 + s.value : s.value;
}

}  // namespace contend::lab
