#include "suites/locks.hpp"

#include <mutex>

#include "contend/mutex.hpp"
#include "contend/spin_lock.hpp"
#include "contend/thin_lock.hpp"
#include "suites/lock_peers.hpp"
#include "suites/primitives.hpp"

namespace contend::lab {
namespace {

// contend::mutex with its spin set to Rounds (mutex::set_spin_limit, process-wide; or
// adaptive) for as long as one exists: the spin rows beside the default. Cells run one at a
// time (each in a process of its own unless --in-process), so the setting is the cell's.
// Rounds is an int, -1 for adaptive.
template <int Rounds>
struct spin_set_mutex {
    spin_set_mutex() {
        contend::mutex::set_spin_limit(Rounds < 0 ? contend::mutex::adaptive_spin : static_cast<std::uint32_t>(Rounds));
    }
    ~spin_set_mutex() { contend::mutex::set_spin_limit(contend::mutex::default_spin_limit); }
    spin_set_mutex(const spin_set_mutex&) = delete;
    spin_set_mutex& operator=(const spin_set_mutex&) = delete;
    void lock() { m.lock(); }
    void unlock() { m.unlock(); }
    contend::mutex m;
};

template <int Rounds>
void append_spin_row(std::vector<contender>& out, lock_use use, const std::string& name,
                     const std::string& description) {
    if (use == lock_use::hold) append_hold_points<spin_set_mutex<Rounds>>(out, name, description, true);
    else append_lock<spin_set_mutex<Rounds>>(out, use, name, description);
}

template <int Rounds>
void append_spin_row(std::vector<contender>& out, lock_use use) {
    if constexpr (Rounds < 0)
        append_spin_row<Rounds>(out, use, "contend_mutex_adaptive", "contend::mutex, spin adapted per mutex");
    else
        append_spin_row<Rounds>(out, use, "contend_mutex_spin" + std::to_string(Rounds),
                                "contend::mutex, spin fixed at " + std::to_string(Rounds) + " rounds");
}

}  // namespace

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
    append_lock<contend::mutex>(out, use, "contend_mutex", "contend::mutex (spin 2 rounds, the default)");
    append_spin_row<-1>(out, use);
    append_spin_row<0>(out, use);
    // An A/A control: the spin0 row again, in processes of its own. The spin rows are read
    // against each other within a few per cent, and a cell's interquartile range (its
    // repetitions, one process) understates how far two runs of the same code land apart;
    // this row's distance from contend_mutex_spin0 shows it, cell by cell.
    append_spin_row<0>(out, use, "contend_mutex_spin0_again", "contend_mutex_spin0 again: an A/A control of the noise");
    append_spin_row<4>(out, use);
    append_spin_row<10>(out, use);
    append_lock<contend::thin_lock>(out, use, "thin_lock", "contend::thin_lock (one 32-bit word, recursive)");
    append_peer_locks(out, use);
}

}  // namespace contend::lab
