// What the model tests share: running a model under the strategies CI uses, and the proof
// that a mutation is found. One program (tests/model/CMakeLists.txt), so one copy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>

#include "model/model.hpp"

namespace contend::model_test {

// The report's summary line, and the whole schedule when replaying one (CONTEND_MODEL_SEED):
// a replay is for reading.
inline void print_report(const model::outcome& r) {
    const bool replay = std::getenv("CONTEND_MODEL_SEED") != nullptr;
    const auto cut = replay ? std::string::npos : r.report.find("  schedule");
    std::printf("%s", r.report.substr(0, cut).c_str());
}

// Explores the model under `p` and expects no failure; a bounded search must also have run
// every schedule within its bound (unless a sweep or a replay changed the budget).
inline void expect_holds(model::plan p, const std::function<void()>& body) {
    const auto r = model::explore(p, body);
    EXPECT_FALSE(r.failed) << r.report;
    if (p.strategy == model::strategy_kind::bounded && !std::getenv("CONTEND_MODEL_SCHEDULES") &&
        !std::getenv("CONTEND_MODEL_SEED")) {
        EXPECT_TRUE(r.complete) << "the search did not finish within its budget:\n" << r.report;
    }
    print_report(r);
}

// What CI gives each model's sampling strategies (PCT and random), in executions. With the
// bounded search beside them, every model runs about a thousand schedules or more; the whole
// suite has to fit the test command's four minutes for the model build
// (docs/design/model-checking.md, "Costs and budgets"). scripts/model_check.sh raises it.
inline constexpr std::uint64_t sampled_schedules = 200;

// The usual plan of a model: PCT and random, sampled_schedules each, then every schedule with
// at most `preemptions` preemptions (the search must complete within 5,000 executions).
inline void expect_holds_under_every_strategy(const std::function<void()>& body, unsigned preemptions) {
    expect_holds({.strategy = model::strategy_kind::pct, .executions = sampled_schedules}, body);
    expect_holds({.strategy = model::strategy_kind::random, .executions = sampled_schedules}, body);
    expect_holds({.strategy = model::strategy_kind::bounded, .executions = 5000, .preemptions = preemptions}, body);
}

// The proof that the checker can fail: each strategy listed must report the mutation's bug
// within `budget` executions (the bounded search with `preemptions` preemptions).
inline void expect_found(const char* mutation, const std::function<void()>& body, std::uint64_t budget,
                         std::initializer_list<model::strategy_kind> strategies, unsigned preemptions = 1) {
    for (const auto strategy : strategies) {
        const auto r = model::explore(
            {.strategy = strategy, .executions = budget, .preemptions = preemptions, .mutation = mutation}, body);
        EXPECT_TRUE(r.failed) << "the mutation " << mutation << " was not found:\n" << r.report;
        print_report(r);
    }
}

inline constexpr std::initializer_list<model::strategy_kind> every_strategy = {
    model::strategy_kind::pct, model::strategy_kind::random, model::strategy_kind::bounded};

}  // namespace contend::model_test
