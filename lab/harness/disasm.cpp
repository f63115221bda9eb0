#include "harness/disasm.hpp"

#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace contend::lab {

bool is_atomic_instruction(const std::string& line) {
    // x86 xchg is implicitly locked only with a memory operand: `xchg %ax,%ax` is a nop.
    static const std::regex atomic(
        R"(\block\b|\bxchg[a-z]*\s+[^#]*\(|\b(ldadd|ldset|ldclr|ldeor|swp|cas)[alhb]*\b|\bld[a]?xr[bh]?\b|\bst[l]?xr[bh]?\b|__aarch64_(cas|swp|ld))");
    return std::regex_search(line, atomic);
}

disassembly disassemble_run(const std::string& executable, const std::string& workload_type) {
    if (workload_type.empty()) throw std::runtime_error("this contender has no known hot-loop function");
    const std::string command = "objdump -d -C --no-show-raw-insn '" + executable + "' 2>/dev/null";
    FILE* p = popen(command.c_str(), "r");
    if (!p) throw std::runtime_error("could not run objdump (install binutils)");
    // GCC spells names relative to the enclosing namespace in __PRETTY_FUNCTION__ and in
    // full in the symbol table: compare both with our namespace removed.
    auto strip = [](std::string s) {
        for (std::size_t at; (at = s.find("contend::lab::")) != std::string::npos;) s.erase(at, 14);
        return s;
    };
    const std::string wanted = strip(workload_type) + "::run(";
    disassembly d;
    bool inside = false, found = false;
    std::string full_name;  // branch targets inside the function repeat it: shorten them
    char buf[8192];
    while (std::fgets(buf, sizeof buf, p)) {
        std::string line(buf);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (!inside) {
            const auto open = line.find('<');
            if (line.size() > 2 && line.back() == ':' && open != std::string::npos &&
                strip(line.substr(open + 1)).rfind(wanted, 0) == 0) {
                inside = found = true;
                full_name = line.substr(open + 1, line.size() - open - 3);
                d.listing += line + "\n";
            }
            continue;
        }
        if (line.empty()) break;  // objdump ends a function with a blank line
        for (std::size_t at; !full_name.empty() && (at = line.find(full_name)) != std::string::npos;)
            line.replace(at, full_name.size(), "run");
        std::string mark;
        if (is_atomic_instruction(line)) {
            ++d.atomic_instructions;
            mark = "    <== atomic";
        } else if (line.find("\tcall") != std::string::npos || line.find("\tbl\t") != std::string::npos) {
            ++d.calls;
            mark = "    <-- call";
        }
        d.listing += line + mark + "\n";
    }
    const int status = pclose(p);
    if (!found) {
        if (status != 0) throw std::runtime_error("objdump failed (is binutils installed?)");
        throw std::runtime_error("no function " + workload_type + "::run in " + executable);
    }
    return d;
}

}  // namespace contend::lab
