#include "os/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "os/write_all.hpp"

namespace contend::lab {
namespace {

using child_clock = std::chrono::steady_clock;

// A descriptor closed by the destructor unless released.
struct child_fd {
    int fd = -1;
    child_fd() = default;
    explicit child_fd(int f) : fd(f) {}
    child_fd(child_fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    child_fd& operator=(child_fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd = std::exchange(o.fd, -1);
        }
        return *this;
    }
    ~child_fd() { reset(); }
    void reset() noexcept {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    int release() noexcept { return std::exchange(fd, -1); }
};

struct child_pipe {
    child_fd read, write;
};

// The child's standard input when it is fed: a connected pair of sockets rather than a pipe,
// so that feeding a child that ended without reading fails with EPIPE (send_all's
// MSG_NOSIGNAL) instead of raising SIGPIPE here. The child reads it as it would a pipe.
child_pipe open_input_sockets() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        throw std::system_error(errno, std::generic_category(), "socketpair");
    ::shutdown(fds[0], SHUT_WR);  // one way: the child only reads
    child_pipe p;
    p.read.fd = fds[0];
    p.write.fd = fds[1];
    return p;
}

child_pipe open_child_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    child_pipe p;
    p.read.fd = fds[0];
    p.write.fd = fds[1];
    return p;
}

std::vector<char*> argv_pointers(std::vector<std::string>& strings) {
    std::vector<char*> p;
    p.reserve(strings.size() + 1);
    for (auto& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
}

double rusage_cpu_ns(const rusage& u) {
    const auto ns = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3;
    };
    return ns(u.ru_utime) + ns(u.ru_stime);
}

// Everything the child needs, made before the fork: the child only reads it.
struct child_setup {
    std::vector<std::string> args, env;
    std::vector<char*> argv, envp;
    bool with_env = false;
    child_fd null_fd;
    child_pipe in, out, report;
    bool exec = true;
};

// The child's side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_side(const child_spec& spec, child_setup& p, pid_t parent, const sigset_t* mask,
                            void (*body)(void*), void* arg) {
    if (spec.die_with_parent) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
    }
    if (spec.new_process_group) ::setpgid(0, 0);
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    for (const int sig : spec.ignored_signals) ::sigaction(sig, &sa, nullptr);
    sa.sa_handler = SIG_DFL;
    for (const int sig : spec.default_signals) ::sigaction(sig, &sa, nullptr);
    if (mask != nullptr) ::sigprocmask(SIG_SETMASK, mask, nullptr);  // the parent blocked all across the fork
    const auto to = [&](child_stream s, int pipe_end, int target) {
        if (s == child_stream::null) ::dup2(p.null_fd.fd, target);
        else if (s == child_stream::pipe) ::dup2(pipe_end, target);
    };
    to(spec.input, p.in.read.fd, STDIN_FILENO);
    to(spec.output, p.out.write.fd, STDOUT_FILENO);
    to(spec.errors, p.out.write.fd, STDERR_FILENO);
    if (body != nullptr) {
        // No exec to close the pipes' other ends: closed here, so that the parent sees the
        // end of the output when the child is done, and the child the end of its input.
        for (const int fd : {p.in.read.fd, p.in.write.fd, p.out.read.fd, p.out.write.fd, p.null_fd.fd})
            if (fd > STDERR_FILENO) ::close(fd);
        body(arg);
        ::_exit(127);
    }
    if (p.with_env) ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
    else ::execvp(p.argv[0], p.argv.data());
    const int e = errno;
    (void)write_all(p.report.write.fd, {reinterpret_cast<const char*>(&e), sizeof e});
    ::_exit(127);
}

}  // namespace

child_process child_process::start(const child_spec& spec) { return start_function(spec, nullptr, nullptr); }

