// `contend run`'s process handling: start the program with LD_PRELOAD, pass signals on, wait.
#include "run/preload_run.hpp"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "interpose/interpose_locks.hpp"
#include "os/child_process.hpp"

namespace contend::lab {
namespace {

// The signals passed on to the program while it runs: every one a process can catch, but
// SIGCHLD (ours, about the program) and the ones a fault raises (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGSYS: a fault of contend's own must not be sent to the program and
// ignored here). glibc keeps the first realtime signals for itself: from SIGRTMIN on.
bool is_forwarded(int sig) {
    switch (sig) {
        case SIGKILL:
        case SIGSTOP:
        case SIGCHLD:
        case SIGSEGV:
        case SIGBUS:
        case SIGFPE:
        case SIGILL:
        case SIGTRAP:
        case SIGSYS:
            return false;
        default:
            return sig < 32 || (sig >= SIGRTMIN && sig <= SIGRTMAX);
    }
}

// Which signals contend was started with ignored, read before main (so before the lab's own
// handlers and its SIGPIPE/SIGXFSZ ignores): the program inherits those ignored (nohup's
// SIGHUP, a background job's SIGINT), and every other one at its default.
const auto ignored_at_start = [] {
    std::array<bool, NSIG> ignored{};
    for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction sa {};
        ignored[static_cast<std::size_t>(sig)] = sigaction(sig, nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN;
    }
    return ignored;
}();

// The child being waited for, for the forwarding handler (one run at a time per process).
std::atomic<pid_t> running_child{0};

// Sent by a process (kill, sigqueue, a timer of contend's): passed on. Sent by the kernel
// (SI_KERNEL: the terminal's ^C, ^\, ^Z, its hangup and resize), it reached the program too,
// as a member of the foreground group: sending it again would make one ^C two (and many
// programs stop at once on a second ^C). A stop signal, from either, stops contend too (after
// the program, when it is passed on), as the shell that waits for its job to stop expects;
// SIGCONT then reaches contend and is passed on.
extern "C" void forward_signal(int sig, siginfo_t* info, void*) {
    const int saved = errno;
    const pid_t child = running_child.load();
    if (child > 0 && info->si_code != SI_KERNEL) kill(child, sig);
    if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) raise(SIGSTOP);
    errno = saved;
}

// Signal dispositions while the child runs, put back as they were by the destructor. A
// signal contend was started with ignored stays ignored (the program inherits it ignored).
class signals_while_waiting {
public:
    signals_while_waiting() {
        struct sigaction forward {};
        forward.sa_sigaction = forward_signal;
        forward.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&forward.sa_mask);
        for (int sig = 1; sig < NSIG; ++sig)
            if (is_forwarded(sig) && !ignored_at_start[static_cast<std::size_t>(sig)])
                installed_[static_cast<std::size_t>(sig)] =
                    sigaction(sig, &forward, &old_[static_cast<std::size_t>(sig)]) == 0;
    }
    ~signals_while_waiting() {
        for (int sig = 1; sig < NSIG; ++sig)
            if (installed_[static_cast<std::size_t>(sig)])
                sigaction(sig, &old_[static_cast<std::size_t>(sig)], nullptr);
    }
    signals_while_waiting(const signals_while_waiting&) = delete;
    signals_while_waiting& operator=(const signals_while_waiting&) = delete;

private:
    std::array<struct sigaction, NSIG> old_{};
    std::array<bool, NSIG> installed_{};
};

}  // namespace

