#include "contend/spin_lock.hpp"

#include "lock_conformance.hpp"

namespace contend_test {

template <>
inline constexpr bool hands_over_in_arrival_order<contend::ticket_lock> = true;

using SpinLocks = ::testing::Types<contend::tas_lock, contend::ttas_lock, contend::backoff_spin_lock,
                                   contend::sleeping_spin_lock, contend::ticket_lock>;
INSTANTIATE_TYPED_TEST_SUITE_P(SpinLock, LockConformance, SpinLocks);

TEST(TicketLock, ServesWaitersInArrivalOrder) {
    watchdog dog(std::chrono::seconds(60));
    contend::ticket_lock lock;
    lock.lock();
    constexpr int n = 4;
    std::vector<int> order;
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            lock.lock();
            order.push_back(i);
            lock.unlock();
        });
        // Thread i takes its ticket before thread i+1 starts.
        ASSERT_TRUE(eventually([&] { return lock.queue_length() == static_cast<std::uint32_t>(i + 2); }));
    }
    lock.unlock();
    for (auto& t : threads) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace contend_test
