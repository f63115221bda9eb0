#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/internal/deadline.hpp"
#include "contend/internal/prefetch.hpp"
#include "contend/internal/thread_id.hpp"
#include "contend/internal/tsan.hpp"
#if defined(CONTEND_HELGRIND_EDGES)
#include <valgrind/valgrind.h>
#endif
#include "contend/mutex.hpp"
#include "contend/wait_backend.hpp"
#include "platform/first_use.hpp"
#include "platform/handoff_sleep.hpp"
#include "platform/heavy_fence.hpp"
#include "platform/spin_wait.hpp"
#include "platform/wait.hpp"
#include "test_support.hpp"

using namespace contend_test;
namespace ci = contend::internal;

namespace {
// Reaps `child` within `budget`; one still running then is killed and reaped. True if it ended
// by itself; `status` as waitpid gives it.
bool reap_within(pid_t child, int& status, std::chrono::milliseconds budget) {
    const auto until = std::chrono::steady_clock::now() + budget;
    pid_t done = 0;
    while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (done == child) return true;
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    return false;
}
}  // namespace

extern char** environ;

// "futex" or "portable": the backend of the library this program is linked with
// (tests/expected_wait_backend.cpp, compiled per program).
extern const char* const contend_test_expected_wait_backend;

#if defined(CONTEND_HELGRIND_EDGES)
// The slow paths tell helgrind their edges only under helgrind. The probe's answer outside
// valgrind comes back as an int in a 64-bit register; compared as a long it once read
// 4294967294, not -2, and every process took the helgrind paths.
TEST(Platform, AProcessOutsideValgrindIsNotTakenForHelgrinds) {
    ASSERT_EQ(RUNNING_ON_VALGRIND, 0u) << "this test runs outside valgrind";
    EXPECT_FALSE(contend::internal::helgrind_running);
}
#endif

// Values built on first use (platform/first_use.hpp): threads that race to the first use may
// each build one, but every caller, then and later, gets the one published first, and an
// object that lost the race is freed, not leaked into use.
TEST(Platform, AFirstUseValueAndObjectAreOneForEveryCallerHoweverManyRaceToBuildThem) {
    watchdog dog(60s);
    static contend::internal::first_use_value<int> value;
    static std::atomic<int> built{0}, alive{0};
    struct counted {
        counted() {
            built.fetch_add(1);
            alive.fetch_add(1);
        }
        ~counted() { alive.fetch_sub(1); }
    };
    static contend::internal::first_use_object<counted> object;
    constexpr int threads = 8;
    std::atomic<int> ready{0};
    std::vector<int> values(threads);
    std::vector<const counted*> objects(threads);
    std::vector<std::thread> t;
    for (int i = 0; i < threads; ++i)
        t.emplace_back([&, i] {
            ready.fetch_add(1);
            while (ready.load() < threads) std::this_thread::yield();
            values[i] = value.get([i] { return 100 + i; });
            objects[i] = &object.get();
        });
    for (auto& th : t) th.join();
    for (int i = 0; i < threads; ++i) {
        EXPECT_EQ(values[i], values[0]);
        EXPECT_EQ(objects[i], objects[0]);
    }
    EXPECT_GE(values[0], 100);
    EXPECT_LT(values[0], 100 + threads);
    EXPECT_EQ(value.get([] { return 1; }), values[0]) << "a later caller built its own";
    EXPECT_EQ(&object.get(), objects[0]);
    EXPECT_GE(built.load(), 1);
    EXPECT_EQ(alive.load(), 1) << "an object that lost the race was not freed";
}

TEST(Platform, CachePaddedOccupiesWholeLines) {
    static_assert(alignof(contend::cache_padded<char>) == contend::cache_line_size);
    static_assert(sizeof(contend::cache_padded<char>) == contend::cache_line_size);
    contend::cache_padded<int> pair[2];
    const auto a = reinterpret_cast<std::uintptr_t>(&pair[0].value);
    const auto b = reinterpret_cast<std::uintptr_t>(&pair[1].value);
    EXPECT_GE(b - a, contend::cache_line_size);
    const contend::cache_padded<int> seven(std::in_place, 7);
    EXPECT_EQ(*seven, 7);
    contend::cpu_relax();  // must compile and return on every architecture
}

TEST(Platform, CompactThreadIdsAreSmallUniqueAndStable) {
    const std::uint32_t mine = ci::compact_thread_id();
    EXPECT_GE(mine, 1u);
    EXPECT_EQ(mine, ci::compact_thread_id());
    constexpr int n = 32;
    std::vector<std::uint32_t> ids(n);
    std::atomic<int> arrived{0};
    std::atomic<bool> release{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            ids[static_cast<std::size_t>(i)] = ci::compact_thread_id();
            arrived.fetch_add(1);
            while (!release.load()) std::this_thread::yield();  // all alive at once
        });
    }
    ASSERT_TRUE(eventually([&] { return arrived.load() == n; }));
    release.store(true);
    for (auto& t : threads) t.join();
    std::set<std::uint32_t> unique(ids.begin(), ids.end());
    unique.insert(mine);
    EXPECT_EQ(unique.size(), static_cast<std::size_t>(n + 1)) << "live threads shared an id";
    for (auto id : ids) EXPECT_LE(id, ci::max_compact_thread_id);
}

TEST(Platform, CompactThreadIdsAreReusedAfterThreadsExit) {
    (void)ci::compact_thread_id();
    const std::uint32_t live_before = ci::live_compact_thread_ids();
    std::uint32_t high_water = 0;
    for (int round = 0; round < 200; ++round) {
        std::uint32_t id = 0;
        std::thread([&] { id = ci::compact_thread_id(); }).join();
        high_water = std::max(high_water, id);
    }
    // 200 threads one after another must not walk up through 200 fresh ids.
    EXPECT_LE(high_water, live_before + 64);
    EXPECT_EQ(ci::live_compact_thread_ids(), live_before);
}