child_process child_process::start_function(const child_spec& spec, void (*body)(void*), void* arg) {
    if (body == nullptr && (spec.argv.empty() || spec.argv.front().empty()))
        throw std::invalid_argument("no program to start");
    if (spec.errors == child_stream::pipe && spec.output != child_stream::pipe)
        throw std::invalid_argument("standard error on a pipe needs standard output on it");
    child_setup p;
    if (body == nullptr) {
        p.args = spec.argv;
        p.argv = argv_pointers(p.args);
        if (spec.environment) {
            p.env = *spec.environment;
            p.envp = argv_pointers(p.env);
            p.with_env = true;
        }
        p.report = open_child_pipe();
    }
    if (spec.input == child_stream::null || spec.output == child_stream::null || spec.errors == child_stream::null) {
        p.null_fd.fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (p.null_fd.fd < 0) throw std::system_error(errno, std::generic_category(), "open /dev/null");
    }
    if (spec.input == child_stream::pipe) p.in = open_input_sockets();
    if (spec.output == child_stream::pipe) p.out = open_child_pipe();

    const pid_t parent = ::getpid();
    // A caller that passes signals on to the child (pid_out) must not get one between the
    // fork and the store of the child's id: its handler would find no child and drop it,
    // while the child, started, went on (contend run's SIGTERM, lost under a loaded CI run).
    // So every signal waits, blocked, until the id is stored; the child restores the mask
    // once its dispositions are reset.
    sigset_t all, before;
    sigfillset(&all);
    const bool blocked = spec.pid_out != nullptr && ::pthread_sigmask(SIG_BLOCK, &all, &before) == 0;
    const pid_t pid = ::fork();
    const int fork_error = errno;
    if (pid == 0) exec_side(spec, p, parent, blocked ? &before : nullptr, body, arg);
    if (pid > 0 && spec.pid_out != nullptr) spec.pid_out->store(pid);
    if (blocked) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) throw std::system_error(fork_error, std::generic_category(), "fork");
    // Also from this side, so that a signal to the group cannot come before the child's own
    // setpgid (fails harmlessly once the child has exec'd: it did it itself by then).
    if (spec.new_process_group) ::setpgid(pid, pid);

    child_process c;
    c.pid_ = pid;
    c.own_group_ = spec.new_process_group;
    p.in.read.reset();
    p.out.write.reset();
    p.report.write.reset();
    c.output_ = p.out.read.release();
    if (body == nullptr) {
        // The exec's errno, or the end of the pipe (closed on exec): whether it ran.
        int e = 0;
        ssize_t got;
        do {
            got = ::read(p.report.read.fd, &e, sizeof e);
        } while (got < 0 && errno == EINTR);
        if (got == static_cast<ssize_t>(sizeof e)) {
            c.kill_and_wait();  // it is exiting with 127
            c.start_error_ = e;
            c.close_output();
            return c;
        }
    }
    if (spec.input == child_stream::pipe) {
        (void)send_all(p.in.write.fd, spec.input_text);  // a child that ended without reading: EPIPE
        p.in.write.reset();
    }
    return c;
}

child_process::child_process(child_process&& o) noexcept
    : pid_(std::exchange(o.pid_, 0)),
      start_error_(o.start_error_),
      output_(std::exchange(o.output_, -1)),
      own_group_(o.own_group_) {}

child_process& child_process::operator=(child_process&& o) noexcept {
    if (this != &o) {
        if (pid_ > 0) kill_and_wait();
        close_output();
        pid_ = std::exchange(o.pid_, 0);
        start_error_ = o.start_error_;
        output_ = std::exchange(o.output_, -1);
        own_group_ = o.own_group_;
    }
    return *this;
}

child_process::~child_process() {
    close_output();
    if (pid_ > 0) kill_and_wait();
}

void child_process::close_output() noexcept {
    if (output_ >= 0) ::close(output_);
    output_ = -1;
}

child_process::read_result child_process::read_output(std::string& into, int wait_ms) {
    if (output_ < 0) return read_result::end;
    pollfd p{output_, POLLIN, 0};
    const int ready = ::poll(&p, 1, std::max(wait_ms, 0));
    if (ready < 0 && errno == EINTR) return read_result::idle;
    if (ready == 0) return read_result::idle;
    if (ready > 0) {
        char buf[65536];
        const ssize_t n = ::read(output_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) return read_result::idle;
        if (n > 0) {
            into.append(buf, static_cast<std::size_t>(n));
            return read_result::data;
        }
    }
    close_output();  // the end, or an error that no retry mends
    return read_result::end;
}

