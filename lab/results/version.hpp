// What `contend --version` prints and every run records: the project's version and the git
// commit the lab was built from (lab/results/version_info.cmake writes them at each build).
#pragma once

#include <string>
#include <string_view>

namespace contend::lab {

std::string_view project_version() noexcept;  // "0.1.0", from CMakeLists.txt's project()
std::string_view git_commit() noexcept;  // "3f5e6813a0b1", "3f5e6813a0b1-dirty" or "unknown"

// "0.1.0 (git 3f5e6813a0b1)": the text a user quotes in a bug report.
inline std::string version_text() {
    return std::string(project_version()) + " (git " + std::string(git_commit()) + ")";
}

}  // namespace contend::lab
