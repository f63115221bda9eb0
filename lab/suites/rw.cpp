// The rw suite: reader-writer locks over a shared table of 64 cache lines (rw_workload.hpp),
// at read shares of 0, 50, 90, 99 and 100 % and critical sections of a few ns (tiny) or
// about 1 us (long). Rows: rw/<lock>/read_pct:P/cs:<tiny|long>/workers:N. The platform's
// locks and ours are here; the peers' are in rw_peers.cpp.
#include <pthread.h>

#include <shared_mutex>
#include <stdexcept>

#include "contend/mutex.hpp"
#include "contend/shared_mutex.hpp"
#include "suites/rw_peers.hpp"
#include "suites/rw_workload.hpp"
#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// glibc's rwlock of a given kind (pthread_rwlockattr_setkind_np): the default prefers
// readers (a writer waits for as long as readers keep arriving); the writer-preferring
// non-recursive kind makes new readers queue behind a waiting writer.
template <int Kind>
struct pthread_rwlock_adapter {
    pthread_rwlock_t l;
    pthread_rwlock_adapter() {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        const int set = pthread_rwlockattr_setkind_np(&a, Kind);
        const int made = set == 0 ? pthread_rwlock_init(&l, &a) : set;
        pthread_rwlockattr_destroy(&a);
        if (made != 0) throw std::runtime_error("pthread_rwlock_init failed");
    }
    ~pthread_rwlock_adapter() { pthread_rwlock_destroy(&l); }
    pthread_rwlock_adapter(const pthread_rwlock_adapter&) = delete;
    pthread_rwlock_adapter& operator=(const pthread_rwlock_adapter&) = delete;
    void lock() { pthread_rwlock_wrlock(&l); }
    void unlock() { pthread_rwlock_unlock(&l); }
    void lock_shared() { pthread_rwlock_rdlock(&l); }
    void unlock_shared() { pthread_rwlock_unlock(&l); }
};

// contend::mutex with reads taken exclusively: the "no readers" line, what a plain mutex
// costs where a reader-writer lock would be used.
struct exclusive_reads {
    contend::mutex m;
    void lock() { m.lock(); }
    void unlock() { m.unlock(); }
    void lock_shared() { m.lock(); }
    void unlock_shared() { m.unlock(); }
};

}  // namespace

const char* rw_section_name(rw_section s) { return s == rw_section::tiny ? "tiny" : "long"; }

std::uint64_t rw_work_per_line(rw_section s) {
    if (s == rw_section::tiny) return 0;
    return static_cast<std::uint64_t>(burn_iterations_per_us() / static_cast<double>(rw_table::lines));
}

suite make_rw_suite() {
    suite s{"rw",
            "reader-writer locks: each worker reads or writes a shared table of 64 cache lines under one lock, at "
            "0 to 100 % reads, the section one line (tiny) or the whole table and about 1 us of work (long); "
            "readers check the table is never torn, and the writers' wait is timed",
            {},
            {1, 2, 4, 16, 64}};
    auto& out = s.contenders;
    append_rw_points<contend::shared_mutex>(out, "contend_shared_mutex", "contend::shared_mutex");
    append_rw_points<std::shared_mutex>(out, "std_shared_mutex", "std::shared_mutex (glibc's rwlock, default kind)");
    append_rw_points<pthread_rwlock_adapter<PTHREAD_RWLOCK_DEFAULT_NP>>(
        out, "pthread_rwlock", "pthread_rwlock_t, default kind (prefers readers)");
    append_rw_points<pthread_rwlock_adapter<PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP>>(
        out, "pthread_rwlock_writer", "pthread_rwlock_t, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP");
    append_rw_peer_locks(out);
    append_rw_points<exclusive_reads>(out, "contend_mutex", "contend::mutex, reads taken exclusively (no readers)");
    return s;
}

}  // namespace contend::lab