// The mutex's fast path issues PREFETCHW only where the CPU reports it: the library's
// detection must agree with the kernel's view of the same CPUID bit.
TEST(Platform, PrefetchForWriteIsEnabledExactlyWhereTheCpuReportsIt) {
#if defined(__x86_64__) && defined(__linux__)
    std::ifstream cpuinfo("/proc/cpuinfo");
    ASSERT_TRUE(cpuinfo) << "cannot read /proc/cpuinfo";
    std::string line;
    bool found_flags = false, reported = false;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        found_flags = true;
        std::istringstream words(line.substr(line.find(':') + 1));
        for (std::string w; words >> w;) reported = reported || w == "3dnowprefetch";
        break;
    }
    ASSERT_TRUE(found_flags);
    EXPECT_EQ(ci::prefetchw_supported, reported);
#else
    EXPECT_FALSE(ci::prefetchw_supported);
#endif
    char byte = 0;
    ci::prefetch_for_write(&byte);  // a hint: must neither fault nor change the byte
    EXPECT_EQ(byte, 0);
}

TEST(WaitBackend, ReturnsAtOnceWhenTheWordDiffers) {
    std::atomic<std::uint32_t> word{1};
    const auto start = steady::now();
    ci::wait_on_address(word, 0, steady::now() + 10s);
    EXPECT_LT(steady::now() - start, 5s);
}

TEST(WaitBackend, TimesOutNoEarlierThanTheDeadline) {
    std::atomic<std::uint32_t> word{0};
    const auto deadline = steady::now() + 20ms;
    while (ci::wait_on_address(word, 0, deadline) != ci::wait_status::timed_out) {
        ASSERT_LT(steady::now(), deadline + 10s) << "never timed out";
    }
    const auto now = steady::now();
    EXPECT_GE(now, deadline);
    EXPECT_LT(now, deadline + 5s);
}

TEST(WaitBackend, WakeReleasesAWaiter) {
    watchdog dog(60s);
    std::atomic<std::uint32_t> word{0};
    std::atomic<bool> woke{false};
    tid_box tid;
    std::thread waiter([&] {
        tid.publish();
        while (word.load() == 0) ci::wait_on_address(word, 0, steady::now() + 30s);
        woke.store(true);
    });
    // Asleep in the backend: only the wake below (or the 30 s deadline) ends that.
    EXPECT_TRUE(eventually([&] { return thread_blocked(tid.get()); }));
    EXPECT_FALSE(woke.load());
    word.store(1);
    ci::wake_all(word);
    waiter.join();
    EXPECT_TRUE(woke.load());
    std::printf("wait backend: %s\n", contend::wait_backend_name());
}

// A thread still waiting when the process exits (a sweeper, a worker of a pool never
// destroyed) must not hold the exit up: the portable backend once destroyed its condition
// variables at exit, and glibc's destroy waits for their waiters, for good. The exiting
// process is this program run again with CONTEND_TEST_EXIT_WHILE_WAITING set, this test
// alone (a fresh process: ThreadSanitizer refuses threads started after a fork).
TEST(WaitBackend, AThreadStillWaitingDoesNotHoldUpTheProcessExit) {
    if (std::getenv("CONTEND_TEST_EXIT_WHILE_WAITING") != nullptr) {
        static std::atomic<std::uint32_t> word{0};
        static tid_box tid;
        std::thread([] {
            tid.publish();
            for (;;) ci::wait_on_address(word, 0, ci::no_deadline);
        }).detach();
        // Asleep in the backend when the process exits; a status of 3 says it never was.
        const bool asleep = eventually([] { return thread_blocked(tid.get()); });
        std::exit(asleep ? 0 : 3);  // runs the static destructors
    }
    watchdog dog(60s);
    std::string exe = "/proc/self/exe";
    std::string filter = "--gtest_filter=WaitBackend.AThreadStillWaitingDoesNotHoldUpTheProcessExit";
    char* argv[] = {exe.data(), filter.data(), nullptr};
    std::vector<std::string> env_text{"CONTEND_TEST_EXIT_WHILE_WAITING=1"};
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    std::vector<char*> env;
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    posix_spawn_file_actions_t quiet;  // the child's gtest chatter is not this test's output
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t child = -1;
    const int rc = posix_spawn(&child, exe.c_str(), &quiet, nullptr, argv, env.data());
    posix_spawn_file_actions_destroy(&quiet);
    ASSERT_EQ(rc, 0);
    int status = -1;
    EXPECT_TRUE(reap_within(child, status, 30s))
        << "the process did not exit in 30 s: its exit waited for the waiting thread";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << status << " (exit status 3: the thread never blocked)";
}

TEST(WaitBackend, NameIsFutexOrPortable) {
    const char* name = contend::wait_backend_name();
    ASSERT_NE(name, nullptr);
    EXPECT_TRUE(std::strcmp(name, "futex") == 0 || std::strcmp(name, "portable") == 0) << name;
}

// The test objects are linked twice, with contend and with contend_portable
// (tests/CMakeLists.txt): each program must run on the backend it is named for, or the
// portable/ tests would test the futex build a second time.
TEST(WaitBackend, IsTheOneThisTestProgramWasLinkedFor) {
    EXPECT_STREQ(contend::wait_backend_name(), contend_test_expected_wait_backend);
}

