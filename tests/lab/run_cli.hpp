// Runs the contend CLI built by this tree (CONTEND_CLI_PATH) and captures what it printed,
// for the tests that drive it end to end.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace contend_test {

struct cli_outcome {
    int exit_code = -1;  // -1 when it could not start or did not exit normally
    std::string output;  // stdout and stderr together
};

inline cli_outcome run_cli(const std::string& args) {
    const std::string command = std::string(CONTEND_CLI_PATH) + " " + args + " 2>&1";
    cli_outcome o;
    FILE* p = popen(command.c_str(), "r");
    if (!p) return o;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) o.output += buf;
    const int status = pclose(p);
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
}

}  // namespace contend_test
