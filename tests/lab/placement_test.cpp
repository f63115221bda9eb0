// CPU placement (measure/placement.hpp): CPU lists, the CPUs each worker gets under --pin,
// and pinning a thread. The harness's own use of it (a pinned cell, a CPU it may not use) is
// tested with the harness. Pinning is tried on threads of the test's own, never on the main one.
#include "measure/placement.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lab = contend::lab;

TEST(Placement, CpuListsParseAndPrint) {
    EXPECT_EQ(lab::parse_cpu_list("0-2,5"), (std::vector<int>{0, 1, 2, 5}));
    EXPECT_EQ(lab::parse_cpu_list("3,1,1"), (std::vector<int>{1, 3}));
    EXPECT_EQ(lab::format_cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
    EXPECT_THROW(lab::parse_cpu_list(""), std::invalid_argument);
    EXPECT_THROW(lab::parse_cpu_list("2-1"), std::invalid_argument);
    EXPECT_THROW(lab::parse_cpu_list("x"), std::invalid_argument);
    EXPECT_THROW(lab::placement("sideways", 2), std::invalid_argument);
    EXPECT_EQ(lab::placement("none", 3).size(), 3u);
}

TEST(Placement, EveryModeGivesEachWorkerCpusThisProcessMayUse) {
    const std::vector<int> allowed = lab::allowed_cpus();
    ASSERT_FALSE(allowed.empty());
    for (const std::string pin : {"compact", "spread"}) {
        const auto cpus = lab::placement(pin, 3);
        ASSERT_EQ(cpus.size(), 3u) << pin;
        for (const auto& set : cpus) {
            ASSERT_EQ(set.size(), 1u) << pin;
            EXPECT_NE(std::find(allowed.begin(), allowed.end(), set.front()), allowed.end()) << pin;
        }
    }
    EXPECT_EQ(lab::placement("compact", 1).front(), std::vector<int>{allowed.front()});
    const std::string list = std::to_string(allowed.front());
    EXPECT_EQ(lab::placement(list, 2), (std::vector<std::vector<int>>{{allowed.front()}, {allowed.front()}}));
    for (const auto& set : lab::placement("none", 2)) EXPECT_TRUE(set.empty());
    EXPECT_THROW(lab::placement(std::to_string(allowed.back() + 1), 1), std::invalid_argument);
}

TEST(Placement, APinnedThreadReadsItsMaskBack) {
    std::string pinned = "not run", unpinned = "not run", out_of_range;
    std::thread([&] {
        pinned = lab::pin_self({lab::allowed_cpus().front()});
        unpinned = lab::pin_self({});
        out_of_range = lab::pin_self({CPU_SETSIZE});
    }).join();
    EXPECT_EQ(pinned, "");
    EXPECT_EQ(unpinned, "");
    EXPECT_NE(out_of_range.find("out of range"), std::string::npos) << out_of_range;
}
