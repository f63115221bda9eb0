// `contend disasm`: the instructions of a contender's hot loop as this binary was built,
// with the atomic instructions marked. The sleeping-spinlock study (docs/references.md) found two of its results wrong
// only by reading what the machine executed (an outlined helper where LSE was expected, a flag that changed nothing): a
// figure is not believed until its loop has been read.
#pragma once

#include <string>

namespace contend::lab {

struct disassembly {
    std::string listing;  // the function, one instruction per line, atomics marked
    int atomic_instructions = 0;  // lines marked as atomic read-modify-writes or exclusives
    int calls = 0;  // calls out of the loop (slow paths, outlined atomics, OS)
};

// Disassembles `<workload_type>::run(` in `executable`: nm's symbol table gives the address
// ranges of the function and of its clones, and objdump lists those bytes only (about
// 0.2 s a contender; the whole listing of the contend binary took about 1 s). Both are
// found on PATH and run without a shell (the path is one argument, whatever characters it
// holds). Throws std::runtime_error when either cannot be started, exits with a failure (not
// an executable, no such file), or the function is not found.
disassembly disassemble_run(const std::string& executable, const std::string& workload_type);

// Whether one objdump instruction line is an atomic RMW: x86 `lock`-prefixed ops and
// `xchg` (implicitly locked); arm64 LSE (ldadd*, cas*, swp*, ld{set,clr,eor}*),
// exclusive pairs (ld[a]xr/st[l]xr) and calls to outlined helpers (__aarch64_*).
bool is_atomic_instruction(const std::string& line);

}  // namespace contend::lab
