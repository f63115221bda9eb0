// Where a profiled program waits: the few locks of a `contend run --profile` row that waited
// most, each with its distribution of waits and the call stacks that waited on it, kept with
// the row (cell_result::lock_profile) so that `contend report` can draw them from a results
// file or from the history alike.
//
// The row holds them as one compact JSON text, the same in every store: an object in the
// results JSON ("lock_profile"), a text column in the history (schema version 6) and in CSV.
// Text read back is checked as any input is (lock_profile_from_text): a hostile file gets a
// clear error, never a half-read profile. Internal to the lab (namespace contend::lab).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contend::lab {

// One call stack that waited on a lock: its frames innermost first, each as the profile's
// table names it ("function at file:line", else the module and offset), and its share of the
// lock's sampled waits.
struct waiting_stack {
    std::vector<std::string> frames;
    std::uint64_t samples = 0, wait_ns = 0;
};

// One lock of one process: where it was first contended, its counts, its waits' percentiles
// and histogram (each bucket's lower bound in ns and its count, bounds increasing), and its
// stacks, most wait first.
struct profiled_lock {
    std::string site;
    bool rwlock = false;
    std::uint64_t acquisitions = 0, contended = 0, wait_ns = 0;
    std::uint64_t wait_p50_ns = 0, wait_p90_ns = 0, wait_p99_ns = 0, wait_max_ns = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> wait_histogram;
    std::vector<waiting_stack> stacks;
    // Over all the lock's stacks, the ones kept and the rest: how many there were, their
    // sampled waits and those waits' time (each kept stack's share is of these).
    std::uint64_t stacks_seen = 0, sampled_waits = 0, sampled_wait_ns = 0;
};

struct lock_profile_data {
    std::uint64_t stack_sample_period = 0;  // 1 in N contended waits sampled its stack; 0: none
    std::vector<profiled_lock> locks;  // most wait first
};

// What a row keeps, and the most a text read back may hold.
inline constexpr std::size_t lock_profile_max_locks = 5;
inline constexpr std::size_t lock_profile_max_stacks = 3;
inline constexpr std::size_t lock_profile_max_frames = 16;
inline constexpr std::size_t lock_profile_max_buckets = 512;
inline constexpr std::size_t lock_profile_max_name_bytes = 1024;

class lock_profile_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The compact JSON text ("" for no lock), and back. Reading refuses (lock_profile_error,
// naming what is wrong) anything but what writing makes: a missing or mistyped field, a
// count that is not a whole number, more locks, stacks, frames or buckets than the limits
// above, a name longer than its limit, bucket bounds that do not increase. "" reads as no lock.
std::string lock_profile_text(const lock_profile_data& profile);
lock_profile_data lock_profile_from_text(std::string_view text);

}  // namespace contend::lab