namespace contend_test {

// The pause's cost is measured, not assumed: a figure a count can be derived from.
TEST(SpinWait, MeasuresAPlausiblePauseAndYieldInterval) {
    const double ns = contend::internal::relax_ns();
    EXPECT_GE(ns, 1.0);
    EXPECT_LE(ns, 1000.0);
    EXPECT_EQ(ns, contend::internal::relax_ns()) << "measured once per process";
    EXPECT_GE(contend::internal::yield_interval(), std::chrono::microseconds(1));
    EXPECT_LE(contend::internal::yield_interval(), std::chrono::microseconds(50));
    EXPECT_GE(contend::internal::relaxes_for(std::chrono::nanoseconds(0)), 1u);
    EXPECT_LE(contend::internal::relaxes_for(std::chrono::microseconds(1)),
              contend::internal::relaxes_for(std::chrono::microseconds(100)));
    EXPECT_EQ(contend::internal::relaxes_for(std::chrono::hours(1'000'000)), 1'000'000'000u) << "saturates";
}

// Deadlines from other clocks: a far past is now, a far future (any Duration, however
// coarse) is no deadline, a near one is exact to the nanosecond (never early by a rounding),
// and a NaN duration is now. Each of these overflowed or reached a cast with NaN before.
TEST(Deadline, ConversionsSaturateInsteadOfOverflowingAndNearOnesAreExact) {
    using contend::internal::deadline_after;
    using contend::internal::no_deadline;
    using contend::internal::to_deadline;
    using sys = std::chrono::system_clock;
    const auto far_past = to_deadline(sys::time_point::min());
    const auto coarse_far_past = to_deadline(std::chrono::time_point<sys, std::chrono::seconds>::min());
    const auto nan = deadline_after(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()));
    const auto after_them = steady::now();
    EXPECT_LE(far_past, after_them);
    EXPECT_LE(coarse_far_past, after_them);
    EXPECT_LE(nan, after_them);
    // sys::time_point::max() is about 237 years away: far, representable on the steady clock.
    EXPECT_GT(to_deadline(sys::time_point::max()), steady::now() + std::chrono::hours(24 * 365 * 200));
    EXPECT_EQ(to_deadline(std::chrono::time_point<sys, std::chrono::seconds>::max()), no_deadline);
    EXPECT_EQ(deadline_after(std::chrono::duration<double>(std::numeric_limits<double>::infinity())), no_deadline);
    // Near: the steady deadline is sys_t - sys_now after steady_now, to the nanosecond; the
    // three clock reads bracket it.
    const auto steady_before = steady::now();
    const auto sys_t = sys::now() + std::chrono::milliseconds(10);
    const auto d = to_deadline(sys_t);
    const auto steady_after = steady::now();
    EXPECT_GE(d, steady_before + std::chrono::nanoseconds(1)) << "in the past";
    EXPECT_LE(d - steady_after, std::chrono::milliseconds(10)) << "later than asked";
    EXPECT_GE(d - steady_before, std::chrono::milliseconds(10) - (steady_after - steady_before))
        << "earlier than asked";
}

// A poll ends by itself once its budget is spent, however long each pause really takes.
TEST(SpinWait, EndsOnceItsBudgetIsSpent) {
    watchdog dog(60s);
    const auto start = steady::now();
    contend::internal::spin_wait poll(std::chrono::microseconds(200));
    long pauses = 0;
    while (poll.pause()) ASSERT_LT(++pauses, 100'000'000L);
    EXPECT_GE(steady::now() - start, std::chrono::microseconds(200));
}

// A poll longer than the yield interval yields the CPU as it goes: a partner that shares the
// CPU gets to run (the poller gives its CPU up instead of burning its budget). The budget is
// far longer than two intervals, so a poll descheduled for a while still gets to yield twice.
TEST(SpinWait, YieldsTheCpuAsItPolls) {
    watchdog dog(60s);
    contend::internal::spin_wait poll(std::chrono::seconds(10));
    while (poll.yields() < 2 && poll.pause()) {
    }
    EXPECT_GE(poll.yields(), 2u);
}

// A poll for a partner last seen on another CPU never yields: a yield could not run that
// partner, and it would hand this CPU to whatever else is runnable here. It still ends by
// itself once its budget is spent. The same budget without that knowledge yields, so the
// count would show a yield (YieldsTheCpuAsItPolls).
namespace {
void polls_for_a_partner_elsewhere_and_here() {
    using awaits = contend::internal::spin_wait::awaits;
    const auto start = steady::now();
    contend::internal::spin_wait elsewhere(std::chrono::milliseconds(2), contend::internal::spin_wait::default_step,
                                           awaits::partner_elsewhere);
    long pauses = 0;
    while (elsewhere.pause()) ASSERT_LT(++pauses, 100'000'000L);
    EXPECT_GE(steady::now() - start, std::chrono::milliseconds(2));
    EXPECT_EQ(elsewhere.yields(), 0u);
    contend::internal::spin_wait here(std::chrono::milliseconds(2), contend::internal::spin_wait::default_step,
                                      awaits::partner);
    while (here.pause()) {
    }
    EXPECT_GE(here.yields(), 1u) << "the control poll, for a partner that may share this CPU, must yield";
}
}  // namespace

TEST(SpinWait, APollForAPartnerOnAnotherCpuNeverYieldsAndStillEnds) {
    watchdog dog(60s);
    std::thread fresh([] {  // this thread's marks (a shared CPU, a stranger) start clear
        polls_for_a_partner_elsewhere_and_here();
    });
    fresh.join();
}

// The spacing between yields grows while yields find nothing else to run, by doublings up to
// 8 yield intervals, and starts from one interval again once a poll of the thread ran out:
// a partner kept off this CPU makes a poll run out, and the next one yields at once. The
// interval is read just before each poll begins: a faster yield timed since lowers it.
TEST(SpinWait, YieldSpacingIsBoundedAndResetsWhenAPollRunsOut) {
    watchdog dog(60s);
    {
        const auto interval = contend::internal::yield_interval();
        contend::internal::spin_wait poll(std::chrono::seconds(10));
        while (poll.yields() < 12 && poll.pause()) {
            ASSERT_GE(poll.spacing(), interval);
            ASSERT_LE(poll.spacing(), interval * 8);
        }
        EXPECT_GE(poll.yields(), 12u);
    }
    contend::internal::spin_wait short_poll(std::chrono::microseconds(5));
    while (short_poll.pause()) {
    }
    const auto interval = contend::internal::yield_interval();
    const contend::internal::spin_wait next(std::chrono::seconds(1));
    EXPECT_EQ(next.spacing(), interval) << "a poll that ran out must put the spacing back to one interval";
}

// Two threads on one CPU: the one that polls lets the one it waits for run, so the poll
// succeeds (sees the partner's store) long before its budget is spent, instead of the
// partner waiting for the poller's time slice to end.
TEST(SpinWait, APartnerOnTheSameCpuRunsWhileThePollGoesOn) {
    watchdog dog(60s);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    std::atomic<bool> polling{false};
    std::atomic<bool> done{false};
    bool seen = false;
    std::uint32_t yields = 0;
    std::thread poller([&] {
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        contend::internal::spin_wait poll(std::chrono::seconds(5));
        polling = true;
        while (!(seen = done.load()) && poll.pause()) {
        }
        yields = poll.yields();
    });
    std::thread partner([&] {
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        const auto give_up = steady::now() + 10s;
        while (!polling.load() && steady::now() < give_up) std::this_thread::yield();
        done = true;
    });
    partner.join();
    poller.join();
    EXPECT_TRUE(seen) << "the poll spent its whole budget although its partner only had to store a flag";
    EXPECT_GE(yields, 1u) << "the partner shared the poller's CPU, so the poll must have yielded to it";
}

// The cost of a quiet yield is calibrated at the first poll of a process. A program whose
// threads keep the CPU busy from the start makes every calibrating yield switch, and the
// figure comes out inflated; the first later yield that comes back at once must correct it,
// or no yield ever looks like a switch again and polls hold a shared CPU (a 4-thread ring on
// 2 CPUs ran at 11 us a turn in every such process, against 2 to 4). In a fresh process (a
// threadsafe death test re-runs the binary), calibrated beside a busy thread on the same CPU;
// then, the busy thread gone, the threshold must come down to what the yields the test times
// itself allow, whatever the load.

// Pins the calling thread to the CPU it runs on and starts a partner there running `step` in
// a loop (20 s at most) until stop() or destruction. For the death tests' children: a pin the
// kernel refuses ends the child with status 2.
class partner_on_this_cpu {
public:
    explicit partner_on_this_cpu(void (*step)()) {
        CPU_ZERO(&one_);
        CPU_SET(sched_getcpu(), &one_);
        if (pthread_setaffinity_np(pthread_self(), sizeof one_, &one_) != 0) std::_Exit(2);
        thread_ = std::thread([this, step] {
            pthread_setaffinity_np(pthread_self(), sizeof one_, &one_);
            running_ = true;
            const auto give_up = steady::now() + 20s;
            while (!done_.load() && steady::now() < give_up) step();
        });
        while (!running_.load()) std::this_thread::yield();
    }
    void stop() {
        done_ = true;
        if (thread_.joinable()) thread_.join();
    }
    ~partner_on_this_cpu() { stop(); }
    partner_on_this_cpu(const partner_on_this_cpu&) = delete;
    partner_on_this_cpu& operator=(const partner_on_this_cpu&) = delete;

private:
    cpu_set_t one_;
    std::atomic<bool> running_{false}, done_{false};
    std::thread thread_;
};

// The death test's child: calibrates beside a busy thread, then checks the threshold.
[[noreturn]] void calibrate_beside_a_busy_thread_then_check() {
    partner_on_this_cpu busy([] {});
    const auto calibrated = contend::internal::gave_cpu_away_after();  // the first use
    busy.stop();
    double fastest = 1e18;
    for (int i = 0; i < 200; ++i) {
        const auto t0 = steady::now();
        (void)contend::internal::yield_gave_cpu_away();
        fastest = std::min(fastest, std::chrono::duration<double, std::nano>(steady::now() - t0).count());
    }
    const double after = static_cast<double>(contend::internal::gave_cpu_away_after().count());
    std::fprintf(stderr, "calibrated %lld ns, fastest yield timed %.0f ns, threshold after %.0f ns\n",
                 static_cast<long long>(calibrated.count()), fastest, after);
    std::_Exit(after <= std::max(2 * fastest, 200.0) + 1 ? 0 : 1);
}

TEST(SpinWaitDeathTest, AYieldCostCalibratedOnABusyCpuIsCorrectedByALaterQuietYield) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(calibrate_beside_a_busy_thread_then_check(), testing::ExitedWithCode(0), "");
}

