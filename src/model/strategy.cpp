#include "model/strategy.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>

namespace contend::model::detail {
namespace {

bool spun_out(const choice_view& v) { return v.current_runnable && v.current_spins >= spin_patience; }

std::size_t earliest_timed(const choice_view& v) {
    std::size_t best = v.enabled.size();
    for (std::size_t i = 0; i < v.enabled.size(); ++i)
        if (v.enabled[i].timed_waiter && (best == v.enabled.size() || v.enabled[i].deadline < v.enabled[best].deadline))
            best = i;
    return best;
}

class random_strategy final : public strategy {
public:
    explicit random_strategy(std::uint64_t seed) : rng_(seed) {}
    // Uniform: a spin goes on with the same chance as anything else, so it ends with
    // probability one whether it waits for another thread or runs out by itself.
    std::size_t choose(const choice_view& v) override {
        return std::uniform_int_distribution<std::size_t>(0, v.enabled.size() - 1)(rng_);
    }

private:
    std::mt19937_64 rng_;
};

// PCT: each thread gets a random priority above `depth` when it starts; at depth - 1 steps
// chosen at random among the first `steps` the running thread drops to a priority below all
// of those (d - 1, then d - 2, ...); the highest-priority runnable thread always runs. A bug
// that needs d ordering constraints among n threads is found with probability at least
// 1 / (n * k^(d-1)) per execution. A thread that spins past spin_patience drops below
// everyone (a spin that kept the highest priority would never let the awaited thread run),
// and a timed wait times out only when nothing else can run.
class pct_strategy final : public strategy {
public:
    pct_strategy(unsigned depth, std::uint64_t steps, std::uint64_t seed) : depth_(depth), rng_(seed) {
        std::uniform_int_distribution<std::uint64_t> at(1, std::max<std::uint64_t>(steps, 1));
        for (unsigned i = 1; i < depth; ++i) changes_.push_back(at(rng_));
        std::sort(changes_.begin(), changes_.end());
    }
    void on_spawn(int thread) override {
        if (priority_.size() <= static_cast<std::size_t>(thread)) priority_.resize(thread + 1, 0);
        priority_[thread] = static_cast<std::int64_t>(depth_) +
                            static_cast<std::int64_t>(std::uniform_int_distribution<std::uint32_t>(0, 1u << 30)(rng_));
    }
    std::size_t choose(const choice_view& v) override {
        while (next_change_ < changes_.size() && v.step >= changes_[next_change_]) {
            priority_[v.current] = static_cast<std::int64_t>(depth_ - 1 - next_change_);
            ++next_change_;
        }
        if (spun_out(v)) priority_[v.current] = --yield_floor_;
        std::size_t best = v.enabled.size();
        for (std::size_t i = 0; i < v.enabled.size(); ++i) {
            if (v.enabled[i].timed_waiter) continue;
            if (best == v.enabled.size() || priority_[v.enabled[i].thread] > priority_[v.enabled[best].thread])
                best = i;
        }
        return best < v.enabled.size() ? best : earliest_timed(v);
    }

private:
    unsigned depth_;
    std::mt19937_64 rng_;
    std::vector<std::uint64_t> changes_;
    std::size_t next_change_ = 0;
    std::vector<std::int64_t> priority_;
    std::int64_t yield_floor_ = 0;
};

class choices_strategy final : public strategy {
public:
    explicit choices_strategy(std::vector<int> prefix) : prefix_(std::move(prefix)) {}
    std::size_t choose(const choice_view& v) override {
        if (next_ < prefix_.size()) {
            const int wanted = prefix_[next_++];
            for (std::size_t i = 0; i < v.enabled.size(); ++i)
                if (v.enabled[i].thread == wanted) return i;
            diverged_ = true;
        }
        return default_choice(v);
    }
    bool diverged() const override { return diverged_; }

private:
    std::vector<int> prefix_;
    std::size_t next_ = 0;
    bool diverged_ = false;
};

std::uint64_t parse_number(std::string_view text, const std::string& spec) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
        throw std::invalid_argument("model schedule spec '" + spec + "': '" + std::string(text) +
                                    "' is not a decimal number");
    return v;
}

}  // namespace

std::size_t default_choice(const choice_view& v) {
    const bool spun = spun_out(v);
    for (std::size_t i = 0; i < v.enabled.size(); ++i)
        if (v.current_runnable && !spun && v.enabled[i].thread == v.current) return i;
    std::size_t fallback = v.enabled.size();
    for (std::size_t i = 0; i < v.enabled.size(); ++i) {
        if (v.enabled[i].timed_waiter) continue;
        if (spun && v.enabled[i].thread == v.current) {
            if (fallback == v.enabled.size()) fallback = i;
            continue;
        }
        return i;
    }
    if (fallback < v.enabled.size()) return fallback;
    return earliest_timed(v);
}

std::unique_ptr<strategy> make_strategy(const std::string& spec) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos)
        throw std::invalid_argument("model schedule spec '" + spec +
                                    "' has no ':' (random:SEED, pctD/K:SEED or choices:A.B.C)");
    const std::string_view kind(spec.data(), colon);
    const std::string_view rest(spec.data() + colon + 1, spec.size() - colon - 1);
    if (kind == "random") return std::make_unique<random_strategy>(parse_number(rest, spec));
    if (kind.starts_with("pct")) {
        const auto slash = kind.find('/');
        if (slash == std::string_view::npos)
            throw std::invalid_argument("model schedule spec '" + spec + "': PCT is written pctD/K:SEED");
        const auto depth = parse_number(kind.substr(3, slash - 3), spec);
        const auto steps = parse_number(kind.substr(slash + 1), spec);
        if (depth < 1 || depth > 16)
            throw std::invalid_argument("model schedule spec '" + spec + "': PCT depth must be 1 to 16");
        return std::make_unique<pct_strategy>(static_cast<unsigned>(depth), steps, parse_number(rest, spec));
    }
    if (kind == "choices") {
        std::vector<int> prefix;
        std::size_t at = 0;
        while (at < rest.size()) {
            auto dot = rest.find('.', at);
            if (dot == std::string_view::npos) dot = rest.size();
            const auto id = parse_number(rest.substr(at, dot - at), spec);
            if (id > 1000) throw std::invalid_argument("model schedule spec '" + spec + "': thread number too large");
            prefix.push_back(static_cast<int>(id));
            at = dot + 1;
        }
        return std::make_unique<choices_strategy>(std::move(prefix));
    }
    throw std::invalid_argument("model schedule spec '" + spec + "': unknown strategy '" + std::string(kind) +
                                "' (random, pctD/K or choices)");
}

}  // namespace contend::model::detail
