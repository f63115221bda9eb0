// handoff_sleep on the futex backend: a pipe(2) of the sleeping thread's own. The sleeper
// reads one byte; the waker writes one. Linux wakes a reader sleeping on an empty pipe with
// WF_SYNC (pipe_write), the hint that handoff_sleep.hpp is for.
//
// Every thread's pipe is on one list, so that the child of a fork() closes them all: the
// threads that made them do not exist there, and their ends would stay open in the child for
// good (the forking thread's too: the parent's wakers write to it and the parent's thread
// reads it). The list's lock is taken around fork() (at_fork), as the parking lot's are.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include "platform/fork_child.hpp"
#include "platform/handoff_sleep.hpp"

namespace contend::internal {

class handoff_sleep {
public:
    int read_end = -1;
    int write_end = -1;
    // Made none, or the program closed it: never again. The numbers are then left as they
    // were and never closed (they may name someone else's files by now), and a waker still
    // reading them races with nothing.
    bool failed = false;
    handoff_sleep* prev = nullptr;  // on the list while it has a pipe
    handoff_sleep* next = nullptr;

    ~handoff_sleep();
};

namespace {

// Never destroyed: a thread may exit, and unlist its pipe, after static destruction.
std::mutex& list_lock() {
    static std::mutex* const lock = new std::mutex;
    return *lock;
}
handoff_sleep* list_head = nullptr;
std::size_t list_length = 0;

// The descriptors are the program's: at most a sixteenth of its soft limit goes to these
// pipes, two each (64 threads under the usual limit of 1,024). A program with more threads
// than that asleep in pipes is not a pair beside a co-tenant, and its later threads sleep on
// the condition variable, as every thread did before; without the cap, 600 threads asleep
// in pipes would leave the program none for its own files under that limit.
constexpr std::size_t descriptor_share = 16;
std::size_t pipe_cap() noexcept {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
    return static_cast<std::size_t>(limit.rlim_cur) / descriptor_share / 2;
}

// False, and nothing added, when the cap is reached.
bool add_to_list(handoff_sleep* s) {
    const std::size_t cap = pipe_cap();
    const std::lock_guard g(list_lock());
    if (list_length >= cap) return false;
    ++list_length;
    s->prev = nullptr;
    s->next = list_head;
    if (list_head != nullptr) list_head->prev = s;
    list_head = s;
    return true;
}

void remove_from_list(handoff_sleep* s) {
    const std::lock_guard g(list_lock());
    if (s->prev != nullptr) s->prev->next = s->next;
    else if (list_head == s) list_head = s->next;
    if (s->next != nullptr) s->next->prev = s->prev;
    s->prev = s->next = nullptr;
    --list_length;
}

void close_ends(handoff_sleep& s) noexcept {
    if (!s.failed) {
        if (s.read_end >= 0) ::close(s.read_end);
        if (s.write_end >= 0) ::close(s.write_end);
        s.read_end = s.write_end = -1;
    }
}

void before_fork() { list_lock().lock(); }
void after_fork_in_parent() { list_lock().unlock(); }
// The child has one thread, this one: every pipe on the list is closed, and this thread makes
// a new one at its next sleep. A failed one stays as it is, never used.
void after_fork_in_child() {
    for (handoff_sleep* s = list_head; s != nullptr;) {
        handoff_sleep* const next = s->next;
        close_ends(*s);
        s->prev = s->next = nullptr;
        s = next;
    }
    list_head = nullptr;
    list_length = 0;
    list_lock().unlock();
}
[[maybe_unused]] const bool fork_handlers_registered = at_fork(before_fork, after_fork_in_parent, after_fork_in_child);

std::atomic<std::uint64_t> handoff_count{0};

thread_local handoff_sleep mine;

}  // namespace

handoff_sleep::~handoff_sleep() {
    if (read_end >= 0 && !failed) remove_from_list(this);
    close_ends(*this);
}

handoff_sleep* this_thread_handoff_sleep() noexcept {
    handoff_sleep& s = mine;
    if (s.failed) return nullptr;
    if (s.read_end < 0) {
        // Counted on the list first, so that the cap holds against threads racing here.
        try {
            if (!add_to_list(&s)) {
                s.failed = true;  // the cap: the condition variable serves this thread
                return nullptr;
            }
        } catch (...) {  // std::mutex::lock's system_error: not on Linux
            s.failed = true;
            return nullptr;
        }
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) {
            remove_from_list(&s);
            s.failed = true;  // out of descriptors: the condition variable serves this thread
            return nullptr;
        }
        // One byte at most waits in the pipe (one hand-off per sleep), so a write never
        // finds it full; non-blocking all the same, so that a waker can never block.
        ::fcntl(ends[1], F_SETFL, O_NONBLOCK);
        s.read_end = ends[0];
        s.write_end = ends[1];
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
        // and not closed (handoff_sleep::failed); off the list, so a fork leaves it too.
        remove_from_list(s);
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
