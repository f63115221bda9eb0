// Concurrency Kit's reader-writer spinlock, ck_rwlock. Compiled as ck_peers.cpp is (CK's C
// headers need -fpermissive in C++: lab/CMakeLists.txt); the paths stay inline, as in a C
// caller. A writer sets its bit and then waits for the readers present to leave; a reader
// that finds the writer bit set backs off until it clears.
#include "suites/rw_peers.hpp"
#include "suites/rw_workload.hpp"
#include "suites/tsan_reported.hpp"

extern "C" {
#include <ck_rwlock.h>
}

namespace contend::lab {
namespace {

// The lock's paths, reported to ThreadSanitizer by tsan_reported.
struct ck_rw_raw {
    ck_rwlock_t l = CK_RWLOCK_INITIALIZER;
    void raw_lock() { ck_rwlock_write_lock(&l); }
    void raw_unlock() { ck_rwlock_write_unlock(&l); }
    void raw_lock_shared() { ck_rwlock_read_lock(&l); }
    void raw_unlock_shared() { ck_rwlock_read_unlock(&l); }
};

}  // namespace

void append_ck_rw_locks(std::vector<contender>& out) {
    append_rw_points<tsan_reported<ck_rw_raw>>(out, "ck_rwlock",
                                               "Concurrency Kit ck_rwlock (writer bit, then readers drain)");
}

}  // namespace contend::lab
