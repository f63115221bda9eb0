// Adapters from each peer's lock API to lock()/unlock(). Kept apart from our own
// contenders, as the baselines of a lab should be.
#include "suites/lock_peers.hpp"
#include "contend/internal/tsan.hpp"

#include <optional>

#if CONTEND_HAVE_ABSL
#include <absl/synchronization/mutex.h>
#endif
#if CONTEND_HAVE_TBB
#include <oneapi/tbb/mutex.h>
#include <oneapi/tbb/queuing_mutex.h>
#include <oneapi/tbb/spin_mutex.h>
#endif

#if (CONTEND_HAVE_ABSL || CONTEND_HAVE_TBB) && defined(__SANITIZE_THREAD__)
// Debian's absl is not built with ThreadSanitizer. The adapters below annotate each
// absl::Mutex itself, but with deadlock detection on, absl also keeps a global graph of the
// mutexes in use, guarded by an internal lock that ThreadSanitizer cannot see: with many
// mutexes held in turn (the striped suite) it reports races inside that graph's code. Only
// those frames are suppressed; a race in the lab's own code is still reported.
//
// Nor is Debian's oneTBB: its scheduler (the pool suite's tbb rows) hands a task to another
// thread through atomics inside libtbb, which ThreadSanitizer cannot see, so every task's
// memory looks raced (and libtbb recycles it for the next task). Reports with a frame of
// libtbb or of its task headers in either stack are suppressed; the same work items run
// unsuppressed under contend's, Asio's and the mutex pool.
extern "C" const char* __tsan_default_suppressions() {
    return
#if CONTEND_HAVE_ABSL
        "race:synchronization_internal::GraphCycles\n"
        "race:libabsl_graphcycles_internal\n"
#endif
#if CONTEND_HAVE_TBB
        "race:libtbb.so\n"
        "race:oneapi/tbb/task_arena.h\n"
        "race:oneapi/tbb/task_group.h\n"
#endif
        "";
}
#endif

namespace contend::lab {
namespace {

#if CONTEND_HAVE_ABSL
// Debian builds absl without NDEBUG, so deadlock detection is on and every Lock() and
// Unlock() maintains a global acquired-before graph. We report the lock both ways; each
// adapter sets the process-wide mode when its cell starts (cells run in their own process).
struct absl_mutex_base {
    absl::Mutex m;
    void lock() {
        m.Lock();
        contend::internal::tsan_only_acquired(&m);
    }
    void unlock() {
        contend::internal::tsan_only_releasing(&m);
        m.Unlock();
    }
};
// Two named types (not one template on the mode): `contend disasm` finds the hot loop by
// the type's name as objdump prints it.
struct absl_mutex_shipped : absl_mutex_base {
    absl_mutex_shipped() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort); }
};
struct absl_mutex_nodetect : absl_mutex_base {
    absl_mutex_nodetect() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }
};
#endif

#if CONTEND_HAVE_TBB
// queuing_mutex is scoped-lock only: the queue node lives with the holder, one per thread.
struct tbb_queuing_mutex {
    tbb::queuing_mutex m;
    static thread_local std::optional<tbb::queuing_mutex::scoped_lock> node;
    void lock() { node.emplace(m); }
    void unlock() { node.reset(); }
};
thread_local std::optional<tbb::queuing_mutex::scoped_lock> tbb_queuing_mutex::node;
#endif

}  // namespace

void append_peer_locks(std::vector<contender>& out, lock_use use) {
#if CONTEND_HAVE_ABSL
    append_lock<absl_mutex_shipped>(out, use, "absl_mutex", "absl::Mutex as Debian ships it (deadlock detection on)");
    append_lock<absl_mutex_nodetect>(out, use, "absl_mutex_nodetect", "absl::Mutex, deadlock detection off");
#endif
#if CONTEND_HAVE_TBB
    append_lock<tbb::spin_mutex>(out, use, "tbb_spin_mutex", "oneTBB spin_mutex");
    append_lock<tbb_queuing_mutex>(out, use, "tbb_queuing_mutex", "oneTBB queuing_mutex (FIFO)");
    append_lock<tbb::mutex>(out, use, "tbb_mutex", "oneTBB mutex");
#endif
#if CONTEND_HAVE_CK
    append_ck_locks(out, use);
#endif
    (void)out;
    (void)use;
}

std::string peers_found() {
    std::string found;
#if CONTEND_HAVE_ABSL
    found += "absl ";
#endif
#if CONTEND_HAVE_TBB
    found += "tbb ";
#endif
#if CONTEND_HAVE_CK
    found += "ck ";
#endif
#if CONTEND_HAVE_ASIO
    found += "asio ";
#endif
#if CONTEND_HAVE_RWQ
    found += "rwq ";
#endif
    if (!found.empty()) found.pop_back();
    return found.empty() ? "none" : found;
}

}  // namespace contend::lab
