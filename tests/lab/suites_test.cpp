// The suites, their registry and the --contenders glob. Every contender of every listed
// suite keeps an exact count: the harness checks the final shared value against the
// workers' completed operations, so a contender whose primitive loses an update, or whose
// expected total is computed wrongly, fails here. No timing is asserted.
#include "suites/suites.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "measure/harness.hpp"
#include "suites/lock_peers.hpp"
#include "suites/pipe_workload.hpp"
#include "suites/pool_workload.hpp"

namespace lab = contend::lab;

namespace {
const lab::contender& find(const std::string& suite, const std::string& id) {
    const auto* s = lab::find_suite(suite);
    if (!s) throw std::runtime_error("no suite " + suite);
    for (const auto& c : s->contenders)
        if (c.id() == id) return c;
    throw std::runtime_error("no contender " + id + " in " + suite);
}
// A contender's workload under the shared-counter contract.
std::unique_ptr<lab::counting_workload> counting(const std::string& suite, const std::string& id) {
    auto w = find(suite, id).make();
    auto* c = dynamic_cast<lab::counting_workload*>(w.get());
    if (!c) throw std::runtime_error(id + " is not a counting workload");
    w.release();
    return std::unique_ptr<lab::counting_workload>(c);
}
}  // namespace

class EverySuiteContender : public testing::TestWithParam<std::string> {};

TEST_P(EverySuiteContender, KeepsAnExactCountAtTwoWorkers) {
    const auto* s = lab::find_suite(GetParam());
    ASSERT_NE(s, nullptr);
    ASSERT_FALSE(s->contenders.empty());
    lab::harness_options o;
    o.min_time_s = 0.001;
    o.repetitions = 1;
    o.deadline_s = 20;
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell(c, s->name, 2, o);
        EXPECT_TRUE(cell.valid()) << s->name << "/" << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_EQ(cell.has_fairness, c.is_lock);
    }
}

INSTANTIATE_TEST_SUITE_P(Listed, EverySuiteContender,
                         testing::Values("counter", "hold", "striped", "wait-policy", "probes", "sharing", "tax",
                                         "monitor"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (auto& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

TEST(StripedSuite, TheStripeCountIsAPowerOfTwoSoAMaskPicksTheStripe) {
    // A `%` would put a 64-bit division into every operation of every contender.
    EXPECT_THROW(lab::striped_counters<std::mutex>(3), std::invalid_argument);
    EXPECT_THROW(lab::striped_counters<std::mutex>(0), std::invalid_argument);
    auto w = counting("striped", "std_mutex/locks:16");
    lab::progress_counters progress(2);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 1000, stop, progress), 1000u);
    EXPECT_EQ(w->run(1, 500, stop, progress), 500u);
    EXPECT_EQ(w->observed_total(), 1500u);
}

namespace {
// A lock with a destructor (as the spin rows' wrapper and most peers have), which makes an
// array new put a cookie before the elements; it can also fail its n-th construction.
struct lock_with_destructor {
    static inline int live = 0;
    static inline int fail_at = -1;
    lock_with_destructor() {
        if (fail_at == live) throw std::runtime_error("lock construction failed");
        ++live;
    }
    ~lock_with_destructor() { --live; }
    void lock() {}
    void unlock() {}
};
}  // namespace

TEST(StripedSuite, TheTableStartsOnACacheLineWhateverTheLocksDestructor) {
    // An 8-byte array cookie before the stripes split one stripe in four across two lines
    // for locks with a destructor only, and made the same lock measure up to 25 % slower.
    lab::striped_counters<lock_with_destructor> with(64);
    lab::striped_counters<std::mutex> without(64);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(with.table()) % contend::cache_line_size, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(without.table()) % contend::cache_line_size, 0u);
    EXPECT_EQ(lock_with_destructor::live, 64);
}

