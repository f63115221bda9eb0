// The lab's suites: named lists of contenders run by the same harness.
#pragma once

#include <string>
#include <vector>

#include "measure/workload.hpp"

namespace contend::lab {

struct suite {
    std::string name;
    std::string description;
    std::vector<contender> contenders;
    std::vector<std::int32_t> default_workers;
    bool hidden = false;  // self-test suites: runnable, not listed
    // Run the rows' repetitions in rounds, one of every row per round (measure/rounds.hpp):
    // for rows that drift together over seconds, so that the rows compared sample the same
    // stretches of time.
    bool interleave_rounds = false;
    // Run every round --reps asks for, without the early stop at a small spread or after a
    // second per row (harness.hpp): for rows whose one repetition is a whole program run of a
    // second or more, which that rule, made for repetitions of 50 ms, stops at the minimum of
    // three, too few for a ratio within a few percent.
    bool every_round = false;
};

// Inserts, right after the row whose id is `quiet_id`, the same row beside `loops` busy loops
// at nice `nice` (measure/cotenant.hpp): its id is the quiet one's plus busy_loops:N and
// busy_nice:K, so that history and compare keep the two apart. The pipe, pool and server suites
// run one such row by default: how their best-known row holds up beside a co-tenant. Throws
// std::logic_error when the suite has no such row.
void add_busy_loop_row(suite& s, const std::string& quiet_id, std::int32_t loops = 1,
                       std::int32_t nice = default_busy_nice);

const std::vector<suite>& all_suites();
const suite* find_suite(const std::string& name);

// Glob with '*' and '?', as --contenders takes it; a comma-separated list matches any.
bool glob_match(const std::string& patterns, const std::string& name);

}  // namespace contend::lab
