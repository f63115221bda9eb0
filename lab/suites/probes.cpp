// The probes suite: the sleeping-spinlock study's sleeping lock (read before exchanging, then leave the run
// queue for a 1 ns nanosleep) with 1 to 32 read-only probes before each sleep: how long a
// waiter should keep reading the word before it gives up the CPU.
#include <time.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "suites/suite_parts.hpp"

namespace contend::lab {
namespace {

// The study's sleeping lock with Probes read-only probes (each exchanging only when the
// word reads free) before each 1 ns nanosleep.
template <int Probes>
class probing_lock {
public:
    void lock() {
        for (;;) {
            for (int probe = 0; probe < Probes; ++probe) {
                if (state_.load(std::memory_order_relaxed) == 0 && state_.exchange(1, std::memory_order_acquire) == 0)
                    return;
            }
            const timespec one{0, 1};
            nanosleep(&one, nullptr);
        }
    }
    void unlock() { state_.store(0, std::memory_order_release); }

private:
    std::atomic<std::uint32_t> state_{0};
};

template <int Probes>
contender probes_point() {
    auto c = lock_contender<probing_lock<Probes>>(
        "sleeping_lock", std::to_string(Probes) + " read-only probe(s), then a 1 ns nanosleep");
    c.params = {{"probes", std::to_string(Probes)}};
    return c;
}

}  // namespace

suite make_probes_suite() {
    return {"probes",
            "the sleeping-spinlock study's sleeping lock with 1 to 32 read-only probes before each 1 ns nanosleep",
            {probes_point<1>(), probes_point<2>(), probes_point<4>(), probes_point<8>(), probes_point<12>(),
             probes_point<16>(), probes_point<24>(), probes_point<32>()},
            {2, 64}};
}

}  // namespace contend::lab