TEST(StripedSuite, AStripeThatFailsToConstructUndoesTheOthers) {
    lock_with_destructor::fail_at = 10;
    EXPECT_THROW(lab::striped_counters<lock_with_destructor>(16), std::runtime_error);
    lock_with_destructor::fail_at = -1;
    EXPECT_EQ(lock_with_destructor::live, 0);
}

TEST(StripedSuite, ACountWhoseTableSizeWrapsAroundIsRefusedNotAllocatedShort) {
    EXPECT_THROW(lab::striped_counters<std::mutex>(std::size_t{1} << 63), std::bad_array_new_length);
}

TEST(TaxSuite, ExpectsOneIncrementPerFullRunOfItemsPerWorker) {
    // Ratio 10: worker 0 completes 25 items (2 increments), worker 1 nine (none).
    auto w = counting("tax", "fetch_add_relaxed/items_per_inc:10");
    lab::progress_counters progress(2);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 25, stop, progress), 25u);
    EXPECT_EQ(w->run(1, 9, stop, progress), 9u);
    EXPECT_EQ(w->observed_total(), 2u);
    EXPECT_EQ(w->expected_total({25, 9}), 2u);
}

TEST(TaxSuite, BelowOneItemPerIncrementEachItemMakesSeveral) {
    auto w = counting("tax", "contend_mutex/items_per_inc:0.01");
    lab::progress_counters progress(1);
    std::atomic<bool> stop{false};
    w->reset();
    EXPECT_EQ(w->run(0, 3, stop, progress), 3u);
    EXPECT_EQ(w->observed_total(), 300u);
    EXPECT_EQ(w->expected_total({3}), 300u);
}

TEST(SharingSuite, PrivateCountersSumToTheWorkersOperations) {
    for (const char* id : {"packed", "padded"}) {
        auto w = counting("sharing", id);
        lab::progress_counters progress(3);
        std::atomic<bool> stop{false};
        w->reset();
        w->run(0, 100, stop, progress);
        w->run(2, 50, stop, progress);
        EXPECT_EQ(w->observed_total(), 150u) << id;
        w->reset();
        EXPECT_EQ(w->observed_total(), 0u) << id;
    }
}

// --- the --contenders glob ------------------------------------------------------------------

TEST(Glob, MatchesTheWholeNameWithStarsAndQuestionMarks) {
    struct row {
        const char* pattern;
        const char* name;
        bool matches;
    };
    const row table[] = {
        {"*", "std_mutex", true},
        {"*", "", true},
        {"", "", true},
        {"", "a", false},
        {"std_mutex", "std_mutex", true},
        {"std_mute", "std_mutex", false},  // a full match, not a prefix
        {"td_mutex", "std_mutex", false},  // nor a suffix
        {"?td_mutex", "std_mutex", true},
        {"?", "", false},
        {"??", "a", false},
        {"std_*", "std_mutex", true},
        {"*_mutex", "contend_mutex", true},
        {"*mutex*", "absl_mutex_nodetect", true},
        {"c*_*x", "contend_mutex", true},
        {"c*_*x", "contend_mutexes", false},
        {"*a*b*c*", "xxaxxbxxcxx", true},
        {"*a*b*c*", "xxaxxcxxbxx", false},
        {"a*a*a*b", "aaaaaaaab", true},  // the last star must give back characters
        {"a*a*a*b", "aaaaaaaa", false},
        {"*/cs_us:20", "contend_mutex/cs_us:20", true},
        {"contend_*", "std_mutex", false},
        {"**", "x", true},
        {"x**", "x", true},
        {"**?**", "", false},
    };
    for (const auto& r : table)
        EXPECT_EQ(lab::glob_match(r.pattern, r.name), r.matches) << "'" << r.pattern << "' against '" << r.name << "'";
}

