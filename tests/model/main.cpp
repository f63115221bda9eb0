// The model tests' main: GoogleTest's, after turning off address-space randomization for this
// process (by re-executing it once with the ADDR_NO_RANDOMIZE personality). The primitives'
// addresses choose their waiter slots and parking-lot buckets, so a schedule replays exactly
// in another process only where the addresses are the same. Where the personality cannot be
// set, the tests still run, and a replay may differ in which primitives share a slot.
//
// It also creates the parking lot's table before the first execution is forked: the table's
// address seeds the buckets' fairness timers, so a table made in each child, by whichever
// thread parks first (and from that thread's malloc arena), would make two executions of one
// schedule differ.
#include <sys/personality.h>
#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "contend/parking_lot.hpp"

int main(int argc, char** argv) {
    const int current = personality(0xffffffff);
    if (current != -1 && !(current & ADDR_NO_RANDOMIZE) && personality(current | ADDR_NO_RANDOMIZE) != -1) {
        execv("/proc/self/exe", argv);
        std::perror("test_models: re-executing without address randomization failed; going on with it");
    }
    (void)contend::parking_lot::stats();
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
