#include "tools/disasm/disasm.hpp"

#include <cxxabi.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <vector>

#include "measure/workload.hpp"

extern char** environ;

namespace contend::lab {

std::string demangled_type_name(const char* mangled) {
    int status = 0;
    char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    if (status != 0 || name == nullptr) return mangled;  // not a C++ type name: as it is
    std::string out(name);
    std::free(name);
    return out;
}

bool is_atomic_instruction(const std::string& line) {
    // x86 xchg is implicitly locked only with a memory operand: `xchg %ax,%ax` is a nop.
    static const std::regex atomic(
        R"(\block\b|\bxchg[a-z]*\s+[^#]*\(|\b(ldadd|ldset|ldclr|ldeor|swp|cas)[alhb]*\b|\bld[a]?xr[bh]?\b|\bst[l]?xr[bh]?\b|__aarch64_(cas|swp|ld))");
    return std::regex_search(line, atomic);
}

namespace {

// objdump, started without a shell, so that no path can run a command or break the quoting
// (a folder named q'$(touch PWNED)'x or it's: tests/lab/disasm_test.cpp). Its stdout comes
// through a pipe, its stderr goes to /dev/null.
class objdump_process {
public:
    explicit objdump_process(const std::string& executable) {
        // A path that starts with '-' would read as an option.
        const std::string path = executable.rfind('-', 0) == 0 ? "./" + executable : executable;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        std::vector<std::string> args{"objdump", "-d", "-C", "--no-show-raw-insn", path};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const int spawned = ::posix_spawnp(&pid_, "objdump", &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        ::close(fds[1]);
        if (spawned != 0) {
            ::close(fds[0]);
            throw std::runtime_error(std::string("could not run objdump (") + std::strerror(spawned) +
                                     "): install binutils");
        }
        out_ = ::fdopen(fds[0], "r");
        if (!out_) {
            ::close(fds[0]);
            wait();
            throw std::runtime_error("could not read objdump's output");
        }
    }
    objdump_process(const objdump_process&) = delete;
    objdump_process& operator=(const objdump_process&) = delete;
    ~objdump_process() {  // after an exception: objdump ends on the closed pipe
        if (out_) std::fclose(out_);
        std::free(buf_);
        if (pid_ > 0) wait();
    }

    // The next line of the listing, without its newline; false at the end.
    bool next_line(std::string& line) {
        const ssize_t n = ::getline(&buf_, &cap_, out_);
        if (n < 0) return false;
        line.assign(buf_, static_cast<std::size_t>(n));
        if (!line.empty() && line.back() == '\n') line.pop_back();
        return true;
    }

    // Reads the rest of the listing and waits for objdump: its exit status, or -1 when it
    // did not exit normally. Reading to the end, rather than closing the pipe once the
    // function is found, lets a failure after it still be seen (objdump is not killed
    // by SIGPIPE halfway).
    int finish() {
        char sink[1 << 16];
        while (std::fread(sink, 1, sizeof sink, out_) > 0) {
        }
        std::fclose(out_);
        out_ = nullptr;
        std::free(buf_);
        buf_ = nullptr;
        return wait();
    }

private:
    int wait() {
        int status = 0;
        pid_t r;
        while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
        }
        pid_ = -1;
        if (r < 0) return -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    pid_t pid_ = -1;
    std::FILE* out_ = nullptr;
    char* buf_ = nullptr;
    std::size_t cap_ = 0;
};

}  // namespace

disassembly disassemble_run(const std::string& executable, const std::string& workload_type) {
    if (workload_type.empty()) throw std::runtime_error("this contender has no known hot-loop function");
    objdump_process objdump(executable);
    // Compared with our namespace removed, so that a type may also be named relative to it.
    auto strip = [](std::string s) {
        for (std::size_t at; (at = s.find("contend::lab::")) != std::string::npos;) s.erase(at, 14);
        return s;
    };
    const std::string wanted = strip(workload_type) + "::run(";
    // The function, and the clones GCC split it into: a `[clone .part.N]` (partial
    // inlining: run() is then a test and a jump, the loop is in the clone) or `.constprop`
    // / `.isra` holds loop code too; a `[clone .cold]` holds only the unlikely blocks (slow
    // paths) and is left out. The clones come anywhere in the listing, before or after.
    struct piece {
        std::string listing;
        int atomic_instructions = 0;
        int calls = 0;
    };
    std::vector<piece> pieces;  // pieces[0] is run() itself once found
    bool found = false;
    piece* inside = nullptr;
    std::string base_name;  // branch targets repeat the function's name: shorten it to "run"
    std::string line;
    while (objdump.next_line(line)) {
        if (inside == nullptr) {
            const auto open = line.find('<');
            if (line.size() > 2 && line.back() == ':' && open != std::string::npos &&
                strip(line.substr(open + 1)).rfind(wanted, 0) == 0) {
                if (line.find(" [clone .cold]", open) != std::string::npos) continue;  // also a clone's
                const auto clone = line.find(" [clone ", open);
                if (clone == std::string::npos) {
                    found = true;
                    pieces.insert(pieces.begin(), piece{});
                    inside = &pieces.front();
                } else {
                    pieces.push_back(piece{});
                    inside = &pieces.back();
                }
                const auto end = clone == std::string::npos ? line.size() - 2 : clone;
                base_name = line.substr(open + 1, end - open - 1);
                inside->listing += line + "\n";
            }
            continue;
        }
        if (line.empty()) {  // objdump ends a function with a blank line
            inside = nullptr;
            continue;
        }
        for (std::size_t at; (at = line.find(base_name)) != std::string::npos;)
            line.replace(at, base_name.size(), "run");
        std::string mark;
        if (is_atomic_instruction(line)) {
            ++inside->atomic_instructions;
            mark = "    <== atomic";
        } else if (line.find("\tcall") != std::string::npos || line.find("\tbl\t") != std::string::npos) {
            ++inside->calls;
            mark = "    <-- call";
        }
        inside->listing += line + mark + "\n";
    }
    const int status = objdump.finish();
    if (status != 0)
        throw std::runtime_error(
            "objdump -d " + executable + " failed (" +
            (status < 0 ? std::string("killed by a signal") : "exit status " + std::to_string(status)) +
            "; is it an executable, and is binutils installed?)");
    if (!found) throw std::runtime_error("no function " + workload_type + "::run in " + executable);
    disassembly d;
    for (const piece& p : pieces) {
        if (!d.listing.empty()) d.listing += "\n";
        d.listing += p.listing;
        d.atomic_instructions += p.atomic_instructions;
        d.calls += p.calls;
    }
    return d;
}

}  // namespace contend::lab