// The same start, with a partner that runs only briefly each time (it yields too, as the
// threads of a ring or a buffer do): every calibrating yield switches, but each switch is
// short, so a cost calibrated by timing alone looks like a quiet yield, and no later yield
// took long enough to be judged a switch: the polls of a 64-thread ring on 2 CPUs held the
// CPU, stopped paying, and the ring ran at 11 to 13 us a turn instead of 2.5 to 3 (Intel Xeon
// VM). Here the kernel's count of this thread's context switches says which of the test's
// yields switched, and the judge must call at least 4 in 5 of those a CPU given away.
[[noreturn]] void calibrate_beside_a_yielding_thread_then_judge() {
    partner_on_this_cpu partner([] { sched_yield(); });
    (void)contend::internal::gave_cpu_away_after();  // the first use: calibrates
    int switched = 0, judged_switched = 0;
    for (int i = 0; i < 200 && switched < 50; ++i) {
        const auto before = this_thread_switches();
        const bool judged = contend::internal::yield_gave_cpu_away();
        if (this_thread_switches() != before) {
            ++switched;
            judged_switched += judged ? 1 : 0;
        }
    }
    partner.stop();
    std::fprintf(stderr, "threshold %lld ns; of %d yields that switched, %d judged so\n",
                 static_cast<long long>(contend::internal::gave_cpu_away_after().count()), switched, judged_switched);
    if (switched < 10) std::_Exit(3);  // the partner hardly ran: nothing to judge
    std::_Exit(5 * judged_switched >= 4 * switched ? 0 : 1);
}

TEST(SpinWaitDeathTest, AYieldThatSwitchesIsJudgedSoWhenEveryCalibratingYieldSwitchedBriefly) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(calibrate_beside_a_yielding_thread_then_judge(), testing::ExitedWithCode(0), "");
}

