// model::explore: the parent's side. Every execution runs in a child forked from the test's
// process, so each starts from the same memory (the library's global tables, the parking lot,
// the thread ids), a failure needs no clean-up, and a hang outside the model is killed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "model/model.hpp"
#include "model/scheduler.hpp"
#include "model/strategy.hpp"

namespace contend::model {
namespace {

// A bound in real time on one execution, for a block the model cannot see (a std::mutex held
// across a scheduling point, a real sleep): generous, since the step bound ends livelocks.
constexpr auto execution_time_limit = std::chrono::seconds(60);

struct choice {
    int current = 0;
    bool current_runnable = false;
    bool yielded = false;
    int chosen = 0;
    int default_thread = 0;
    std::vector<int> enabled;
    std::vector<bool> timed;
};

struct run_result {
    bool failed = false;
    std::uint64_t steps = 0;
    bool diverged = false;
    std::string message;
    std::vector<choice> choices;
    std::string schedule;
};

std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void parse_enabled(const std::string& list, choice& c) {
    std::size_t at = 0;
    while (at < list.size()) {
        auto comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        const std::string item = list.substr(at, comma - at);
        c.enabled.push_back(std::atoi(item.c_str()));
        c.timed.push_back(!item.empty() && item.back() == 't');
        at = comma + 1;
    }
}

run_result parse(const std::string& text) {
    run_result r;
    std::istringstream in(text);
    std::string line;
    bool saw_status = false;
    while (std::getline(in, line)) {
        if (line == "schedule") {
            std::ostringstream rest;
            rest << in.rdbuf();
            r.schedule = rest.str();
            break;
        }
        const auto space = line.find(' ');
        const std::string key = line.substr(0, space);
        const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        if (key == "status") {
            saw_status = true;
            r.failed = value != "ok";
        } else if (key == "steps") {
            r.steps = std::strtoull(value.c_str(), nullptr, 10);
        } else if (key == "diverged") {
            r.diverged = value == "1";
        } else if (key == "message") {
            r.message = value;
        } else if (key == "choice") {
            std::istringstream fields(value);
            choice c;
            std::string enabled;
            fields >> c.current >> c.current_runnable >> c.yielded >> c.chosen >> c.default_thread >> enabled;
            parse_enabled(enabled, c);
            r.choices.push_back(std::move(c));
        }
    }
    if (!saw_status) {
        r.failed = true;
        r.message = "the execution ended without a report";
    }
    return r;
}

std::vector<pid_t>& unreaped() {
    static std::vector<pid_t> pids;
    return pids;
}

void reap(bool block) {
    auto& pids = unreaped();
    std::erase_if(pids, [block](pid_t pid) {
        int status = 0;
        pid_t r;
        while ((r = ::waitpid(pid, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
        }
        return r != 0;
    });
}

void reap_later(pid_t child) {
    reap(false);
    unreaped().push_back(child);
}

struct pending {
    pid_t pid = -1;
    int fd = -1;
    std::string spec;
};

// The CPUs this process may run on, read once, in the order of their numbers.
const std::vector<int>& usable_cpus() {
    static const std::vector<int> cpus = [] {
        std::vector<int> list;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
                if (CPU_ISSET(cpu, &set)) list.push_back(cpu);
        return list;
    }();
    return cpus;
}

// The CPU an execution runs on: the one the checker runs on now, whose place the execution
// takes while the checker waits for it, or for the slot-th of several executions at once the
// slot-th CPU. An execution runs one model thread at a time, handing the turn from thread to
// thread at every scheduling point; on one CPU a handoff is a switch, where across two CPUs
// it was a wake-up of the other CPU, and each copy-on-write fault of the execution flushed
// the other CPU's TLB. Pinned, EventModel.AutoSetReleasesOneWaiterPerSet alone took 11.3 s
// of CPU against 17.0 (2-vCPU AMD EPYC VM); the models' ctest stage, four at a time, 175 s
// against 183, since the other CPU is busy there anyway. What a primitive decides from the
// CPU count does not change: the model-checking build counts 2 CPUs wherever it runs
// (platform/yield.hpp).
int execution_cpu(int slot) {
    const auto& cpus = usable_cpus();
    if (cpus.empty()) return -1;
    if (slot >= 0) return cpus[static_cast<std::size_t>(slot) % cpus.size()];
    const int here = sched_getcpu();
    return std::find(cpus.begin(), cpus.end(), here) != cpus.end() ? here : cpus.front();
}

void run_on(int cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)sched_setaffinity(0, sizeof set, &set);  // unpinned if refused: slower, as correct
}

// slot: -1 for an execution that runs alone, else its place among those running at once.
pending start_one(const std::string& spec, const plan& p, const std::function<void()>& body, int slot = -1) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "model: pipe2");
    const int cpu = execution_cpu(slot);
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) throw std::system_error(errno, std::generic_category(), "model: fork");
    if (child == 0) {
        ::close(fds[0]);
        run_on(cpu);  // before the execution's threads start: they inherit it
        detail::run_execution(spec, p.max_steps, body, fds[1]);
    }
    ::close(fds[1]);  // before the next fork, so that each child's pipe ends when that child does
    return {child, fds[0], spec};
}

