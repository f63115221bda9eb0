// `contend run --profile`: the per-lock profiles the interposition library writes at exit
// (CONTEND_INTERPOSE_PROFILE, one `<pid>.json` per process: docs/lab.md, "contend run"), read,
// merged over the program's processes, their call sites named with addr2line, printed as a
// table, and the run recorded as one row of the lab's result model. The program
// session (run/program_session.cpp) calls these in order; tests call each one alone.
//
// One file per seam: run/profile_files.hpp (reading the library's files), run/profile_table.hpp
// (merging and the table), run/site_names.hpp (addr2line), run/profile_cells.hpp (the row).
#pragma once

#include "run/profile_cells.hpp"
#include "run/profile_files.hpp"
#include "run/profile_table.hpp"
#include "run/site_names.hpp"
