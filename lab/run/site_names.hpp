// `contend run --profile`: the call sites of the locks the table shows, named with addr2line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "run/profile_table.hpp"

namespace contend::lab {

// Names the sites of the first `limit` locks (those the table shows) with `tool -a -f -C -i
// -e MODULE ADDRESS...` (binutils addr2line), one call per module, run without a shell (MODULE
// is one argument, whatever it holds: after -e, even a leading '-' is not an option), bounded
// by `timeout_s` and 16 MiB of output. A module that is not a
// regular file, a tool that is missing, fails, times out or prints what cannot be read leaves
// those sites as the library named them (site_text falls back). Returns one line per module
// that could not be symbolized ("" when all were, or none needed it).
std::vector<std::string> symbolize_sites(program_profile& profile, std::size_t limit = 20,
                                         const std::string& tool = "addr2line", double timeout_s = 30);

}  // namespace contend::lab
