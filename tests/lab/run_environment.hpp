// What every test of contend run sets up before its first test: one copy per program.
#pragma once

#include <cstdlib>

namespace contend_test {

// The library is found in the build tree; a stray CONTEND_INTERPOSE_LIBRARY must not decide.
inline const bool interpose_library_unset = [] {
    unsetenv("CONTEND_INTERPOSE_LIBRARY");
    return true;
}();

}  // namespace contend_test
