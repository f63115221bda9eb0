// The server suite (server.cpp): HTTP servers loaded by wrk, each cell measured by the
// suite itself (contender::measure_cell). Internal to the lab.
#pragma once

#include "suites/suites.hpp"

namespace contend::lab {

// server.cpp: the suite, registered in registry.cpp.
suite make_server_suite();

}  // namespace contend::lab
