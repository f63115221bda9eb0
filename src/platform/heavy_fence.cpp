// The process-wide barrier on hardware (the model-checking build has heavy_fence_model.cpp
// instead; CMakeLists.txt chooses).
#include "platform/heavy_fence.hpp"
#include "contend/internal/atomic.hpp"

#if defined(__linux__) && !defined(CONTEND_PORTABLE_WAIT)
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#define CONTEND_HAVE_MEMBARRIER 1
#endif

#include <atomic>

namespace contend::internal {

#if defined(CONTEND_HAVE_MEMBARRIER)

// Two barriers, the first that works chosen once (heavy_fence_init), and again once more if
// it stops working:
//  - membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): an IPI to every CPU running a thread of
//    this process, each of which executes a full barrier;
//  - on x86-64, a TLB shootdown: a change of protection of a present, dirty page of ours
//    makes the kernel interrupt every CPU that runs this address space (mm_cpumask) to
//    flush its TLB, and an interrupt drains the store buffer of the thread it interrupts
//    (the barrier of Windows' FlushProcessWriteBuffers and of .NET on Linux without
//    membarrier). A thread not running has passed a context switch, itself a full barrier.
//    Elsewhere (arm64 broadcasts TLB invalidations without interrupting anyone) this is no
//    barrier, and is not used.
// A seccomp filter may refuse membarrier (EPERM, ENOSYS...) before the library starts (then
// the query fails and the shootdown is chosen, or none: heavy_fence_init returns false and
// the callers use symmetric fences) or at any time after, when a program locks itself down
// once started: heavy_fence() then switches to the shootdown for good. Only if that is
// impossible too does it stop the process, with a message: going on without the barrier
// could lose a wake-up silently (waiter_registry.cpp). A process registered for membarrier
// that loses the registration (EPERM) switches the same way.
namespace {

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

enum class barrier : int { none, membarrier, tlb_shootdown };
std::atomic<barrier> chosen{barrier::none};

// The shootdown's page: mapped, locked in memory (a page swapped out has no entry to
// flush), and its protection flipped under a lock (two flippers would race on it).
struct shootdown_page {
    void* page = nullptr;
    long size = 0;
    std::atomic_flag busy = ATOMIC_FLAG_INIT;
};
shootdown_page shootdown;

bool tlb_shootdown_init() noexcept {
#if defined(__x86_64__)
    if (shootdown.page != nullptr) return true;
    const long size = sysconf(_SC_PAGESIZE);
    void* page =
        mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return false;
    if (mlock(page, static_cast<std::size_t>(size)) != 0) {
        munmap(page, static_cast<std::size_t>(size));
        return false;
    }
    shootdown.size = size;
    shootdown.page = page;
    return true;
#else
    return false;
#endif
}

// Memory locks are not inherited by a fork child: the child locks the page again.
void relock_page_in_fork_child() noexcept {
    if (shootdown.page != nullptr) (void)mlock(shootdown.page, static_cast<std::size_t>(shootdown.size));
}
[[maybe_unused]] const bool fork_handler_registered = pthread_atfork(nullptr, nullptr, relock_page_in_fork_child) == 0;

bool tlb_shootdown() noexcept {
    while (shootdown.busy.test_and_set(std::memory_order_acquire)) sched_yield();
    auto* word = static_cast<volatile long*>(shootdown.page);
    const auto size = static_cast<std::size_t>(shootdown.size);
    // Writable, then written (a dirty, present entry: the kernel cannot skip the flush), then
    // taken away: the second change is the one that interrupts the other CPUs.
    bool ok = mprotect(shootdown.page, size, PROT_READ | PROT_WRITE) == 0;
    if (ok) {
        *word = *word + 1;
        ok = mprotect(shootdown.page, size, PROT_NONE) == 0;
    }
    shootdown.busy.clear(std::memory_order_release);
    return ok;
}

[[noreturn]] void no_barrier_left() noexcept {
    static constexpr char msg[] =
        "contend: membarrier was refused after the process registered for it (a seccomp filter?), and no other "
        "process-wide barrier works on this platform; stopping rather than risk a lost wake-up\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    std::abort();
}

// membarrier failed after it had worked: switch to the shootdown, once, for good.
void leave_membarrier() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        const bool shootdown_works = tlb_shootdown_init() && tlb_shootdown();
        chosen.store(shootdown_works ? barrier::tlb_shootdown : barrier::none, std::memory_order_release);
    });
}

}  // namespace

bool heavy_fence_init() noexcept {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) {
        chosen.store(barrier::membarrier, std::memory_order_release);
        return true;
    }
    if (tlb_shootdown_init() && tlb_shootdown()) {
        chosen.store(barrier::tlb_shootdown, std::memory_order_release);
        return true;
    }
    return false;
}

void heavy_fence() noexcept {
    internal::thread_fence(std::memory_order_seq_cst);
    for (;;) {
        switch (chosen.load(std::memory_order_acquire)) {
            case barrier::membarrier:
                if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
                leave_membarrier();
                continue;  // with the barrier chosen now
            case barrier::tlb_shootdown:
                if (tlb_shootdown()) return;
                no_barrier_left();
            case barrier::none:
                no_barrier_left();  // precondition broken: heavy_fence_init() said false
        }
    }
}

#else

bool heavy_fence_init() noexcept { return false; }
void heavy_fence() noexcept { internal::thread_fence(std::memory_order_seq_cst); }

#endif

}  // namespace contend::internal