bool child_process::signal(int sig) noexcept {
    if (pid_ <= 0) return false;
    return ::kill(own_group_ ? -pid_ : pid_, sig) == 0;
}

child_exit child_process::reaped(int status, const rusage& usage) noexcept {
    pid_ = 0;
    child_exit e;
    e.cpu_ns = rusage_cpu_ns(usage);
    if (WIFSIGNALED(status)) {
        e.end = child_end::signaled;
        e.value = WTERMSIG(status);
    } else {
        e.end = child_end::exited;
        e.value = WEXITSTATUS(status);
    }
    return e;
}

std::optional<child_exit> child_process::wait_for(double limit_s) {
    if (pid_ <= 0) throw std::logic_error("child_process::wait_for: no child to wait for");
    const auto deadline =
        child_clock::now() + std::chrono::duration_cast<child_clock::duration>(std::chrono::duration<double>(limit_s));
    auto nap = std::chrono::microseconds(100);
    for (;;) {
        int status = 0;
        rusage usage{};
        const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
        if (r == pid_) return reaped(status, usage);
        if (r < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
        const auto now = child_clock::now();
        if (now >= deadline) return std::nullopt;
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
        ::usleep(static_cast<useconds_t>(std::min(nap, left).count()));
        nap = std::min(nap * 2, std::chrono::microseconds(5000));
    }
}

child_exit child_process::wait() {
    if (pid_ <= 0) throw std::logic_error("child_process::wait: no child to wait for");
    int status = 0;
    rusage usage{};
    while (::wait4(pid_, &status, 0, &usage) < 0)
        if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
    return reaped(status, usage);
}

child_exit child_process::kill_and_wait() noexcept {
    if (pid_ <= 0) return {};
    // Before the wait: the group's id stays the child's until it is reaped.
    signal(SIGKILL);
    int status = 0;
    rusage usage{};
    while (::wait4(pid_, &status, 0, &usage) < 0)
        if (errno != EINTR) {
            pid_ = 0;
            return {};
        }
    return reaped(status, usage);
}

child_result run_child(const child_spec& spec) {
    child_result result;
    child_process c = child_process::start(spec);
    if (c.start_error() != 0) {
        result.end = child_end::not_started;
        result.value = c.start_error();
        return result;
    }
    const bool bounded = spec.timeout_s > 0;
    const auto deadline = child_clock::now() + std::chrono::duration_cast<child_clock::duration>(
                                                   std::chrono::duration<double>(bounded ? spec.timeout_s : 0));
    const auto left_ms = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - child_clock::now()).count();
    };
    std::optional<child_end> stopped;  // why it was killed, when it was
    for (;;) {
        if (bounded && left_ms() <= 0) {
            stopped = child_end::timed_out;
            break;
        }
        const long long wait_ms = bounded ? std::min<long long>(left_ms(), 1000) : 1000;
        if (c.read_output(result.output, static_cast<int>(std::max<long long>(wait_ms, 0))) ==
            child_process::read_result::end)
            break;
        if (result.output.size() > spec.output_limit) {
            result.output.resize(spec.output_limit);
            result.truncated = true;
            stopped = child_end::too_much_output;
            break;
        }
    }
    std::optional<child_exit> ended;
    if (!stopped) {
        ended = bounded ? c.wait_for(std::max<long long>(left_ms(), 0) / 1e3) : c.wait();
        if (!ended) stopped = child_end::timed_out;
    }
    if (stopped) {
        ended = c.kill_and_wait();
        ended->end = *stopped;
        ended->value = 0;
    }
    static_cast<child_exit&>(result) = *ended;
    return result;
}

std::string program_file(const std::string& program, const char* search_path) {
    if (program.find('/') != std::string::npos) return program;
    const std::string dirs = search_path ? search_path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
        const std::string candidate = dir + "/" + program;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        start = colon + 1;
    }
    return "";
}

}  // namespace contend::lab