run_result finish_one(const pending& job) {
    std::string text;
    char buffer[65536];
    const auto give_up = std::chrono::steady_clock::now() + execution_time_limit;
    bool timed_out = false;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd pfd{job.fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready <= 0) continue;  // EINTR, or the time is up (checked above)
        const ssize_t n = ::read(job.fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(job.fd);
    run_result r = parse(text);
    if (!timed_out && text.starts_with("status ok")) {
        // A child that reported is done; it is reaped later, so that tearing down its address
        // space overlaps the next execution instead of delaying it.
        reap_later(job.pid);
        return r;
    }
    if (timed_out) ::kill(job.pid, SIGKILL);
    int status = 0;
    while (::waitpid(job.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        r.failed = true;
        r.message = "the execution ran longer than " + std::to_string(execution_time_limit.count()) +
                    " s of real time: a thread blocked outside the model (a std::mutex, a real sleep)";
    } else if (WIFSIGNALED(status) && r.message.empty()) {
        r.failed = true;
        r.message = "the execution died by signal " + std::to_string(WTERMSIG(status));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !r.failed) {
        r.failed = true;
        r.message = "the execution exited with status " + std::to_string(WEXITSTATUS(status));
    }
    return r;
}

run_result run_one(const std::string& spec, const plan& p, const std::function<void()>& body) {
    return finish_one(start_one(spec, p, body));
}

// Executions of the random and PCT strategies are independent, so one runs per CPU at a time
// (each child runs one model thread at a time). Their results are taken in order, so the
// failure reported is the first in the sequence, as if they had run one by one.
unsigned parallel_executions() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return static_cast<unsigned>(std::clamp(CPU_COUNT(&set), 1, 4));
}

const char* strategy_name(strategy_kind k) {
    switch (k) {
        case strategy_kind::random:
            return "random";
        case strategy_kind::pct:
            return "pct";
        case strategy_kind::bounded:
            return "bounded";
    }
    return "?";
}

std::string choices_spec(const std::vector<int>& prefix) {
    std::string s = "choices:";
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (i) s += '.';
        s += std::to_string(prefix[i]);
    }
    return s;
}

// What running `thread` at choice point c costs the bounded search. The default choice is free.
// Where the current thread could go on, anything else is a preemption. Where it blocked or
// ended, any other runnable thread is free too, but making a timed wait time out costs one
// unless it is the default (no thread can run and its deadline is the earliest): a timeout
// fired while a thread could run, or before an earlier deadline, is the same as holding
// that other thread off the CPU. Free, every nap and timed park would be a branch, and two
// threads napping in turns (a designee on each of two mutexes) an endless path of them.
bool is_preemption(const choice& c, int thread) {
    if (thread == c.default_thread) return false;
    if (c.current_runnable) return true;
    for (std::size_t i = 0; i < c.enabled.size(); ++i)
        if (c.enabled[i] == thread) return c.timed[i];
    return false;
}

void fail_with(outcome& out, const run_result& r, const std::string& spec) {
    out.failed = true;
    out.message = r.message;
    out.spec = spec;
    out.schedule = r.schedule;
}

// Bounded search: depth first over the choice points, every alternative whose preemptions
// (switches away from a thread that could go on and did not yield) stay within the bound.
// Each execution replays a prefix of choices and then takes the default choice, which never
// preempts; the alternatives at the points past the prefix join the search.
void search(const plan& p, const std::function<void()>& body, std::uint64_t budget, outcome& out) {
    struct frame {
        choice c;
        std::vector<bool> tried;
        unsigned preemptions_before;
    };
    std::vector<frame> stack;
    std::vector<int> prefix;
    for (;;) {
        const std::string spec = choices_spec(prefix);
        const run_result r = run_one(spec, p, body);
        ++out.executions;
        out.longest = std::max(out.longest, r.steps);
        if (r.diverged) ++out.diverged;
        if (r.failed) return fail_with(out, r, spec);
        unsigned preemptions = stack.empty() ? 0
                                             : stack.back().preemptions_before +
                                                   (is_preemption(stack.back().c, stack.back().c.chosen) ? 1 : 0);
        for (std::size_t i = stack.size(); i < r.choices.size(); ++i) {
            frame f{r.choices[i], std::vector<bool>(r.choices[i].enabled.size(), false), preemptions};
            for (std::size_t a = 0; a < f.c.enabled.size(); ++a)
                if (f.c.enabled[a] == f.c.chosen) f.tried[a] = true;
            if (is_preemption(f.c, f.c.chosen)) ++preemptions;
            stack.push_back(std::move(f));
        }
        bool advanced = false;
        while (!stack.empty() && !advanced) {
            frame& f = stack.back();
            for (std::size_t a = 0; a < f.c.enabled.size(); ++a) {
                if (f.tried[a]) continue;
                if (f.preemptions_before + (is_preemption(f.c, f.c.enabled[a]) ? 1 : 0) > p.preemptions) continue;
                f.tried[a] = true;
                f.c.chosen = f.c.enabled[a];
                advanced = true;
                break;
            }
            if (!advanced) stack.pop_back();
        }
        if (!advanced) {
            out.complete = true;
            return;
        }
        if (out.executions >= budget) return;
        prefix.clear();
        for (const frame& f : stack) prefix.push_back(f.c.chosen);
    }
}

