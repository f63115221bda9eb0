#include "harness/cell_runner.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "results/results_io.hpp"
#include "suites/suites.hpp"

extern char** environ;

namespace contend::lab {
namespace {

cell_result failed_cell(const std::string& suite, const std::string& contender_id, std::int32_t workers,
                        std::string status, std::string detail) {
    cell_result c;
    c.suite = suite;
    // The id is "name/key:value/...": split it back into the row's parts.
    std::size_t start = 0, slash = contender_id.find('/');
    c.contender = contender_id.substr(0, slash);
    while (slash != std::string::npos) {
        start = slash + 1;
        slash = contender_id.find('/', start);
        const std::string part = contender_id.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        const auto colon = part.find(':');
        if (colon != std::string::npos) c.params.emplace_back(part.substr(0, colon), part.substr(colon + 1));
    }
    c.workers = workers;
    c.status = std::move(status);
    c.detail = std::move(detail);
    return c;
}

std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

}  // namespace

cell_result run_cell_in_child(const std::string& executable, const std::string& suite, const std::string& contender,
                              std::int32_t workers, const harness_options& options) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::vector<std::string> args = {executable,
                                     "__cell",
                                     suite,
                                     contender,
                                     std::to_string(workers),
                                     format_seconds(options.min_time_s),
                                     std::to_string(options.repetitions),
                                     format_seconds(options.deadline_s),
                                     options.pin};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (spawned != 0) {
        close(fds[0]);
        return failed_cell(suite, contender, workers, "crashed", std::string("could not start: ") + std::strerror(spawned));
    }

    // A repetition (or calibration step) must finish within the deadline; allow the child
    // some grace on top to notice its own deadline and report.
    const auto silence_limit = std::chrono::duration<double>(options.deadline_s + 2.0 + options.deadline_s * 0.25);
    std::string buffer, result_line;
    bool killed = false;
    auto last_news = std::chrono::steady_clock::now();
    for (;;) {
        const auto waited = std::chrono::steady_clock::now() - last_news;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(silence_limit - waited).count();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        char chunk[4096];
        const ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n <= 0) break;  // the child closed its end: it is done
        buffer.append(chunk, static_cast<std::size_t>(n));
        std::size_t newline;
        while ((newline = buffer.find('\n')) != std::string::npos) {
            const std::string line = buffer.substr(0, newline);
            buffer.erase(0, newline + 1);
            last_news = std::chrono::steady_clock::now();
            if (line.rfind("cell ", 0) == 0) result_line = line.substr(5);
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (killed)
        return failed_cell(suite, contender, workers, "timed_out",
                           "no repetition finished within " + format_seconds(silence_limit.count()) +
                               " s; the cell's process was killed");
    if (!result_line.empty()) {
        try {
            return cell_from_json(nlohmann::json::parse(result_line));
        } catch (const std::exception& e) {
            return failed_cell(suite, contender, workers, "crashed", std::string("unreadable result: ") + e.what());
        }
    }
    if (WIFSIGNALED(status))
        return failed_cell(suite, contender, workers, "crashed", "killed by signal " + std::to_string(WTERMSIG(status)));
    return failed_cell(suite, contender, workers, "crashed",
                       "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                           " and no result");
}

int cell_child_main(const std::string& suite_name, const std::string& contender_name, std::int32_t workers,
                    const harness_options& options) {
    const suite* s = find_suite(suite_name);
    if (!s) {
        std::fprintf(stderr, "contend __cell: unknown suite '%s'\n", suite_name.c_str());
        return 2;
    }
    for (const auto& c : s->contenders) {
        if (c.id() != contender_name) continue;
        harness_options opts = options;
        opts.on_repetition = [] {
            std::fputs("rep\n", stdout);
            std::fflush(stdout);
        };
        const cell_result cell = run_cell(c, suite_name, workers, opts);
        std::printf("cell %s\n", cell_to_json(cell).dump().c_str());
        std::fflush(stdout);
        return 0;
    }
    std::fprintf(stderr, "contend __cell: unknown contender '%s' in suite '%s'\n", contender_name.c_str(),
                 suite_name.c_str());
    return 2;
}

}  // namespace contend::lab
