// handoff_sleep on the futex backend: a pipe(2) of the sleeping thread's own. The sleeper
// reads one byte; the waker writes one. Linux wakes a reader sleeping on an empty pipe with
// WF_SYNC (pipe_write), the hint that handoff_sleep.hpp is for.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "platform/fork_child.hpp"
#include "platform/handoff_sleep.hpp"

namespace contend::internal {

class handoff_sleep {
public:
    int read_end = -1;
    int write_end = -1;
    unsigned fork_generation = 0;  // of the process that made the pipe
    // Made none, or the program closed it: never again. The numbers are then left as they
    // were and never closed (they may name someone else's files by now), and a waker still
    // reading them races with nothing.
    bool failed = false;

    void close_pipe() noexcept {
        if (failed) return;
        if (read_end >= 0) ::close(read_end);
        if (write_end >= 0) ::close(write_end);
        read_end = write_end = -1;
    }
    ~handoff_sleep() { close_pipe(); }
};

namespace {

// Bumped in the child of every fork(): a thread's pipe from before it is shared with the
// parent, whose wakers would write to it and whose thread would read from it.
std::atomic<unsigned> fork_generation{0};
void after_fork_in_child() { fork_generation.fetch_add(1, std::memory_order_relaxed); }
[[maybe_unused]] const bool fork_handler_registered = at_fork_child(after_fork_in_child);

std::atomic<std::uint64_t> handoff_count{0};

thread_local handoff_sleep mine;

}  // namespace

handoff_sleep* this_thread_handoff_sleep() noexcept {
    handoff_sleep& s = mine;
    const unsigned generation = fork_generation.load(std::memory_order_relaxed);
    if (s.read_end >= 0 && s.fork_generation != generation) s.close_pipe();  // the child's copies
    if (s.failed) return nullptr;
    if (s.read_end < 0) {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) {
            s.failed = true;  // out of descriptors: the condition variable serves this thread
            return nullptr;
        }
        // One byte at most waits in the pipe (one hand-off per sleep), so a write never
        // finds it full; non-blocking all the same, so that a waker can never block.
        ::fcntl(ends[1], F_SETFL, O_NONBLOCK);
        s.read_end = ends[0];
        s.write_end = ends[1];
        s.fork_generation = generation;
    }
    return &s;
}

bool sleep_until_handed_off(handoff_sleep* s) noexcept {
    for (;;) {
        char byte;
        // The system call itself, not glibc's read(): that is a cancellation point, and a
        // pthread_cancel would unwind the thread from its sleep (through this noexcept
        // function: std::terminate) with its registration still where its waker looks. The
        // futex sleep this replaced was no cancellation point either.
        const long got = ::syscall(SYS_read, s->read_end, &byte, 1);
        if (got == 1) return true;
        if (got < 0 && errno == EINTR) continue;
        // EBADF: the program closed it (or something else now has its number). Given up,
        // and not closed (handoff_sleep::failed).
        s->failed = true;
        return false;
    }
}

void hand_off_to(handoff_sleep* s) noexcept {
    handoff_count.fetch_add(1, std::memory_order_relaxed);
    const char byte = 1;
    while (::syscall(SYS_write, s->write_end, &byte, 1) < 0 && errno == EINTR) {  // no cancellation point either
    }
}

int handoff_sleep_descriptor(const handoff_sleep* s) noexcept { return s != nullptr ? s->read_end : -1; }
std::uint64_t handoffs_made() noexcept { return handoff_count.load(std::memory_order_relaxed); }

}  // namespace contend::internal
