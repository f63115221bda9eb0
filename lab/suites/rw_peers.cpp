// Adapters from each peer's reader-writer lock to the standard's SharedMutex names (lock,
// unlock, lock_shared, unlock_shared), which the rw workload calls.
#include "suites/rw_peers.hpp"

#include <optional>

#include "suites/rw_workload.hpp"
#include "suites/tsan_reported.hpp"

#if CONTEND_HAVE_ABSL
#include <absl/synchronization/mutex.h>
#endif
#if CONTEND_HAVE_TBB
#include <oneapi/tbb/queuing_rw_mutex.h>
#include <oneapi/tbb/spin_rw_mutex.h>
#endif

namespace contend::lab {
namespace {

#if CONTEND_HAVE_ABSL
// absl::Mutex as Debian ships it (deadlock detection on), as the counter suite's absl_mutex
// row runs it, so that the name means one thing across the lab. Debian's absl is not built
// with ThreadSanitizer, so each hand-over is reported to it (tsan_reported.hpp;
// lock_peers.cpp suppresses the deadlock graph's own reports).
struct absl_rw_raw {
    absl::Mutex m;
    absl_rw_raw() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort); }
    void raw_lock() { m.WriterLock(); }
    void raw_unlock() { m.WriterUnlock(); }
    void raw_lock_shared() { m.ReaderLock(); }
    void raw_unlock_shared() { m.ReaderUnlock(); }
};
#endif

#if CONTEND_HAVE_TBB
// queuing_rw_mutex is scoped-lock only: the queue node lives with the holder, one per
// thread (a thread holds one mode at a time here).
struct tbb_queuing_rw {
    tbb::queuing_rw_mutex m;
    static thread_local std::optional<tbb::queuing_rw_mutex::scoped_lock> node;
    void lock() { node.emplace(m, true); }
    void unlock() { node.reset(); }
    void lock_shared() { node.emplace(m, false); }
    void unlock_shared() { node.reset(); }
};
thread_local std::optional<tbb::queuing_rw_mutex::scoped_lock> tbb_queuing_rw::node;
#endif

}  // namespace

void append_rw_peer_locks(std::vector<contender>& out) {
#if CONTEND_HAVE_ABSL
    append_rw_points<tsan_reported<absl_rw_raw>>(out, "absl_mutex",
                                                 "absl::Mutex ReaderLock/WriterLock as Debian ships it");
#endif
#if CONTEND_HAVE_TBB
    append_rw_points<tbb::spin_rw_mutex>(out, "tbb_spin_rw_mutex", "oneTBB spin_rw_mutex");
    append_rw_points<tbb_queuing_rw>(out, "tbb_queuing_rw_mutex", "oneTBB queuing_rw_mutex (FIFO)");
#endif
#if CONTEND_HAVE_CK
    append_ck_rw_locks(out);
#endif
    (void)out;
}

}  // namespace contend::lab
