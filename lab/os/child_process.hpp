// The lab's one way to run another program: started without a shell (argv as given, each
// argument one word whatever it holds), its standard streams inherited, sent to /dev/null or
// on a pipe, waited for with or without a deadline, and how it ended said in one type.
// addr2line, objdump, git, a cell's process, the server suite's servers and wrk, the busy
// loops and `contend run`'s program all start here.
//
// Two ways to use it:
//   - run_child(spec): run to the end, with the output captured up to a cap and a deadline;
//   - child_process::start(spec): a running child to talk to: read its output as it comes,
//     signal it, wait for it with a deadline, stop it. The destructor kills (SIGKILL) and
//     reaps a child still running, so that no exception leaves one behind.
//
// Costs: one fork (the parent's page tables are copied: well under a millisecond for the
// lab) and, for an exec, a pipe on which the child reports the exec's errno, read once. The
// child calls only async-signal-safe functions between fork and exec (the parent may have
// threads): everything it needs (argv, environment, /dev/null) is prepared before the fork.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace contend::lab {

// Where one of the child's standard streams goes. `pipe` on standard input: the parent writes
// child_spec::input_text, then closes it (the channel is a connected pair of Unix sockets,
// read as a pipe is, so that a child that ended without reading costs an EPIPE, never a
// SIGPIPE here). On standard output: read with read_output (or
// captured by run_child). On standard error: the same pipe as standard output (which must
// be a pipe then), interleaved as the child writes them.
enum class child_stream { inherit, null, pipe };

struct child_spec {
    // The program and its arguments. argv[0] holding a '/' is a path; otherwise it is looked
    // up in PATH (execvp).
    std::vector<std::string> argv;
    // "NAME=value" each; none: this process's environment.
    std::optional<std::vector<std::string>> environment;
    child_stream input = child_stream::inherit;
    // With input == pipe: written whole by start() before it returns (a child that ends
    // without reading it is no error), so a child must read it before it fills its own
    // output pipe (64 KiB) and the socket's buffer its input, or each waits for the other: one line of settings, not a
    // stream.
    std::string input_text;
    child_stream output = child_stream::inherit;
    child_stream errors = child_stream::inherit;
    // In a process group of its own (led by the child), so that a signal from signal() or the
    // kill at a deadline reaches whatever the child started too (a wrapper script's children).
    bool new_process_group = false;
    // The child is killed (SIGKILL) when the thread that started it dies (PR_SET_PDEATHSIG),
    // and does not run at all when this process died before it could ask for that.
    bool die_with_parent = false;
    // Set to SIG_IGN, and to SIG_DFL, in the child before the exec (a handler of ours becomes
    // SIG_DFL at the exec anyway; an ignore of ours is inherited unless listed here).
    std::vector<int> ignored_signals, default_signals;
    // Stored the child's pid as soon as it exists, before the exec: for a signal handler that
    // passes signals on to it. The caller clears it.
    std::atomic<pid_t>* pid_out = nullptr;
    // run_child only: the deadline in seconds (0: none), and the most bytes of output kept.
    double timeout_s = 0;
    std::size_t output_limit = std::size_t{16} << 20;
};

// How a child ended.
enum class child_end {
    exited,  // value: its exit status
    signaled,  // value: the signal that killed it
    timed_out,  // run_child: still running at the deadline; killed (its group with it)
    too_much_output,  // run_child: printed more than output_limit; killed (its group with it)
    not_started,  // value: the errno of the exec (ENOENT: no such program) or of the fork
};

struct child_exit {
    child_end end = child_end::not_started;
    int value = 0;
    double cpu_ns = 0;  // user and system CPU time of the child and of the children it waited for
};

// What run_child saw: how the child ended and what it printed (the first output_limit bytes).
struct child_result : child_exit {
    std::string output;
    bool truncated = false;  // more was printed than `output` holds (end is too_much_output)
};

class child_process {
public:
    // Starts spec.argv[0] as described by `spec`. Throws std::system_error ("pipe2", "socketpair",
    // "fork", "open /dev/null") when the child cannot be made; a program that cannot be executed
    // comes back as a child_process with start_error() set (its child already reaped).
    // Throws std::invalid_argument for an empty argv or errors on a pipe without output on one.
    static child_process start(const child_spec& spec);
    // The same with no exec: the child runs `body(arg)`, which must not return and may call
    // only async-signal-safe functions. argv and environment are not used.
    static child_process start_function(const child_spec& spec, void (*body)(void*), void* arg);

    child_process() = default;  // no child: pid() is 0
    child_process(child_process&& other) noexcept;
    child_process& operator=(child_process&& other) noexcept;
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    ~child_process();

    pid_t pid() const noexcept { return pid_; }  // 0 once reaped or when it never started
    int start_error() const noexcept { return start_error_; }

    // Reads what the child printed (output == pipe), appending to `into`: waits up to
    // `wait_ms` for something to read. `data`: something was appended; `idle`: nothing came
    // (or a signal interrupted the wait); `end`: the output is closed (the child and all it
    // started are done with it), or there is no pipe.
    enum class read_result { data, idle, end };
    read_result read_output(std::string& into, int wait_ms);

    // Sends `sig` to the child, or to its group when it has one of its own. False when it has
    // been reaped (its pid, or group id, may be another's by now) or kill failed.
    bool signal(int sig) noexcept;

    // Waits for the child to end, for at most `limit_s` seconds (polling every few
    // milliseconds). How it ended (exited or signaled), or nothing when it still runs.
    std::optional<child_exit> wait_for(double limit_s);
    // Waits for as long as it takes (a signal that interrupts the wait does not end it).
    // Throws std::system_error ("wait4") when the child cannot be waited for.
    child_exit wait();
    // SIGKILL (to the group when it has one) and reap; how it ended.
    child_exit kill_and_wait() noexcept;

private:
    void close_output() noexcept;
    child_exit reaped(int status, const rusage& usage) noexcept;

    pid_t pid_ = 0;
    int start_error_ = 0;
    int output_ = -1;
    bool own_group_ = false;
};

// Runs the child to its end: its output captured (output and errors as spec says), its
// standard input fed, for at most spec.timeout_s. At the deadline, or once more than
// spec.output_limit bytes came, the child (its group, with new_process_group) is killed and
// reaped; end says which. Throws std::system_error only as start() does.
child_result run_child(const child_spec& spec);

// The file `program` names, as execvp finds it: `program` itself when it holds a slash; else
// the first DIR/program that we may execute, DIR taken in order from `search_path` (PATH's
// value: folders separated by ':', an empty one the current folder; null: PATH unset,
// "/usr/local/bin:/usr/bin:/bin"); else "" (not found). Checks access(X_OK) only: a folder
// of that name that we may search is found too. No file is opened.
std::string program_file(const std::string& program, const char* search_path);

}  // namespace contend::lab