program_file_check check_program_file(const std::string& path) {
    program_file_check check;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return check;  // the exec will say why
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } close_it{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return check;
    const auto read_at = [fd](void* to, std::size_t size, std::uint64_t offset) {
        return ::pread(fd, to, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
    };
    Elf64_Ehdr eh{};
    if (!read_at(&eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 4096)
        return check;
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) return check;
    bool interpreted = false, pie = false;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        if (!read_at(&ph, sizeof ph, eh.e_phoff + std::uint64_t{i} * sizeof ph)) return check;
        if (ph.p_type == PT_INTERP) interpreted = true;
        if (ph.p_type != PT_DYNAMIC || ph.p_filesz > (1u << 20)) continue;
        std::vector<Elf64_Dyn> dynamic(ph.p_filesz / sizeof(Elf64_Dyn));
        if (!read_at(dynamic.data(), dynamic.size() * sizeof(Elf64_Dyn), ph.p_offset)) return check;
        for (const auto& d : dynamic)
            if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_PIE)) pie = true;
    }
    // No interpreter: a static executable, or a static PIE (ET_DYN, flagged PIE); an ET_DYN
    // that is not (the loader itself, run as `ld.so PROGRAM`) reads LD_PRELOAD.
    if (!interpreted && (eh.e_type == ET_EXEC || pie)) {
        check.refusal =
            "it is statically linked (no program interpreter): the loader that reads LD_PRELOAD never "
            "runs, so its mutexes cannot be interposed";
        return check;
    }
    if (((st.st_mode & S_ISUID) && st.st_uid != ::getuid()) || ((st.st_mode & S_ISGID) && st.st_gid != ::getgid()))
        check.refusal = std::string("it is set-") +
                        ((st.st_mode & S_ISUID) && st.st_uid != ::getuid() ? "user" : "group") +
                        "-ID: the loader runs it in secure mode, which ignores a preloaded library given by its path";
    else if (::fgetxattr(fd, "security.capability", nullptr, 0) > 0)
        check.refusal =
            "it has file capabilities: the loader runs it in secure mode, which ignores a preloaded "
            "library given by its path";
    if (!check.refusal.empty()) return check;
    // The dynamic symbols it imports, for the C11 locks.
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return check;
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
        Elf64_Shdr sh{}, strings{};
        if (!read_at(&sh, sizeof sh, eh.e_shoff + std::uint64_t{i} * sizeof sh)) return check;
        if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum) continue;
        if (!read_at(&strings, sizeof strings, eh.e_shoff + std::uint64_t{sh.sh_link} * sizeof strings)) return check;
        if (sh.sh_size > (std::uint64_t{64} << 20) || strings.sh_size > (std::uint64_t{64} << 20)) return check;
        std::vector<Elf64_Sym> symbols(sh.sh_size / sizeof(Elf64_Sym));
        std::string names(strings.sh_size, '\0');
        if (!read_at(symbols.data(), symbols.size() * sizeof(Elf64_Sym), sh.sh_offset) ||
            !read_at(names.data(), names.size(), strings.sh_offset))
            return check;
        for (const auto& sym : symbols) {
            if (sym.st_shndx != SHN_UNDEF || sym.st_name >= names.size()) continue;
            const std::string name = names.c_str() + sym.st_name;
            for (const char* c11 : {"mtx_lock", "mtx_timedlock", "mtx_trylock", "cnd_wait", "cnd_timedwait"})
                if (name == c11) check.c11_locks.push_back(name);
        }
    }
    return check;
}

program_status run_preloaded(const preload_request& r) {
    if (r.argv.empty() || r.argv.front().empty()) throw std::invalid_argument("no program to run (after --)");
    if (interpose_lock_named(r.lock).empty()) {
        std::string list;
        for (const auto& n : interpose_lock_names()) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument("--lock " + r.lock + ": not a lock this library has (" + list + ")");
    }
    if (!std::filesystem::path(r.library).is_absolute())
        throw std::invalid_argument("the interposition library path " + r.library + " is not absolute");

    child_spec spec;
    spec.argv = r.argv;
    spec.environment = preloaded_environment(r.library, r.lock, r.profile_path, r.run_dir);
    // The program gets the dispositions contend was started with, not the ones set for
    // waiting nor the lab's ignores (a program that writes to a closed pipe dies of SIGPIPE).
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP && (is_forwarded(sig) || sig == SIGCHLD))
            (ignored_at_start[static_cast<std::size_t>(sig)] ? spec.ignored_signals : spec.default_signals)
                .push_back(sig);
    // Published as soon as it exists, so that a signal sent before the exec is passed on too.
    spec.pid_out = &running_child;
    struct clear_running_child {
        ~clear_running_child() { running_child.store(0); }
    } clear_after;
    const signals_while_waiting signals;
    child_process child = child_process::start(spec);
    program_status status;
    if (child.start_error() != 0) {
        status.start_error = child.start_error();
        status.value = 127;  // the exit status of the child whose exec failed
        return status;
    }
    status.pid = child.pid();
    const child_exit ended = child.wait();
    status.cpu_ns = ended.cpu_ns;
    status.signalled = ended.end == child_end::signaled;
    status.value = ended.value;
    return status;
}

int exit_code_of(const program_status& s) noexcept {
    if (s.start_error != 0) return s.start_error == ENOENT ? 127 : 126;
    return s.signalled ? 128 + s.value : s.value;
}

}  // namespace contend::lab