// A yield on a CPU shared with a thread that is not the partner (a busy co-tenant at normal
// priority) gives that thread a scheduler slice, and each further yield another: a pipe's
// writer and reader on one CPU beside a busy loop moved 0.05 GB/s, yielding. Once a yield has
// taken a stranger's slice (spin_wait.hpp, stranger_yield), this thread's next poll on the
// shared CPU ends at once, without a yield, so that its caller sleeps. A trial counts when
// the mark still held after that poll's first pause (on a loaded machine the test thread can
// be kept off the CPU past the mark's end).
[[noreturn]] void poll_beside_a_busy_stranger_then_poll_again() {
    partner_on_this_cpu stranger([] {});  // never the partner: it makes nothing ready
    (void)contend::internal::gave_cpu_away_after();  // calibrates
    for (int trial = 0; trial < 20; ++trial) {
        bool marked = false;
        for (const auto give_up = steady::now() + 2s; !marked && steady::now() < give_up;) {
            contend::internal::spin_wait poll(std::chrono::microseconds(40), contend::internal::spin_wait::default_step,
                                              contend::internal::spin_wait::awaits::partner);
            while (poll.pause()) {
            }
            marked = contend::internal::this_thread_yields_to_a_stranger(contend::internal::clock::now());
        }
        if (!marked) continue;
        contend::internal::spin_wait again(std::chrono::microseconds(40));
        const bool went_on = again.pause();
        if (!contend::internal::this_thread_yields_to_a_stranger(contend::internal::clock::now())) continue;
        std::fprintf(stderr, "trial %d: the poll after the stranger's slice went on %d, yielded %u times\n", trial,
                     went_on, again.yields());
        stranger.stop();
        std::_Exit(!went_on && again.yields() == 0 ? 0 : 1);
    }
    stranger.stop();
    std::_Exit(3);  // no yield ever took the stranger's slice
}

TEST(SpinWaitDeathTest, APollAfterAYieldThatGaveAStrangerItsSliceEndsWithoutYielding) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(poll_beside_a_busy_stranger_then_poll_again(), testing::ExitedWithCode(0), "");
}

// The stranger mark belongs to the CPU whose yield set it: the co-tenant shares that CPU, not
// the thread. A thread the kernel has since moved to another CPU is no longer marked, and
// stays unmarked when it comes back (the lab's pipe row beside a nice-0 loop had repetitions
// whose waits slept at every hand-off, the pair together on the other CPU, until the mark ran
// out). The mark here is set as a 10 s yield would set it, so that no preemption of the test
// thread outlasts it; a thread that stays is still marked.
TEST(SpinWait, AStrangerMarkEndsWhenTheThreadRunsOnAnotherCpu) {
    watchdog dog(60s);
    const auto cpus = two_allowed_cpus();
    if (cpus[1] < 0) GTEST_SKIP() << "needs two CPUs, this process may use one";
    std::thread fresh([&] {  // this thread's marks start clear
        using contend::internal::clock;
        ASSERT_TRUE(pin_this_thread_to(cpus[0]));
        const auto now = clock::now();
        contend::internal::note_yield_to_a_stranger(now - 20s, now - 10s);
        contend::internal::note_yield_to_a_stranger(now - 10s, now);
        EXPECT_TRUE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "stayed on its CPU";
        ASSERT_TRUE(pin_this_thread_to(cpus[1]));
        EXPECT_FALSE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "moved to another CPU";
        ASSERT_TRUE(pin_this_thread_to(cpus[0]));
        EXPECT_FALSE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "came back";
    });
    fresh.join();
}

// One slice-long yield alone does not mark the thread; the second on the same CPU, within the
// time the first would have marked it for, does. A kernel thread that takes a CPU for a few
// milliseconds about twice a second (kdamond.0 on the Intel Xeon VM) made a pipe pinned to a
// CPU of its own sleep at every hand-off for twice as long each time. Yields of 10 s, set
// by hand, so that no preemption of the test thread outlasts a mark.
TEST(SpinWait, OneSliceLongYieldAloneLeavesTheThreadUnmarkedASecondOnItsHeelsMarksIt) {
    watchdog dog(60s);
    const auto cpus = two_allowed_cpus();
    std::thread fresh([&] {  // this thread's marks start clear
        using contend::internal::clock;
        if (cpus[0] >= 0) {
            ASSERT_TRUE(pin_this_thread_to(cpus[0]));
        }
        const auto now = clock::now();
        // Two, the second starting 10 s after the first would have run out: still unmarked.
        contend::internal::note_yield_to_a_stranger(now - 60s, now - 50s);
        contend::internal::note_yield_to_a_stranger(now - 10s, now);
        EXPECT_FALSE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "two far apart";
        // A third on the heels of the second: marked.
        contend::internal::note_yield_to_a_stranger(now - 10s, now);
        EXPECT_TRUE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "two in a row";
    });
    fresh.join();
    if (cpus[1] < 0) return;  // the rest needs a second CPU
    std::thread moved([&] {
        using contend::internal::clock;
        ASSERT_TRUE(pin_this_thread_to(cpus[0]));
        const auto now = clock::now();
        contend::internal::note_yield_to_a_stranger(now - 20s, now - 10s);
        ASSERT_TRUE(pin_this_thread_to(cpus[1]));
        contend::internal::note_yield_to_a_stranger(now - 10s, now);
        EXPECT_FALSE(contend::internal::this_thread_yields_to_a_stranger(clock::now())) << "one on each CPU";
    });
    moved.join();
}

// Only a poll for one partner takes a slice-long yield for a stranger's: a waiter among many
// threads of its own program yields behind its siblings for as long (a semaphore's bounded
// buffer with 16 or 64 threads on 2 CPUs, marked, parked at every wait and went 3 to 5 times
// slower). The same busy thread, polls that are not for one partner, until some yield took
// its slice: the thread is not marked.
[[noreturn]] void many_partner_polls_beside_a_busy_thread() {
    partner_on_this_cpu busy([] {});
    (void)contend::internal::gave_cpu_away_after();  // calibrates
    bool long_yield = false;
    for (const auto give_up = steady::now() + 2s; !long_yield && steady::now() < give_up;) {
        contend::internal::spin_wait poll(std::chrono::microseconds(40));
        auto before = steady::now();
        while (poll.pause()) {
            const auto after = steady::now();
            if (after - before > 1ms) long_yield = true;
            before = after;
        }
    }
    const bool marked = contend::internal::this_thread_yields_to_a_stranger(contend::internal::clock::now());
    busy.stop();
    if (!long_yield) std::_Exit(3);  // no yield took the busy thread's slice: nothing shown
    std::_Exit(marked ? 1 : 0);
}

