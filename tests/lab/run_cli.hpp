// Runs the contend CLI built by this tree (CONTEND_CLI_PATH) and captures what it printed,
// for the tests that drive it end to end.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

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

// Waits for `pid` to exit, for up to `limit` (a bound: a bug fails the test, it does not hang
// it), and returns its wait status; -1 when it was still running then (it is then killed and
// reaped).
inline int wait_status_within(pid_t pid, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) return status;
        if (done < 0 || std::chrono::steady_clock::now() >= end) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
}

// Starts `contend run -- sh -c SCRIPT` with every signal at its default, waits for the
// script's first line (on its standard output), sends `sig` to contend, and returns contend's
// wait status; -1 when the script never printed, or contend still ran 10 s after the signal
// (it is then killed).
inline int contend_run_status_after_signal(const std::string& script, int sig) {
    int out[2];
    if (::pipe(out) != 0) return -1;
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        return -1;
    }
    if (pid == 0) {
        for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        ::execl(CONTEND_CLI_PATH, CONTEND_CLI_PATH, "run", "--", "sh", "-c", script.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(99);
    }
    ::close(out[1]);
    char buf[16] = {};
    const bool started = ::read(out[0], buf, sizeof buf - 1) > 0;
    ::close(out[0]);
    if (started) ::kill(pid, sig);
    const int status = wait_status_within(pid, std::chrono::seconds(10));
    return started ? status : -1;
}

}  // namespace contend_test
