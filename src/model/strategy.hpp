// How a model execution chooses the next thread at a scheduling point. A strategy is made from
// a schedule spec, the text a failure prints and CONTEND_MODEL_SEED replays:
//   random:SEED          every enabled thread equally likely
//   pctD/K:SEED          PCT with depth D over about K steps (Burckhardt et al., ASPLOS 2010)
//   choices:A.B.C...     the threads to run at each choice point, then the default choice
// The default choice (after a choices: prefix, and what a bounded search extends) runs the
// current thread on while it can and has not spun too long (spin_patience), else the
// lowest-numbered runnable one, else the timed waiter with the earliest deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace contend::model::detail {

// One choice point as a strategy sees it. A timed waiter is enabled too: choosing it makes its
// wait time out (the strategy decides when a timeout fires relative to the other threads).
struct choice_view {
    struct candidate {
        int thread;
        bool timed_waiter;  // blocked with a deadline: running it fires the timeout
        std::chrono::steady_clock::time_point deadline;
    };
    std::vector<candidate> enabled;  // in thread order
    int current;
    bool current_runnable;  // the current thread could go on (it did not block or exit)
    bool current_yielded;  // it yielded or spun since its last point
    std::uint32_t current_spins;  // points since it last ran after another thread that followed a yield or spin
    std::uint64_t step;
};

// How many yields (or cpu_relax spins) in a row a thread may make before the default choice and
// PCT run another thread instead. A bounded spin shorter than this runs to its end, as when the
// thread it waits for is descheduled; an unbounded spin (a wait for a flag) lets the others run
// after it. The library's spins are 2 rounds (the mutex), 8 probes (its designee) and 40 (the
// word lock): the mutex's spin always runs out, the word lock's is cut short unless a strategy
// chooses otherwise.
inline constexpr std::uint32_t spin_patience = 8;

class strategy {
public:
    virtual ~strategy() = default;
    virtual void on_spawn(int /*thread*/) {}
    // Returns an index into view.enabled.
    virtual std::size_t choose(const choice_view& view) = 0;
    // True if a choices: prefix named a thread that was not enabled (the program did not
    // replay the same way: a nondeterminism the report must mention).
    virtual bool diverged() const { return false; }
};

// Parses a spec; throws std::invalid_argument naming what is wrong with it.
std::unique_ptr<strategy> make_strategy(const std::string& spec);

// The default choice described above.
std::size_t default_choice(const choice_view& view);

}  // namespace contend::model::detail