TEST(SpinWaitDeathTest, APollNotForOnePartnerDoesNotTakeALongYieldForAStrangers) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(many_partner_polls_beside_a_busy_thread(), testing::ExitedWithCode(0), "");
}

// Where every yield switches (a CPU two threads share, as a pipe's writer and reader do on
// one CPU), no quiet yield is ever known. Each judged yield then read the switch count, two
// getrusage calls, a tenth of the one-CPU pipe's time at 4 KiB chunks (Intel Xeon VM): now one
// in 16 does, and the others are still judged switches.
[[noreturn]] void judge_many_yields_beside_a_yielding_thread() {
    partner_on_this_cpu partner([] { sched_yield(); });
    (void)contend::internal::gave_cpu_away_after();  // the first use: calibrates
    const std::uint64_t reads_before = contend::internal::this_thread_switch_count_reads();
    int switched = 0, judged_switched = 0, judged = 0;
    for (; judged < 320; ++judged) {
        const auto before = this_thread_switches();
        const bool said = contend::internal::yield_gave_cpu_away();
        if (this_thread_switches() != before) {
            ++switched;
            judged_switched += said ? 1 : 0;
        }
    }
    const std::uint64_t reads = contend::internal::this_thread_switch_count_reads() - reads_before;
    partner.stop();
    std::fprintf(stderr, "%d yields, %d switched, %d judged so, %llu read the switch count\n", judged, switched,
                 judged_switched, static_cast<unsigned long long>(reads));
    if (switched < judged / 2) std::_Exit(3);  // the partner hardly ran: a quiet yield may be known
    std::_Exit(reads <= static_cast<std::uint64_t>(judged / 16 + 2) && 5 * judged_switched >= 4 * switched ? 0 : 1);
}

TEST(SpinWaitDeathTest, WhereEveryYieldSwitchesFewJudgedYieldsReadTheSwitchCount) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(judge_many_yields_beside_a_yielding_thread(), testing::ExitedWithCode(0), "");
}

// A thread's first sched_yield is slow without switching: 432 ns on average against 196 for
// its next ones, and 124 of 200 new threads' first yields took over twice the quiet yield
// (Intel Xeon VM). Judged by its time, it marked the thread's CPU shared, so a new thread's
// first watch of a held mutex gave up and slept (Mutex.ADesigneeBehindAShortHold...: 170
// of 200 slept). The first judged yield of each thread asks the kernel's switch count; of
// new threads' first yields that did not switch, none may be judged a switch.
TEST(SpinWait, AThreadsFirstYieldIsNotTakenForASwitch) {
    watchdog dog(60s);
    (void)contend::internal::gave_cpu_away_after();  // calibrated: later yields are judged by their time
    int quiet = 0, misjudged = 0;
    for (int t = 0; t < 100; ++t) {
        std::thread fresh([&] {
            const long before = this_thread_switches();
            const bool judged = contend::internal::yield_gave_cpu_away();
            if (this_thread_switches() != before) return;  // it did switch
            ++quiet;
            misjudged += judged ? 1 : 0;
        });
        fresh.join();
    }
    ASSERT_GE(quiet, 10) << "almost every new thread's first yield switched: nothing to judge";
    EXPECT_EQ(misjudged, 0) << "of " << quiet << " first yields that did not switch";
}

// A poll on a CPU that another thread wants gives up after a few yields instead of holding
// the CPU for its budget: a busy thread shares the poller's CPU, the poll's budget is 10 s,
// and it must end as missed_shared, long before that.
TEST(PollUntil, GivesUpAfterAFewYieldsOnACpuAnotherThreadWants) {
    watchdog dog(60s);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    std::atomic<bool> busy_running{false};
    std::atomic<bool> done{false};
    std::thread busy([&] {
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        busy_running = true;
        const auto give_up = steady::now() + 20s;
        while (!done.load() && steady::now() < give_up) {
        }
    });
    contend::internal::poll_outcome outcome = contend::internal::poll_outcome::ready;
    std::chrono::nanoseconds took{};
    std::thread poller([&] {
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        while (!busy_running.load()) std::this_thread::yield();
        const auto start = steady::now();
        outcome = contend::internal::poll_until([] { return false; }, 10s, contend::internal::no_deadline);
        took = steady::now() - start;
    });
    poller.join();
    done = true;
    busy.join();
    EXPECT_EQ(outcome, contend::internal::poll_outcome::missed_shared);
    EXPECT_LT(took, 5s) << "the poll held a CPU that another thread wanted for most of its budget";
}

}  // namespace contend_test

// A sandbox's seccomp filter may refuse membarrier, before the library loads or at any time
// after (a program that locks itself down once started). heavy_fence() then used to trap
// (SIGILL): any sandboxed program that contended a mutex died. These run this program again,
// with CONTEND_TEST_MEMBARRIER_REFUSED saying when the filter goes in, this test alone; the
// process contends a contend::mutex (a waiter's first registration on a slot pays the
// process-wide barrier), calls heavy_fence() itself, and exits 0 with the counts right.
namespace {

// -1: the filter could not be installed (no seccomp here).
int refuse_membarrier(int error) {
#if defined(__x86_64__)
    constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
#endif
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(error) & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    // Every thread of the process (TSYNC), and those it starts later.
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0) return -1;
    return 0;
}

