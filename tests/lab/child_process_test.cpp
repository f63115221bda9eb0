// The lab's child processes (os/child_process.hpp) and its one write loop (os/write_all.hpp):
// how a child ended (an exit status, a signal, a deadline that kills its whole group, an
// output cap, a program that is not there), its streams (fed, captured, merged), a running
// child read, signalled and waited for, and write_all through partial writes and EINTR.
// Every wait is bounded. No timing is asserted.
#include "os/child_process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "os/write_all.hpp"

namespace lab = contend::lab;

namespace {

using steady = std::chrono::steady_clock;

lab::child_spec shell(const std::string& script) {
    lab::child_spec spec;
    spec.argv = {"sh", "-c", script};
    spec.output = lab::child_stream::pipe;
    spec.timeout_s = 60;  // a backstop: no test here should come near it
    return spec;
}

// Whether the process is gone or a zombie (killed, not yet reaped by its new parent).
bool gone(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return true;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

bool becomes_gone(pid_t pid) {
    const auto deadline = steady::now() + std::chrono::seconds(20);
    while (!gone(pid)) {
        if (steady::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

TEST(ChildProcess, ReportsTheExitStatus) {
    const auto r = lab::run_child(shell("echo hello; exit 3"));
    EXPECT_EQ(r.end, lab::child_end::exited);
    EXPECT_EQ(r.value, 3);
    EXPECT_EQ(r.output, "hello\n");
    EXPECT_FALSE(r.truncated);
}

TEST(ChildProcess, ReportsTheSignalThatKilledIt) {
    const auto r = lab::run_child(shell("kill -TERM $$"));
    EXPECT_EQ(r.end, lab::child_end::signaled);
    EXPECT_EQ(r.value, SIGTERM);
}

TEST(ChildProcess, ADeadlineKillsTheWholeGroupGrandchildrenToo) {
    lab::child_spec spec = shell("sleep 300 & echo $!; wait");
    spec.new_process_group = true;
    spec.timeout_s = 0.5;
    const auto r = lab::run_child(spec);
    EXPECT_EQ(r.end, lab::child_end::timed_out);
    ASSERT_FALSE(r.output.empty());
    const pid_t grandchild = static_cast<pid_t>(std::stol(r.output));
    EXPECT_TRUE(becomes_gone(grandchild)) << "the grandchild " << grandchild << " outlived the deadline";
}

TEST(ChildProcess, OutputPastTheCapIsCutAndTheChildKilled) {
    lab::child_spec spec = shell("while :; do echo 0123456789abcdef; done");
    spec.output_limit = 1000;
    const auto r = lab::run_child(spec);
    EXPECT_EQ(r.end, lab::child_end::too_much_output);
    EXPECT_TRUE(r.truncated);
    EXPECT_EQ(r.output.size(), 1000u);
    EXPECT_EQ(r.output.substr(0, 17), "0123456789abcdef\n");
}

// The script run with `text` on its standard input.
lab::child_result fed(const std::string& script, std::string text) {
    lab::child_spec spec = shell(script);
    spec.input = lab::child_stream::pipe;
    spec.input_text = std::move(text);
    return lab::run_child(spec);
}

TEST(ChildProcess, StandardInputIsFedThenClosed) {
    const auto r = fed("cat; echo end", "one line\nand another\n");
    EXPECT_EQ(r.end, lab::child_end::exited);
    EXPECT_EQ(r.output, "one line\nand another\nend\n");
}

TEST(ChildProcess, InputToAChildThatReadsNoneDoesNotKillUs) {
    // More than the channel holds: the write meets the closed end (EPIPE, no SIGPIPE).
    const auto r = fed("exec 0<&-; exit 0", std::string(1 << 20, 'x'));
    EXPECT_EQ(r.end, lab::child_end::exited);
    EXPECT_EQ(r.value, 0);
}

TEST(ChildProcess, AMissingProgramSaysSoAndStartsNothing) {
    lab::child_spec spec;
    spec.argv = {"contend-no-such-program-here"};
    const auto r = lab::run_child(spec);
    EXPECT_EQ(r.end, lab::child_end::not_started);
    EXPECT_EQ(r.value, ENOENT);
    const lab::child_process c = lab::child_process::start(spec);
    EXPECT_EQ(c.start_error(), ENOENT);
    EXPECT_EQ(c.pid(), 0);
}

TEST(ChildProcess, ArgumentsAreWordsNotShellText) {
    lab::child_spec spec;
    spec.argv = {"printf", "%s|", "a b", "$(echo no)", "it's"};
    spec.output = lab::child_stream::pipe;
    spec.timeout_s = 60;
    const auto r = lab::run_child(spec);
    EXPECT_EQ(r.end, lab::child_end::exited);
    EXPECT_EQ(r.output, "a b|$(echo no)|it's|");
}

TEST(ChildProcess, StandardErrorJoinsTheOutputOrIsDropped) {
    lab::child_spec spec = shell("echo out; echo err >&2");
    spec.errors = lab::child_stream::pipe;
    EXPECT_EQ(lab::run_child(spec).output, "out\nerr\n");
    spec.errors = lab::child_stream::null;
    EXPECT_EQ(lab::run_child(spec).output, "out\n");
}

TEST(ChildProcess, TheEnvironmentGivenIsTheChildsWhole) {
    lab::child_spec spec = shell("echo \"${CONTEND_CHILD_TEST-unset}:${HOME-unset}\"");
    spec.argv[0] = "/bin/sh";  // no PATH in the environment below
    spec.environment = std::vector<std::string>{"CONTEND_CHILD_TEST=given"};
    EXPECT_EQ(lab::run_child(spec).output, "given:unset\n");
}

TEST(ChildProcess, ARunningChildIsReadSignalledAndWaitedFor) {
    lab::child_spec spec = shell("trap 'echo stopping; exit 7' TERM; echo ready; while :; do sleep 0.01; done");
    lab::child_process c = lab::child_process::start(spec);
    ASSERT_GT(c.pid(), 0);
    std::string text;
    const auto deadline = steady::now() + std::chrono::seconds(20);
    while (text.find("ready\n") == std::string::npos && steady::now() < deadline)
        if (c.read_output(text, 100) == lab::child_process::read_result::end) break;
    ASSERT_EQ(text, "ready\n");
    EXPECT_FALSE(c.wait_for(0).has_value());  // still running
    EXPECT_TRUE(c.signal(SIGTERM));
    const auto ended = c.wait_for(20);
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(ended->end, lab::child_end::exited);
    EXPECT_EQ(ended->value, 7);
    while (c.read_output(text, 100) != lab::child_process::read_result::end && steady::now() < deadline) {
    }
    EXPECT_EQ(text, "ready\nstopping\n");
    EXPECT_FALSE(c.signal(SIGTERM));  // reaped: its pid is no longer ours to signal
}

TEST(ChildProcess, TheDestructorKillsAndReapsAChildStillRunning) {
    lab::child_spec spec;
    spec.argv = {"sleep", "300"};
    pid_t pid = 0;
    {
        const lab::child_process c = lab::child_process::start(spec);
        pid = c.pid();
        ASSERT_GT(pid, 0);
    }
    EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process (its pid is not reused this soon)
}

TEST(ChildProcess, KillAndWaitSaysTheChildWasKilled) {
    lab::child_spec spec;
    spec.argv = {"sleep", "300"};
    lab::child_process c = lab::child_process::start(spec);
    const auto e = c.kill_and_wait();
    EXPECT_EQ(e.end, lab::child_end::signaled);
    EXPECT_EQ(e.value, SIGKILL);
    EXPECT_EQ(c.pid(), 0);
}

TEST(ChildProcess, AFunctionRunsInAForkedChild) {
    lab::child_spec spec;
    spec.output = lab::child_stream::pipe;
    lab::child_process c = lab::child_process::start_function(
        spec,
        [](void* arg) {
            (void)lab::write_all(STDOUT_FILENO, static_cast<const char*>(arg));
            ::_exit(5);
        },
        const_cast<char*>("from the child"));
    std::string text;
    const auto deadline = steady::now() + std::chrono::seconds(20);
    while (c.read_output(text, 100) != lab::child_process::read_result::end && steady::now() < deadline) {
    }
    EXPECT_EQ(text, "from the child");
    const auto e = c.wait_for(20);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->end, lab::child_end::exited);
    EXPECT_EQ(e->value, 5);
}

TEST(ChildProcess, ThePidIsPublishedAndSignalsCanBeResetInTheChild) {
    // SIGTERM ignored here would be inherited; listed as default, the child dies of it.
    struct sigaction ignore {
    }, old{};
    ignore.sa_handler = SIG_IGN;
    ASSERT_EQ(::sigaction(SIGTERM, &ignore, &old), 0);
    std::atomic<pid_t> published{0};
    lab::child_spec spec;
    spec.argv = {"sleep", "300"};
    spec.default_signals = {SIGTERM};
    spec.pid_out = &published;
    lab::child_process c = lab::child_process::start(spec);
    ::sigaction(SIGTERM, &old, nullptr);
    EXPECT_EQ(published.load(), c.pid());
    c.signal(SIGTERM);
    const auto e = c.wait_for(20);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->end, lab::child_end::signaled);
    EXPECT_EQ(e->value, SIGTERM);
}

// --- write_all ---

extern "C" void on_test_signal(int) {}

// A handler for SIGUSR1 without SA_RESTART, so that a blocked write fails with EINTR.
class interrupting_signal {
public:
    interrupting_signal() {
        struct sigaction sa {};
        sa.sa_handler = on_test_signal;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGUSR1, &sa, &old_);
    }
    ~interrupting_signal() { ::sigaction(SIGUSR1, &old_, nullptr); }

private:
    struct sigaction old_ {};
};

struct test_pipe {
    int read = -1, write = -1;
    test_pipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) == 0) {
            read = fds[0];
            write = fds[1];
        }
    }
    ~test_pipe() {
        if (read >= 0) ::close(read);
        if (write >= 0) ::close(write);
    }
    // Fills the pipe to the brim, so that the next write blocks.
    void fill() {
        const int flags = ::fcntl(write, F_GETFL);
        ::fcntl(write, F_SETFL, flags | O_NONBLOCK);
        char block[4096] = {};
        while (::write(write, block, sizeof block) > 0) {
        }
        ::fcntl(write, F_SETFL, flags);
    }
    std::size_t drain() {
        std::size_t total = 0;
        char buf[65536];
        for (ssize_t n; (n = ::read(read, buf, sizeof buf)) != 0;)
            if (n > 0) total += static_cast<std::size_t>(n);
            else if (errno != EINTR) break;
        return total;
    }
};

