#include "suites/locks.hpp"

#include <mutex>

#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "contend/thin_lock.hpp"
#include "peers/peers.hpp"
#include "suites/primitives.hpp"

namespace contend::lab {

void append_lock_contenders(std::vector<contender>& out, lock_use use) {
    append_lock<contend::tas_lock>(out, use, "tas_lock", "naive exchange loop (bad baseline)");
    append_lock<contend::ttas_lock>(out, use, "ttas_lock", "read before exchange, pause");
    append_lock<contend::sleeping_spin_lock>(out, use, "sleeping_spin_lock", "8 probes, then 1 ns nanosleep");
    append_lock<contend::backoff_spin_lock>(out, use, "backoff_spin_lock", "pause doubling to 1,024, then yield");
    append_lock<contend::ticket_lock>(out, use, "ticket_lock", "FIFO ticket lock");
    append_lock<event_lock>(out, use, "event_lock", "spin then pause (WFE/SEV on arm64): bad baseline");
    append_lock<pthread_mutex_lock_adapter>(out, use, "pthread_mutex", "pthread_mutex_t, default");
    append_lock<std::mutex>(out, use, "std_mutex", "std::mutex");
    append_lock<c11_mtx_adapter>(out, use, "c11_mtx", "C11 mtx_t, mtx_plain");
    append_lock<contend::mutex>(out, use, "contend_mutex", "contend::mutex");
    append_lock<contend::thin_lock>(out, use, "thin_lock", "contend::thin_lock (one 32-bit word, recursive)");
    append_peer_locks(out, use);
}

}  // namespace contend::lab