// The child's part: contention on a fresh mutex (its waiter slot at rest, so the waiter's
// registration issues the barrier), then the barrier called directly. Exit 0 when right.
[[noreturn]] void contend_under_the_filter(bool filter_now, int error) {
    if (filter_now && refuse_membarrier(error) != 0) std::_Exit(4);
    if (syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0) != -1) std::_Exit(5);  // not refused
    static contend::mutex m;
    static long count = 0;
    constexpr int threads = 4;
    constexpr int rounds = 2000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([] {
            for (int i = 0; i < rounds; ++i) {
                m.lock();
                ++count;
                if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));  // waiters park
                m.unlock();
            }
        });
    }
    for (auto& w : workers) w.join();
    if (ci::heavy_fence_init()) ci::heavy_fence();
    std::_Exit(count == long{threads} * rounds ? 0 : 6);
}

// Runs this test again in a child: the filter installed there at run time (`now`), or before
// the child's exec, so that the library starts under it.
void run_refused(const char* test, const char* when, int error) {
    if (const char* mode = std::getenv("CONTEND_TEST_MEMBARRIER_REFUSED")) {
        contend_under_the_filter(std::strcmp(mode, "now") == 0,
                                 std::atoi(std::getenv("CONTEND_TEST_MEMBARRIER_ERROR")));
    }
    watchdog dog(120s);
    std::string exe = "/proc/self/exe";
    std::string filter = std::string("--gtest_filter=") + test;
    std::string mode = std::string("CONTEND_TEST_MEMBARRIER_REFUSED=") + when;
    std::string error_text = "CONTEND_TEST_MEMBARRIER_ERROR=" + std::to_string(error);
    std::vector<std::string> env_text{mode, error_text};
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    std::vector<char*> env;
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    char* argv[] = {exe.data(), filter.data(), nullptr};
    // fork, then (for "before") the filter, then exec: the child's threads are the new image's.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const int quiet = open("/dev/null", O_WRONLY);
        dup2(quiet, STDOUT_FILENO);
        if (std::strcmp(when, "before") == 0 && refuse_membarrier(error) != 0) _exit(4);
        execve(exe.c_str(), argv, env.data());
        _exit(7);
    }
    int status = -1;
    ASSERT_TRUE(reap_within(child, status, 60s)) << "the child did not finish in 60 s";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 4) GTEST_SKIP() << "seccomp filters cannot be installed here";
    ASSERT_FALSE(WIFSIGNALED(status)) << "the child died of signal " << WTERMSIG(status)
                                      << (WTERMSIG(status) == SIGILL ? " (heavy_fence trapped)" : "");
    EXPECT_EQ(WEXITSTATUS(status), 0) << "5: membarrier not refused; 6: wrong count; 7: exec failed";
}

}  // namespace

TEST(HeavyFence, SurvivesMembarrierRefusedAfterTheLibraryStarted) {
    run_refused("HeavyFence.SurvivesMembarrierRefusedAfterTheLibraryStarted", "now", EPERM);
}

TEST(HeavyFence, SurvivesMembarrierRefusedWithEnosysAfterTheLibraryStarted) {
    run_refused("HeavyFence.SurvivesMembarrierRefusedWithEnosysAfterTheLibraryStarted", "now", ENOSYS);
}

TEST(HeavyFence, SurvivesMembarrierRefusedBeforeTheLibraryStarted) {
    run_refused("HeavyFence.SurvivesMembarrierRefusedBeforeTheLibraryStarted", "before", EPERM);
}

// ---- handoff_sleep (platform/handoff_sleep.hpp): a pipe's sleep with a synchronous wake-up ----

namespace {
bool built_on_futex() { return std::strcmp(contend_test_expected_wait_backend, "futex") == 0; }

// True on the portable build, after checking that it has no handoff_sleep: the test ends there.
bool portable_build_has_none() {
    if (built_on_futex()) return false;
    EXPECT_EQ(ci::this_thread_handoff_sleep(), nullptr) << "the portable build has no handoff_sleep";
    return true;
}

// This process's open descriptors: how many, and the highest.
struct descriptor_scan {
    int open = 0;
    int highest = -1;
};
descriptor_scan scan_descriptors() {
    descriptor_scan scan;
    for (int fd = 0; fd < 65536; ++fd)
        if (fcntl(fd, F_GETFD) != -1) {
            ++scan.open;
            scan.highest = fd;
        }
    return scan;
}
}  // namespace

// On the futex build a thread's handoff_sleep is a pipe of its own: a hand-off before the
// sleep ends it at once, and one from another thread while it sleeps ends it then, not
// before. The portable build has none.
TEST(HandoffSleep, ASleepEndsAtAHandOffMadeBeforeItOrWhileItSleeps) {
    if (portable_build_has_none()) return;
    watchdog dog(60s);
    ci::handoff_sleep* const mine = ci::this_thread_handoff_sleep();
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(ci::this_thread_handoff_sleep(), mine) << "one per thread";
    EXPECT_GE(ci::handoff_sleep_descriptor(mine), 0);
    const std::uint64_t before = ci::handoffs_made();
    ci::hand_off_to(mine);
    EXPECT_TRUE(ci::sleep_until_handed_off(mine)) << "the hand-off that came first";
    std::atomic<bool> handed{false};
    std::thread waker([&] {
        std::this_thread::sleep_for(20ms);
        handed.store(true);
        ci::hand_off_to(mine);
    });
    EXPECT_TRUE(ci::sleep_until_handed_off(mine));
    EXPECT_TRUE(handed.load()) << "the sleep ended before the hand-off";
    waker.join();
    EXPECT_EQ(ci::handoffs_made() - before, 2u);
    int other = -1;
    std::thread([&] { other = ci::handoff_sleep_descriptor(ci::this_thread_handoff_sleep()); }).join();
    EXPECT_NE(other, ci::handoff_sleep_descriptor(mine)) << "another thread has a pipe of its own";
}

