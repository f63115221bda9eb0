// Concurrency Kit's spinlocks. CK's headers are C and convert void* implicitly, which C++
// rejects, so this file alone is compiled with -fpermissive (lab/CMakeLists.txt); the
// lock and unlock paths stay inline, as they would be in a C caller.
#include "contend/internal/tsan.hpp"
#include "suites/lock_peers.hpp"

extern "C" {
#include <ck_spinlock.h>
}

namespace contend::lab {
namespace {

struct ck_ticket {
    ck_spinlock_ticket_t l = CK_SPINLOCK_TICKET_INITIALIZER;
    void lock() {
        ck_spinlock_ticket_lock(&l);
        contend::internal::tsan_only_acquired(&l);
    }
    void unlock() {
        contend::internal::tsan_only_releasing(&l);
        ck_spinlock_ticket_unlock(&l);
    }
};
struct ck_fas {
    ck_spinlock_fas_t l = CK_SPINLOCK_FAS_INITIALIZER;
    void lock() {
        ck_spinlock_fas_lock(&l);
        contend::internal::tsan_only_acquired(&l);
    }
    void unlock() {
        contend::internal::tsan_only_releasing(&l);
        ck_spinlock_fas_unlock(&l);
    }
};
// MCS: each waiter spins on its own queue node, one per thread.
struct ck_mcs {
    ck_spinlock_mcs_t l = CK_SPINLOCK_MCS_INITIALIZER;
    static thread_local ck_spinlock_mcs_context_t node;
    void lock() {
        ck_spinlock_mcs_lock(&l, &node);
        contend::internal::tsan_only_acquired(&l);
    }
    void unlock() {
        contend::internal::tsan_only_releasing(&l);
        ck_spinlock_mcs_unlock(&l, &node);
    }
};
thread_local ck_spinlock_mcs_context_t ck_mcs::node;

}  // namespace

void append_ck_locks(std::vector<contender>& out, lock_use use) {
    append_lock<ck_ticket>(out, use, "ck_ticket", "Concurrency Kit ticket spinlock");
    append_lock<ck_mcs>(out, use, "ck_mcs", "Concurrency Kit MCS queue spinlock");
    append_lock<ck_fas>(out, use, "ck_fas", "Concurrency Kit fetch-and-store spinlock");
}

}  // namespace contend::lab
