#include "tools/disasm/disasm.hpp"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <vector>

#include "measure/workload.hpp"
#include "os/child_process.hpp"

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

// A binutils tool (nm, objdump), started without a shell, so that no path can run a command
// or break the quoting (a folder named q'$(touch PWNED)'x or it's: tests/lab/disasm_test.cpp).
// Its stdout comes through a pipe, read as it comes (nm's table of the contend binary is
// thousands of lines), its stderr goes to /dev/null.
class tool_process {
public:
    explicit tool_process(std::vector<std::string> argv) : name_(argv.front()) {
        child_spec spec;
        spec.argv = std::move(argv);
        spec.output = child_stream::pipe;
        spec.errors = child_stream::null;
        child_ = child_process::start(spec);
        if (child_.start_error() != 0)
            throw std::runtime_error("could not run " + name_ + " (" + std::strerror(child_.start_error()) +
                                     "): install binutils, which has nm and objdump");
    }

    // The next line of the output, without its newline; false at the end.
    bool next_line(std::string& line) {
        for (;;) {
            if (const auto newline = buffer_.find('\n', at_); newline != std::string::npos) {
                line.assign(buffer_, at_, newline - at_);
                at_ = newline + 1;
                return true;
            }
            buffer_.erase(0, at_);
            at_ = 0;
            if (child_.read_output(buffer_, 1000) == child_process::read_result::end) {
                if (buffer_.empty()) return false;
                line = std::move(buffer_);  // a last line without its newline
                buffer_.clear();
                return true;
            }
        }
    }

    // Reads the rest of the output and waits for the tool; throws unless it exited with 0.
    // Reading to the end, rather than closing the pipe early, lets a failure after the part
    // that was wanted still be seen (the tool is not killed by SIGPIPE halfway).
    void finish(const std::string& executable) {
        std::string sink;
        while (child_.read_output(sink, 1000) != child_process::read_result::end) sink.clear();
        const child_exit e = child_.wait();
        const int status = e.end == child_end::exited ? e.value : -1;
        if (status != 0)
            throw std::runtime_error(
                name_ + " " + executable + " failed (" +
                (status < 0 ? std::string("killed by a signal") : "exit status " + std::to_string(status)) +
                "; is it an executable, and is binutils installed?)");
    }

private:
    std::string name_;
    child_process child_;  // after an exception, the destructor kills and reaps the tool
    std::string buffer_;
    std::size_t at_ = 0;
};

// Our namespace removed, so that a type may also be named relative to it.
std::string strip_namespace(std::string s) {
    for (std::size_t at; (at = s.find("contend::lab::")) != std::string::npos;) s.erase(at, 14);
    return s;
}

struct symbol_range {
    unsigned long long start = 0;
    unsigned long long size = 0;
};

// The address ranges of the function whose demangled name starts with `wanted` and of its
// clones but the cold one, from nm's symbol table: objdump then disassembles those bytes
// only. The whole listing of the contend binary took about a second; the table and the
// ranges, about a fifth of one (2-vCPU AMD EPYC VM).
std::vector<symbol_range> function_ranges(const std::string& path, const std::string& executable,
                                          const std::string& wanted) {
    tool_process nm({"nm", "-C", "-S", "--defined-only", path});
    std::vector<symbol_range> ranges;
    std::string line;
    while (nm.next_line(line)) {
        // "ADDRESS SIZE TYPE NAME"; a symbol without a size has no SIZE, and is no function.
        const auto a = line.find(' ');
        if (a == std::string::npos) continue;
        const auto b = line.find(' ', a + 1);
        if (b == std::string::npos || b == a + 2) continue;  // "ADDRESS T NAME": no size
        const auto c = line.find(' ', b + 1);
        if (c == std::string::npos || c != b + 2) continue;
        const char type = line[b + 1];
        if (type != 'T' && type != 't' && type != 'W' && type != 'w') continue;
        const std::string name = line.substr(c + 1);
        if (strip_namespace(name).rfind(wanted, 0) != 0) continue;
        if (name.find(" [clone .cold]") != std::string::npos) continue;
        symbol_range r;
        r.start = std::strtoull(line.substr(0, a).c_str(), nullptr, 16);
        r.size = std::strtoull(line.substr(a + 1, b - a - 1).c_str(), nullptr, 16);
        if (r.size == 0) continue;
        bool seen = false;
        for (const auto& o : ranges) seen = seen || o.start == r.start;
        if (!seen) ranges.push_back(r);
    }
    nm.finish(executable);
    return ranges;
}

std::string hex(unsigned long long v) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", v);
    return text;
}

}  // namespace

disassembly disassemble_run(const std::string& executable, const std::string& workload_type) {
    if (workload_type.empty()) throw std::runtime_error("this contender has no known hot-loop function");
    // A path that starts with '-' would read as an option.
    const std::string path = executable.rfind('-', 0) == 0 ? "./" + executable : executable;
    const std::string wanted = strip_namespace(workload_type) + "::run(";
    const std::vector<symbol_range> ranges = function_ranges(path, executable, wanted);
    if (ranges.empty()) throw std::runtime_error("no function " + workload_type + "::run in " + executable);
    // The function, and the clones GCC split it into: a `[clone .part.N]` (partial
    // inlining: run() is then a test and a jump, the loop is in the clone) or `.constprop`
    // / `.isra` holds loop code too; a `[clone .cold]` holds only the unlikely blocks (slow
    // paths) and is left out. The clones come anywhere in the binary, before or after.
    struct piece {
        std::string listing;
        int atomic_instructions = 0;
        int calls = 0;
    };
    std::vector<piece> pieces;  // pieces[0] is run() itself once found
    bool found = false;
    std::string line;
    for (const symbol_range& range : ranges) {
        tool_process objdump({"objdump", "-d", "-C", "--no-show-raw-insn", "--start-address=" + hex(range.start),
                              "--stop-address=" + hex(range.start + range.size), path});
        piece* inside = nullptr;
        std::string base_name;  // branch targets repeat the function's name: shorten it to "run"
        while (objdump.next_line(line)) {
            if (inside == nullptr) {
                const auto open = line.find('<');
                if (line.size() > 2 && line.back() == ':' && open != std::string::npos &&
                    strip_namespace(line.substr(open + 1)).rfind(wanted, 0) == 0) {
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
        objdump.finish(executable);
    }
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