// A program that closes descriptors it did not open (a daemon's close-all loop) breaks a
// thread's pipe: its sleep then fails at once instead of sleeping on a descriptor that is
// gone, and the thread has no handoff_sleep after, so its waits take the condition variable.
TEST(HandoffSleep, ASleepOnAPipeTheProgramClosedFailsAndTheThreadHasNoneAfter) {
    if (portable_build_has_none()) return;
    watchdog dog(60s);
    std::thread fresh([] {
        ci::handoff_sleep* const mine = ci::this_thread_handoff_sleep();
        ASSERT_NE(mine, nullptr);
        ASSERT_EQ(::close(ci::handoff_sleep_descriptor(mine)), 0);
        EXPECT_FALSE(ci::sleep_until_handed_off(mine));
        EXPECT_EQ(ci::this_thread_handoff_sleep(), nullptr);
    });
    fresh.join();
}

// A thread that cannot make its pipe (the process is out of descriptors) has no
// handoff_sleep, and its waits take the condition variable. The limit is lowered to what this
// process has open, with every number below it taken, for as long as a fresh thread looks.
TEST(HandoffSleep, AThreadThatFindsNoDescriptorLeftHasNone) {
    if (portable_build_has_none()) return;
    watchdog dog(60s);
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    const int highest = scan_descriptors().highest;
    ASSERT_GE(highest, 0);
    rlimit lowered = saved;
    lowered.rlim_cur = static_cast<rlim_t>(highest + 1);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
    std::vector<int> fillers;
    for (int fd; (fd = dup(highest)) >= 0;) fillers.push_back(fd);
    // A bare pthread, not a std::thread: UBSan's check of std::thread's virtual call reads
    // /proc, which needs a descriptor.
    struct look {
        ci::handoff_sleep* seen = nullptr;
        bool looked = false;
    } result;
    pthread_t fresh{};
    const int created = pthread_create(
        &fresh, nullptr,
        [](void* r) -> void* {
            static_cast<look*>(r)->seen = ci::this_thread_handoff_sleep();
            static_cast<look*>(r)->looked = true;
            return nullptr;
        },
        &result);
    if (created == 0) pthread_join(fresh, nullptr);
    for (const int fd : fillers) ::close(fd);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    ASSERT_EQ(created, 0);
    ASSERT_TRUE(result.looked);
    EXPECT_EQ(result.seen, nullptr);
}

// The pipes take at most a sixteenth of the process's soft descriptor limit: with the limit
// lowered to L (256, or more where this process has many open), L / 32 pipes. Of L / 32 + 4
// threads that ask at once and keep theirs, at least 4 have none (this test program's own
// pipes count against the cap too).
TEST(HandoffSleep, NoMoreThanASixteenthOfTheDescriptorLimitGoesToPipes) {
    if (portable_build_has_none()) return;
    watchdog dog(60s);
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    const int open_now = scan_descriptors().open;
    rlim_t limit = 256;
    while (limit < static_cast<rlim_t>(open_now) + 64) limit *= 2;
    ASSERT_LE(limit, saved.rlim_max) << "the hard limit is below " << limit;
    const int cap = static_cast<int>(limit / 32), threads = cap + 4;
    rlimit lowered = saved;
    lowered.rlim_cur = limit;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
    std::atomic<int> with = 0, without = 0, looked = 0;
    std::atomic<bool> leave{false};
    std::vector<std::thread> askers;
    for (int i = 0; i < threads; ++i)
        askers.emplace_back([&] {
            (ci::this_thread_handoff_sleep() != nullptr ? with : without).fetch_add(1);
            looked.fetch_add(1);
            while (!leave.load()) std::this_thread::sleep_for(1ms);  // keeps its pipe while the others ask
        });
    const bool all_looked = eventually([&] { return looked.load() == threads; }, 30s);
    leave.store(true);
    for (auto& t : askers) t.join();
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    ASSERT_TRUE(all_looked);
    EXPECT_LE(with.load(), cap);
    EXPECT_GE(without.load(), 4);
    EXPECT_GE(with.load(), 1) << "no thread had a pipe under the cap";
}

// After a fork the child's thread makes a pipe of its own at its next sleep: the one it had is
// shared with the parent, whose wakers would write to it and whose thread would read it. And
// the pipes of the parent's other threads, which do not exist in the child, are closed there,
// not left open for good. The child (of a death test's fresh process, with one more thread
// that has its pipe) checks that its pipe is not the parent's (another inode), that the other
// thread's is closed, and that a hand-off ends its sleep.
[[noreturn]] void fork_and_sleep_in_the_child() {
    ci::handoff_sleep* const parent = ci::this_thread_handoff_sleep();
    if (parent == nullptr) std::_Exit(3);
    struct stat before {};
    if (::fstat(ci::handoff_sleep_descriptor(parent), &before) != 0) std::_Exit(4);
    std::mutex m;
    std::condition_variable cv;
    int other_fd = -1;
    bool quit = false;
    std::thread other([&] {
        const int fd = ci::handoff_sleep_descriptor(ci::this_thread_handoff_sleep());
        std::unique_lock lk(m);
        other_fd = fd;
        cv.notify_all();
        cv.wait(lk, [&] { return quit; });
    });
    {
        std::unique_lock lk(m);
        if (!cv.wait_for(lk, 30s, [&] { return other_fd != -1; })) std::_Exit(10);
    }
    const pid_t child = ::fork();
    if (child == 0) {
        if (::fcntl(other_fd, F_GETFD) != -1) _exit(11);  // the other thread's pipe, left open
        ci::handoff_sleep* const mine = ci::this_thread_handoff_sleep();
        struct stat now {};
        if (mine == nullptr || ::fstat(ci::handoff_sleep_descriptor(mine), &now) != 0) _exit(5);
        if (now.st_ino == before.st_ino) _exit(6);  // the parent's pipe
        ci::hand_off_to(mine);
        _exit(ci::sleep_until_handed_off(mine) ? 0 : 7);
    }
    {
        std::lock_guard lk(m);
        quit = true;
    }
    cv.notify_all();
    other.join();
    int status = -1;
    if (!reap_within(child, status, 30s)) std::_Exit(8);
    std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 9);
}

TEST(HandoffSleepDeathTest, AForkedChildSleepsOnAPipeOfItsOwn) {
    if (portable_build_has_none()) return;
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(fork_and_sleep_in_the_child(), testing::ExitedWithCode(0), "");
}