TEST(WriteAll, WritesEverythingThroughPartialWrites) {
    test_pipe p;
    ASSERT_GE(p.read, 0);
    std::string text(3 << 20, '\0');  // far more than a pipe holds: many partial writes
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
    std::string received;
    std::thread reader([&] {
        char buf[1000];
        for (ssize_t n; (n = ::read(p.read, buf, sizeof buf)) > 0;) received.append(buf, static_cast<std::size_t>(n));
    });
    EXPECT_EQ(lab::write_all(p.write, text), 0);
    ::close(p.write);
    p.write = -1;
    reader.join();
    EXPECT_EQ(received, text);
}

std::atomic<int> eintr_seen{0};
std::atomic<bool> stop_on_eintr{false};
bool count_eintr() {
    eintr_seen.fetch_add(1);
    return stop_on_eintr.load();
}

// Signals `writer` until write_all has seen EINTR at least once (bounded).
bool interrupt_until_seen(pthread_t writer) {
    const auto deadline = steady::now() + std::chrono::seconds(20);
    while (eintr_seen.load() == 0) {
        if (steady::now() > deadline) return false;
        pthread_kill(writer, SIGUSR1);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

// Fills `p`, so that the next write blocks, and sets what count_eintr answers (false: retry).
bool blocks_next_write(test_pipe& p, bool stop) {
    if (p.read < 0) return false;
    p.fill();
    eintr_seen = 0;
    stop_on_eintr = stop;
    return true;
}

TEST(WriteAll, RetriesAWriteInterruptedBySignal) {
    const interrupting_signal signal;
    test_pipe p;
    ASSERT_TRUE(blocks_next_write(p, false));
    const std::string text(100000, 'x');
    int result = -1;
    std::thread writer([&] { result = lab::write_all(p.write, text, count_eintr); });
    const bool interrupted = interrupt_until_seen(writer.native_handle());
    std::thread closer([&] {
        writer.join();
        ::close(p.write);
        p.write = -1;
    });
    const std::size_t drained = p.drain();  // to the end: the writer has finished
    closer.join();
    EXPECT_TRUE(interrupted);
    EXPECT_EQ(result, 0);
    EXPECT_GE(drained, text.size());  // what fill() put there, then all of it
}

TEST(WriteAll, StopsOnEintrWhenAskedTo) {
    const interrupting_signal signal;
    test_pipe p;
    ASSERT_TRUE(blocks_next_write(p, true));
    int result = -1;
    std::thread writer([&] { result = lab::write_all(p.write, std::string(100, 'y'), count_eintr); });
    const bool interrupted = interrupt_until_seen(writer.native_handle());
    if (!interrupted) p.drain();  // let a writer that was never interrupted finish
    writer.join();
    EXPECT_TRUE(interrupted);
    EXPECT_EQ(result, EINTR);
}

}  // namespace
