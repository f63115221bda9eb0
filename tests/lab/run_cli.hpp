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

// `text` as one word for the shell, whatever it holds (quotes, spaces, $).
inline std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (const char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

// Runs `contend <args>` through bash (args are shell words: quote paths with shell_quote),
// or, with prefix_cli false, the bash command `args` as it is.
inline cli_outcome run_cli(const std::string& args, bool prefix_cli = true) {
    const std::string line = (prefix_cli ? shell_quote(CONTEND_CLI_PATH) + " " : std::string()) + args + " 2>&1";
    const std::string command = "bash -c " + shell_quote(line);
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
