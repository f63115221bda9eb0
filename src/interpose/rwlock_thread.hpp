// What each thread knows of the rwlocks it holds, for glibc's semantics that the lock alone
// does not give (rwlock_interpose.cpp):
//  - its id, the one a writer leaves in the rwlock (rwlock_layout.hpp) so that its own rdlock
//    or wrlock says EDEADLK and its unlock knows it releases a write. Drawn from a counter,
//    not the kernel's tid: it costs no system call, and a fork child's one thread keeps the
//    forking thread's id, so it still owns a write lock the parent's thread held (as
//    glibc's child, whose thread keeps its tid in the object's __cur_writer, does not: glibc's
//    child sees a stranger's lock);
//  - the rwlocks it holds for reading, so that a read of one it holds already is taken with
//    lock_shared_recursive(), which passes a parked writer: glibc's default rwlock lets a
//    reader re-acquire while a writer waits, and programs rely on it (a read-locked function
//    calling another that read-locks the same rwlock). A new read queues behind a parked
//    writer as contend::shared_mutex's phase-fair policy says.
// Both in the thread's static TLS (initial-exec: the preloaded library's TLS comes with the
// thread, and an access is one %fs-relative instruction), written by this thread only.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace contend::interpose {

namespace detail {
inline std::atomic<std::uint32_t> last_rwlock_thread_id{0};
}

// This thread's id: never 0 (0 is "no writer"). 2^32 threads would wrap it; a wrapped id
// meeting a live writer's is beyond any program's life.
inline std::uint32_t rwlock_thread_id() noexcept {
    __attribute__((tls_model("initial-exec"))) static thread_local std::uint32_t id = 0;
    if (id == 0) [[unlikely]] {
        std::uint32_t next;
        do next = detail::last_rwlock_thread_id.fetch_add(1, std::memory_order_relaxed) + 1;
        while (next == 0);
        id = next;
    }
    return id;
}

// The rwlocks this thread holds for reading, with how many reads of each. A small table: a
// thread rarely holds more than a few rwlocks at once. Past its capacity the reads are only
// counted (untracked); while any is, every read this thread takes counts as possibly
// recursive: conservative, since a recursive read passes parked writers (never a deadlock,
// at worst a writer waits for this thread's reads), where a wrong "not recursive" could
// deadlock behind a writer.
struct read_holds {
    static constexpr int capacity = 16;
    pthread_rwlock_t* lock[capacity] = {};
    std::uint32_t count[capacity] = {};
    std::uint32_t untracked = 0;
    // The slots in use: a thread that holds no read (most reads and every write) pays one
    // compare, not a scan of the table.
    int used = 0;

    // Whether a read of l by this thread may be a re-acquisition.
    bool may_hold(const pthread_rwlock_t* l) const noexcept {
        if (untracked != 0) return true;
        if (used == 0) return false;
        for (int i = 0; i < capacity; ++i)
            if (lock[i] == l) return true;
        return false;
    }
    // After a read of l was taken.
    void add(pthread_rwlock_t* l) noexcept {
        int free_slot = -1;
        for (int i = 0; i < capacity; ++i) {
            if (lock[i] == l) {
                ++count[i];
                return;
            }
            if (lock[i] == nullptr && free_slot < 0) free_slot = i;
        }
        if (free_slot < 0) {
            ++untracked;
            return;
        }
        lock[free_slot] = l;
        count[free_slot] = 1;
        ++used;
    }
    // After a read of l was released. A read the table does not have was one of the untracked
    // (or, misuse, another thread's read, which POSIX leaves undefined: the untracked count
    // then errs one low).
    void remove(const pthread_rwlock_t* l) noexcept {
        for (int i = 0; used != 0 && i < capacity; ++i) {
            if (lock[i] == l) {
                if (--count[i] == 0) {
                    lock[i] = nullptr;
                    --used;
                }
                return;
            }
        }
        if (untracked != 0) --untracked;
    }
};

inline read_holds& this_thread_reads() noexcept {
    __attribute__((tls_model("initial-exec"))) static constinit thread_local read_holds holds{};
    return holds;
}

}  // namespace contend::interpose