TEST(Glob, ACommaSeparatedListMatchesWhenAnyItemDoes) {
    EXPECT_TRUE(lab::glob_match("contend_*,std_*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("std_*,contend_*", "std_mutex"));
    EXPECT_FALSE(lab::glob_match("contend_*,tbb_*", "std_mutex"));
    EXPECT_TRUE(lab::glob_match("nosuch,,?", "x"));
    EXPECT_FALSE(lab::glob_match("nosuch,", "x"));
    EXPECT_TRUE(lab::glob_match("nosuch,", ""));  // an empty item matches the empty name only
}

// Defect 9: the recursive matcher tried every way to split the name between the stars,
// so ten stars before a character the name lacks ran for minutes. Not a timing test: it
// must only finish (CTest's timeout catches a hang).
TEST(Glob, ManyStarsAreNotExponential) {
    const std::string long_name(200, 'a');
    EXPECT_FALSE(lab::glob_match("**********!", long_name));
    EXPECT_FALSE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*!", long_name));
    EXPECT_FALSE(lab::glob_match("*?*?*?*?*?*?*?*?*?*?*b", long_name));
    EXPECT_TRUE(lab::glob_match("**********a", long_name));
    EXPECT_TRUE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*", long_name));
    EXPECT_TRUE(lab::glob_match("*a*a*a*a*a*a*a*a*a*a*a", long_name));
    EXPECT_TRUE(lab::glob_match(std::string(1000, '*'), long_name));
    EXPECT_FALSE(lab::glob_match(std::string(1000, '*') + "b", long_name + long_name));
    std::string every_other;  // 100 "*a": matches only 100 or more a's
    for (int i = 0; i < 100; ++i) every_other += "*a";
    EXPECT_TRUE(lab::glob_match(every_other, long_name));
    EXPECT_FALSE(lab::glob_match(every_other + "*a", std::string(100, 'a')));
}

TEST(SuiteRegistry, ListsEachSuiteOnceWithUniqueContenderIds) {
    std::set<std::string> names;
    for (const auto& s : lab::all_suites()) {
        EXPECT_TRUE(names.insert(s.name).second) << s.name;
        EXPECT_EQ(lab::find_suite(s.name), &s) << s.name;
        EXPECT_FALSE(s.default_workers.empty()) << s.name;
        EXPECT_EQ(s.hidden, s.name == "selftest") << s.name;
        std::set<std::string> ids;
        for (const auto& c : s.contenders) {
            EXPECT_TRUE(ids.insert(c.id()).second) << s.name << "/" << c.id();
            // A contender the harness runs has a workload and its type; one that measures its
            // cells itself (the server suite) has neither.
            if (c.measure_cell) {
                EXPECT_FALSE(c.make) << s.name << "/" << c.id();
                EXPECT_TRUE(c.workload_type.empty()) << s.name << "/" << c.id();
                continue;
            }
            EXPECT_TRUE(c.make) << s.name << "/" << c.id();
            EXPECT_FALSE(c.workload_type.empty()) << s.name << "/" << c.id();
        }
    }
    EXPECT_EQ(lab::find_suite("nosuch"), nullptr);
}

TEST(SuiteRegistry, CounterAndHoldRunTheSameLocks) {
    std::vector<std::string> counter_locks, hold_locks;
    for (const auto& c : lab::find_suite("counter")->contenders)
        if (c.is_lock) counter_locks.push_back(c.name);
    for (const auto& c : lab::find_suite("hold")->contenders)
        if (c.params.front().second == "0") hold_locks.push_back(c.name);
    EXPECT_FALSE(counter_locks.empty());
    EXPECT_EQ(counter_locks, hold_locks);
}

// --- the pool suite ---------------------------------------------------------------------------

namespace {
// The row a cell of `c` at 2 workers gets: the name tools outside the project read.
std::string pool_row(const lab::contender& c) {
    lab::cell_result cell;
    cell.suite = "pool";
    cell.contender = c.name;
    cell.params = c.params;
    cell.workers = 2;
    return cell.name();
}
bool peer_built_in(const std::string& peer) {
    const std::string found = " " + lab::peers_found() + " ";
    return found.find(" " + peer + " ") != std::string::npos;
}
lab::harness_options quick_pool_options() {
    lab::harness_options o;
    o.min_time_s = 0.001;
    o.repetitions = 1;
    o.min_repetitions = 1;
    o.deadline_s = 20;
    return o;
}
}  // namespace

TEST(PoolSuite, ListsEveryPoolInEveryModeUnderTheDesignRowNames) {
    const auto* s = lab::find_suite("pool");
    ASSERT_NE(s, nullptr);
    std::vector<std::string> pools = {"contend", "mutex_pool", "no_pool"};
    if (peer_built_in("tbb")) pools.push_back("tbb");
    if (peer_built_in("asio")) pools.push_back("asio");
    std::set<std::string> rows;
    for (const auto& c : s->contenders) {
        EXPECT_NE(std::find(pools.begin(), pools.end(), c.name), pools.end()) << c.name;
        EXPECT_FALSE(c.is_lock) << c.id();
        EXPECT_EQ(c.operation, "item") << c.id();
        rows.insert(pool_row(c));
    }
    const std::vector<std::string> modes = {"sustained", "burst:1", "burst:4", "burst:16", "burst:64", "burst:256"};
    std::size_t expected = 1;  // no_pool's one row
    for (const auto& pool : pools) {
        if (pool == "no_pool") continue;
        // mutex_pool has one queue: its local rows would run the same code again.
        const std::vector<std::string> queues =
            pool == "mutex_pool" ? std::vector<std::string>{"global"} : std::vector<std::string>{"global", "local"};
        for (const auto& queue : queues)
            for (const auto& mode : modes) {
                const std::string row = "pool/" + pool + "/queue:" + queue + "/mode:" + mode + "/workers:2";
                EXPECT_EQ(rows.count(row), 1u) << row;
                ++expected;
            }
    }
    EXPECT_EQ(rows.count("pool/no_pool/queue:none/mode:sustained/workers:2"), 1u);
    EXPECT_EQ(rows.count("pool/mutex_pool/queue:local/mode:sustained/workers:2"), 0u);
    // And contend's plainest row again, beside a busy loop (cotenant_test.cpp).
    EXPECT_EQ(rows.count("pool/contend/queue:global/mode:sustained/busy_loops:1/busy_nice:19/workers:2"), 1u);
    EXPECT_EQ(s->contenders.size(), expected + 1);
    EXPECT_EQ(s->default_workers, std::vector<std::int32_t>{static_cast<std::int32_t>(lab::allowed_cpus().size())})
        << "one pool thread per CPU this process may use, as .NET's benchmark runs";
}

TEST(PoolSuite, EveryContenderRunsItsItemsWithExactCountsAndReportsItemsPerMs) {
    const auto* s = lab::find_suite("pool");
    ASSERT_NE(s, nullptr);
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell(c, "pool", 2, quick_pool_options());
        ASSERT_TRUE(cell.valid()) << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_GT(cell.metric("items_per_ms"), 0) << c.id();
        EXPECT_GT(cell.metric("cpu_ns_per_item"), 0) << c.id();
        EXPECT_GE(cell.metric("threads_seen"), 1) << c.id();
        EXPECT_LE(cell.metric("threads_seen"), 2) << c.id() << ": the pool must run exactly its 2 threads";
        EXPECT_FALSE(cell.has_fairness) << c.id();
        // The row's CPU per operation is the whole process's (the pool's workers are not
        // the harness's threads), the same figure as the metric.
        EXPECT_DOUBLE_EQ(cell.cpu_ns_per_op, cell.metric("cpu_ns_per_item")) << c.id();
    }
}

TEST(PoolSuite, ABurstRepetitionRunsWholeBurstsAndSustainedAtLeastTheItemsAsked) {
    for (const auto& c : lab::find_suite("pool")->contenders) {
        if (c.name != "contend" && c.name != "mutex_pool") continue;
        auto w = c.make();
        lab::progress_counters progress(2);
        std::atomic<bool> stop{false};
        for (int rep = 0; rep < 2; ++rep) {  // the second on a pool that ran the first
            w->reset();
            const std::uint64_t done = w->run(0, 100, stop, progress);  // 200 items asked at 2 threads
            EXPECT_EQ(w->run(1, 100, stop, progress), 0u) << "harness worker 1 is not a producer";
            const auto& mode = c.params.at(1).second;
            if (mode == "sustained") {
                EXPECT_GE(done, 200u) << c.id();
            } else {
                const std::uint64_t burst = 2 * std::stoull(mode.substr(mode.find(':') + 1));
                EXPECT_EQ(done, (200 + burst - 1) / burst * burst) << c.id();
            }
            EXPECT_TRUE(w->check({done, 0}).ok()) << c.id() << ": " << w->check({done, 0}).detail;
            EXPECT_EQ(w->check({done + 1, 0}).status, "wrong_count") << c.id();
        }
    }
}

namespace {
// A one-thread pool that, once armed, loses the next item posted or queues it twice: the
// suite's checks must catch it, and the producer's waits must end when the harness says
// stop. Armed after the first run() (which builds the pool and warms it up).
class faulty_pool {
public:
    enum class fault { none, lose, twice };
    static inline std::atomic<fault> armed{fault::none};
    explicit faulty_pool(int) : worker_([this] { work(); }) {}
    ~faulty_pool() {
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        worker_.join();
    }
    template <class F>
    void post(F&& f, lab::pool_bench::queue_kind, bool) {
        const fault now = armed.exchange(fault::none);
        if (now == fault::lose) return;
        {
            std::lock_guard lk(m_);
            queue_.emplace_back(f);
            if (now == fault::twice) queue_.emplace_back(f);
        }
        cv_.notify_one();
    }

private:
    void work() {
        std::unique_lock lk(m_);
        for (;;) {
            cv_.wait(lk, [this] { return !queue_.empty() || stopping_; });
            if (queue_.empty()) return;
            auto item = std::move(queue_.front());
            queue_.pop_front();
            lk.unlock();
            item();
            lk.lock();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::thread worker_;
};

using faulty_workload = lab::pool_bench::pool_throughput<faulty_pool>;

// One repetition of `w` with a stop flag the harness would raise at `deadline`; how long
// the producer took to come back.
double timed_repetition(lab::workload& w, std::uint64_t ops, std::chrono::milliseconds deadline, std::uint64_t& done) {
    lab::progress_counters progress(1);
    std::atomic<bool> stop{false};
    std::mutex m;
    std::condition_variable cv;
    bool returned = false;
    w.reset();
    const auto t0 = std::chrono::steady_clock::now();
    std::thread deadline_keeper([&] {
        std::unique_lock lk(m);
        if (!cv.wait_for(lk, deadline, [&] { return returned; })) stop.store(true);
    });
    done = w.run(0, ops, stop, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
        std::lock_guard lk(m);
        returned = true;
    }
    cv.notify_all();
    deadline_keeper.join();
    return seconds;
}
}  // namespace

TEST(PoolSuite, ALostItemEndsTheRepetitionAtTheDeadlineAndFailsTheCheck) {
    for (const std::uint32_t burst : {0u, 4u}) {
        faulty_workload w(lab::pool_bench::queue_kind::global, burst);
        std::uint64_t done = 0;
        timed_repetition(w, 100, std::chrono::seconds(20), done);  // builds and warms up the pool
        ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
        faulty_pool::armed = faulty_pool::fault::lose;
        const double seconds = timed_repetition(w, 100, std::chrono::milliseconds(200), done);
        EXPECT_GE(seconds, 0.15) << "burst " << burst << ": the producer waited for the lost item";
        EXPECT_LT(seconds, 10) << "burst " << burst;
        const auto verdict = w.check({done});
        EXPECT_FALSE(verdict.ok()) << "burst " << burst << ": a lost item must fail the check";
    }
}

TEST(PoolSuite, AnItemRunTwiceFailsTheCountAtOnce) {
    faulty_workload w(lab::pool_bench::queue_kind::global, 0);
    std::uint64_t done = 0;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_pool::armed = faulty_pool::fault::twice;
    const double seconds = timed_repetition(w, 100, std::chrono::seconds(20), done);
    EXPECT_LT(seconds, 10) << "more items ran than were posted: no need to wait for the deadline";
    // items_lost, or wrong_count when the copy was still running as the producer returned.
    EXPECT_FALSE(w.check({done}).ok()) << "an item that ran twice must fail the check";
}

// --- the pipe suite ---------------------------------------------------------------------------

TEST(PipeSuite, ListsEveryTransportAtEveryChunkUnderTheDesignRowNames) {
    const auto* s = lab::find_suite("pipe");
    ASSERT_NE(s, nullptr);
    std::vector<std::string> transports = {"contend",    "contend_std_mutex", "mutex_ring",
                                           "socketpair", "spsc_ideal",        "memcpy"};
    if (peer_built_in("rwq")) transports.push_back("readerwriterqueue");
    std::set<std::string> rows;
    for (const auto& c : s->contenders) {
        EXPECT_NE(std::find(transports.begin(), transports.end(), c.name), transports.end()) << c.name;
        EXPECT_FALSE(c.is_lock) << c.id();
        EXPECT_EQ(c.operation, "chunk") << c.id();
        lab::cell_result cell;
        cell.suite = "pipe";
        cell.contender = c.name;
        cell.params = c.params;
        cell.workers = 2;
        rows.insert(cell.name());
    }
    for (const auto& t : transports)
        for (const char* chunk : {"64", "4096", "65536"}) {
            const std::string row = "pipe/" + t + "/chunk:" + chunk + "/workers:2";
            EXPECT_EQ(rows.count(row), 1u) << row;
        }
    EXPECT_EQ(rows.count("pipe/contend/chunk:4096/busy_loops:1/busy_nice:19/workers:2"), 1u) << "beside a busy loop";
    EXPECT_EQ(s->contenders.size(), transports.size() * 3 + 1);
    EXPECT_EQ(s->default_workers, std::vector<std::int32_t>{2}) << "one writer and one reader";
}

TEST(PipeSuite, EveryContenderDeliversItsBytesWithTheirChecksumAndReportsBytesPerSecond) {
    const auto* s = lab::find_suite("pipe");
    ASSERT_NE(s, nullptr);
    for (const auto& c : s->contenders) {
        const auto cell = lab::run_cell(c, "pipe", 2, quick_pool_options());
        ASSERT_TRUE(cell.valid()) << c.id() << ": " << cell.status << ": " << cell.detail;
        EXPECT_GT(cell.metric("bytes_per_second"), 0) << c.id();
        EXPECT_GT(cell.cpu_ns_per_op, 0) << c.id();
        const bool is_pipe = c.name == "contend" || c.name == "contend_std_mutex";
        EXPECT_EQ(std::isnan(cell.metric("contentions_per_second")), !is_pipe) << c.id();
    }
}

TEST(PipeSuite, TheChecksumDependsOnTheBytesInOrderNotOnHowTheyArrive) {
    std::vector<std::byte> bytes(1000);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + i / 256);
    lab::pipe_bench::stream_sum whole, pieces;
    whole.update(bytes);
    for (std::size_t at = 0, step = 1; at < bytes.size(); at += step, step = step % 13 + 2)
        pieces.update(std::span(bytes).subspan(at, std::min(step, bytes.size() - at)));
    EXPECT_EQ(pieces.bytes(), 1000u);
    EXPECT_EQ(pieces.a(), whole.a());
    EXPECT_EQ(pieces.b(), whole.b());
    auto flipped = bytes;
    flipped[517] ^= std::byte{0x10};
    lab::pipe_bench::stream_sum one_wrong;
    one_wrong.update(flipped);
    EXPECT_NE(one_wrong.a(), whole.a());
    auto swapped = bytes;
    std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 64);  // two words trade places
    lab::pipe_bench::stream_sum reordered;
    reordered.update(swapped);
    EXPECT_EQ(reordered.a(), whole.a());
    EXPECT_NE(reordered.b(), whole.b());
    // What check() expects of a stream of 2.5 patterns, computed in whole periods, is what a
    // reader sums byte by byte.
    const lab::pipe_bench::pattern_source source;
    const std::uint64_t total = 5 * lab::pipe_bench::pattern_bytes / 2;
    lab::pipe_bench::stream_sum read;
    for (std::uint64_t at = 0; at < total; at += 4096) read.update({source.at(at), 4096});
    const auto expected = source.expected(total);
    EXPECT_EQ(expected.bytes(), total);
    EXPECT_EQ(expected.a(), read.a());
    EXPECT_EQ(expected.b(), read.b());
}

namespace {
// A transport that hands whole chunks over a locked deque and, once armed, corrupts one byte
// of the next chunk or loses it: the suite's check must catch both, and a writer that waits
// for lost bytes must come back when the harness says stop.
class faulty_stream {
public:
    enum class fault { none, corrupt, lose };
    static inline std::atomic<fault> armed{fault::none};
    explicit faulty_stream(std::size_t) {}
    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>&) {
        std::vector<std::byte> copy(chunk.begin(), chunk.end());
        const fault now = armed.exchange(fault::none);
        if (now == fault::lose) return chunk.size();
        if (now == fault::corrupt) copy[copy.size() / 2] ^= std::byte{1};
        {
            std::lock_guard lk(m_);
            queue_.push_back(std::move(copy));
        }
        cv_.notify_one();
        return chunk.size();
    }
    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        std::unique_lock lk(m_);
        for (;;) {
            if (queue_.empty()) {
                if (closed_ || quit.load()) return;
                cv_.wait_for(lk, std::chrono::milliseconds(10));
                continue;
            }
            const std::vector<std::byte> chunk = std::move(queue_.front());
            queue_.pop_front();
            lk.unlock();
            sink(std::span<const std::byte>(chunk));
            lk.lock();
        }
    }
    void close() {
        {
            std::lock_guard lk(m_);
            closed_ = true;
        }
        cv_.notify_all();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::vector<std::byte>> queue_;
    bool closed_ = false;
};
using faulty_stream_workload = lab::pipe_bench::stream_throughput<faulty_stream>;
}  // namespace

TEST(PipeSuite, ACorruptedByteFailsTheChecksum) {
    faulty_stream_workload w(64);
    std::uint64_t done = 0;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    ASSERT_EQ(done, 100u);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_stream::armed = faulty_stream::fault::corrupt;
    timed_repetition(w, 100, std::chrono::seconds(20), done);
    EXPECT_EQ(done, 100u);
    EXPECT_EQ(w.check({done}).status, "checksum_mismatch");
}

TEST(PipeSuite, ALostChunkEndsTheRepetitionAtTheDeadlineAndFailsTheCheck) {
    faulty_stream_workload w(4096);
    std::uint64_t done = 0;
    timed_repetition(w, 10, std::chrono::seconds(20), done);
    ASSERT_TRUE(w.check({done}).ok()) << w.check({done}).detail;
    faulty_stream::armed = faulty_stream::fault::lose;
    const double seconds = timed_repetition(w, 10, std::chrono::milliseconds(200), done);
    EXPECT_GE(seconds, 0.15) << "the writer waited for the lost chunk";
    EXPECT_LT(seconds, 10);
    EXPECT_EQ(w.check({done}).status, "bytes_lost");
}