std::uint64_t executions_from_environment(std::uint64_t planned) {
    const char* text = std::getenv("CONTEND_MODEL_SCHEDULES");
    if (!text || !*text) return planned;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text, text + std::strlen(text), n);
    if (ec != std::errc{} || *end != '\0' || n == 0)
        throw std::invalid_argument(std::string("CONTEND_MODEL_SCHEDULES='") + text + "' is not a positive number");
    return n;
}

std::string what_ran(const plan& p) {
    std::string s;
    if (const char* replay = std::getenv("CONTEND_MODEL_SEED"); replay && *replay)
        s = std::string("replay of ") + replay;
    else s = std::string("strategy ") + strategy_name(p.strategy);
    if (!p.mutation.empty()) s += ", mutation " + p.mutation;
    return s;
}

void write_report(outcome& out, const plan& p) {
    std::ostringstream r;
    if (out.failed) {
        r << "model check FAILED after " << out.executions << " execution(s) (" << what_ran(p) << ")\n"
          << "  why: " << out.message << "\n"
          << "  replay: CONTEND_MODEL_SEED='" << out.spec << "' ctest --preset model -V -R <this test>\n"
          << "  schedule of the failing execution (step, thread, operation, address, value before -> after):\n"
          << out.schedule;
    } else {
        r << "model check passed: " << out.executions << " execution(s) (" << what_ran(p) << "), longest "
          << out.longest << " scheduling points";
        if (p.strategy == strategy_kind::bounded && !std::getenv("CONTEND_MODEL_SEED"))
            r << (out.complete ? ", every schedule with at most "
                               : ", search stopped at its budget before every schedule with at most ")
              << p.preemptions << " preemption(s) run";
        if (out.diverged) r << ", " << out.diverged << " replay(s) did not follow their prefix";
        r << "\n";
        if (!out.schedule.empty()) r << "  schedule of " << out.spec << ":\n" << out.schedule;
    }
    out.report = r.str();
}

}  // namespace

outcome explore(const plan& p, const std::function<void()>& body) {
    outcome out;
    detail::set_mutation(p.mutation);
    if (const char* replay = std::getenv("CONTEND_MODEL_SEED"); replay && *replay) {
        detail::make_strategy(replay);  // a malformed spec is refused here, with its reason
        const run_result r = run_one(replay, p, body);
        out.executions = 1;
        out.longest = r.steps;
        out.spec = replay;
        out.schedule = r.schedule;  // shown even when it passes: a replay is for reading
        if (r.failed) fail_with(out, r, replay);
        reap(true);
        write_report(out, p);
        return out;
    }
    const std::uint64_t executions = executions_from_environment(p.executions);
    if (p.strategy == strategy_kind::bounded) {
        search(p, body, executions, out);
    } else {
        // PCT spreads its priority changes over the steps of an execution: the default
        // schedule's length is the first estimate, then the longest seen so far.
        if (p.strategy == strategy_kind::pct) {
            const run_result first = run_one("choices:", p, body);
            ++out.executions;
            out.longest = first.steps;
            if (first.failed) fail_with(out, first, "choices:");
        }
        const unsigned jobs = parallel_executions();
        std::deque<pending> running;
        std::uint64_t started = out.executions;
        while (!out.failed && (started < executions || !running.empty())) {
            while (running.size() < jobs && started < executions) {
                // Results are taken in order, so the execution started here replaces the one
                // that started `jobs` before it, on that one's CPU.
                const int slot = static_cast<int>(started % jobs);
                const std::uint64_t seed = mix(p.seed, started++);
                running.push_back(start_one(p.strategy == strategy_kind::random
                                                ? "random:" + std::to_string(seed)
                                                : "pct" + std::to_string(p.pct_depth) + "/" +
                                                      std::to_string(out.longest) + ":" + std::to_string(seed),
                                            p, body, slot));
            }
            const pending job = running.front();
            running.pop_front();
            const run_result r = finish_one(job);
            ++out.executions;
            out.longest = std::max(out.longest, r.steps);
            if (r.failed) fail_with(out, r, job.spec);
        }
        for (const pending& job : running) {  // after a failure: the later ones are not needed
            ::kill(job.pid, SIGKILL);
            (void)finish_one(job);
        }
    }
    reap(true);
    write_report(out, p);
    return out;
}

}  // namespace contend::model
