// contend::thread_pool's options and limits (pool_core's constructor and set_min_threads,
// set_max_threads): invalid limits and options refused, the environment's overrides, a
// thread the constructor cannot start (os_thread.cpp's fault injection), and the workers'
// names and hooks.
#include "thread_pool_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "pool/os_thread.hpp"

using namespace contend_test;
using namespace pool_test;

TEST(ThreadPool, InvalidThreadLimitsChangeNothing) {
    thread_pool_options o;
    o.min_threads = 2;
    o.max_threads = 8;
    thread_pool pool(o);
    EXPECT_FALSE(pool.set_min_threads(0));
    EXPECT_FALSE(pool.set_min_threads(9));
    EXPECT_FALSE(pool.set_max_threads(0));
    EXPECT_FALSE(pool.set_max_threads(1));
    EXPECT_EQ(pool.stats().min_threads, 2u);
    EXPECT_EQ(pool.stats().max_threads, 8u);
    EXPECT_TRUE(pool.set_max_threads(4));
    EXPECT_TRUE(pool.set_min_threads(3));
    EXPECT_EQ(pool.stats().min_threads, 3u);
    EXPECT_EQ(pool.stats().max_threads, 4u);
}

TEST(ThreadPool, InvalidOptionsThrowInvalidArgument) {
    thread_pool_options o;
    o.min_threads = 4;
    o.max_threads = 2;
    EXPECT_THROW(thread_pool{o}, std::invalid_argument);
    thread_pool_options huge;
    huge.min_threads = 40'000;
    EXPECT_THROW(thread_pool{huge}, std::invalid_argument);
}

// A thread the constructor cannot start (the first worker, the second, the gate thread:
// its first three starts) fails it with pthread_create's error, and the threads it had
// started are stopped and joined. A worker thread destroyed still joinable while the
// exception unwound ended the process (std::terminate) instead.
TEST(ThreadPool, AThreadTheConstructorCannotStartFailsItWithTheErrorAndStopsTheOthers) {
    struct restore_starts {
        ~restore_starts() { contend::internal::fail_thread_starts_after(-1); }
    } restore;
    thread_pool_options o;
    o.name = "nostart";
    o.min_threads = 2;
    o.max_threads = 2;
    for (int starts = 0; starts <= 2; ++starts) {
        contend::internal::fail_thread_starts_after(starts);
        try {
            thread_pool pool(o);
            ADD_FAILURE() << "the pool started with start " << starts + 1 << " refused";
        } catch (const std::system_error& e) {
            EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again) << e.what();
            EXPECT_NE(std::string(e.what()).find("nostart"), std::string::npos) << e.what();
        }
        contend::internal::fail_thread_starts_after(-1);
        EXPECT_TRUE(threads_named("nostart-").empty()) << "start " << starts + 1 << " refused";
    }
    contend::internal::fail_thread_starts_after(3);  // the workers and the gate, no more
    thread_pool pool(o);
    EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);
}

TEST(ThreadPool, EnvironmentOverridesApplyToDefaultOptionsAndRejectGarbage) {
    ::setenv("CONTEND_POOL_MIN_THREADS", "3", 1);
    ::setenv("CONTEND_POOL_MAX_THREADS", "5", 1);
    ::setenv("CONTEND_POOL_HILL_CLIMBING", "0", 1);
    {
        thread_pool pool;
        EXPECT_EQ(pool.stats().min_threads, 3u);
        EXPECT_EQ(pool.stats().max_threads, 5u);
        thread_pool_options explicit_options;
        explicit_options.min_threads = 1;
        explicit_options.max_threads = 2;
        thread_pool pool2(explicit_options);  // fields set by the caller win
        EXPECT_EQ(pool2.stats().min_threads, 1u);
        EXPECT_EQ(pool2.stats().max_threads, 2u);
    }
    ::setenv("CONTEND_POOL_MIN_THREADS", "three", 1);
    EXPECT_THROW(thread_pool{}, std::invalid_argument);
    ::unsetenv("CONTEND_POOL_MIN_THREADS");
    ::setenv("CONTEND_POOL_HILL_CLIMBING", "maybe", 1);
    EXPECT_THROW(thread_pool{}, std::invalid_argument);
    ::unsetenv("CONTEND_POOL_HILL_CLIMBING");
    ::setenv("CONTEND_POOL_SPREAD_WORKERS", "sometimes", 1);
    try {
        thread_pool pool;
        ADD_FAILURE() << "CONTEND_POOL_SPREAD_WORKERS=sometimes was taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("CONTEND_POOL_SPREAD_WORKERS"), std::string::npos) << e.what();
    }
    ::unsetenv("CONTEND_POOL_SPREAD_WORKERS");
    ::unsetenv("CONTEND_POOL_MAX_THREADS");
}

// A maximum below the CPU count, by the override or the option, lowers the default minimum
// with it: the default minimum (the CPU count) was kept, and every default pool threw
// "max_threads (1) is below min_threads (2)". A minimum the caller set still must not
// exceed the maximum.
TEST(ThreadPool, AMaximumBelowTheCpuCountLowersTheDefaultMinimumWithIt) {
    struct unset_on_exit {
        ~unset_on_exit() { ::unsetenv("CONTEND_POOL_MAX_THREADS"); }
    } unset;
    ::setenv("CONTEND_POOL_MAX_THREADS", "1", 1);
    {
        thread_pool pool;
        EXPECT_EQ(pool.stats().min_threads, 1u);
        EXPECT_EQ(pool.stats().max_threads, 1u);
        EXPECT_EQ(pool.submit([] { return 5; }).get(), 5);
    }
    ::unsetenv("CONTEND_POOL_MAX_THREADS");
    thread_pool_options o;
    o.max_threads = 1;
    {
        thread_pool pool(o);
        EXPECT_EQ(pool.stats().min_threads, 1u);
        EXPECT_EQ(pool.stats().max_threads, 1u);
    }
    o.min_threads = 2;
    EXPECT_THROW(thread_pool{o}, std::invalid_argument);
}

// The thread-count overrides take decimal digits only, a count of 1 or more: anything else,
// with a space or a sign anywhere, is refused with a message that names the variable and the
// value. ' 4' and '+3' were taken (strtoull skips spaces and a sign) and '4 ' refused.
TEST(ThreadPool, ThreadCountOverridesTakeDecimalDigitsOnly) {
    for (const char* name : {"CONTEND_POOL_MIN_THREADS", "CONTEND_POOL_MAX_THREADS"}) {
        for (const char* bad :
             {" 4", "+3", "4 ", "-1", "", "0", "00", "0x4", "4.0", "1e3", "four", "99999999999999999999999"}) {
            ::setenv(name, bad, 1);
            try {
                thread_pool pool;
                ADD_FAILURE() << name << "='" << bad << "' was taken: min " << pool.stats().min_threads << ", max "
                              << pool.stats().max_threads;
            } catch (const std::invalid_argument& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find(name), std::string::npos) << what;
                EXPECT_NE(what.find("'" + std::string(bad) + "'"), std::string::npos) << what;
            }
        }
        ::setenv(name, "2", 1);
        EXPECT_NO_THROW(thread_pool{}) << name << "=2";
        ::setenv(name, "002", 1);
        EXPECT_NO_THROW(thread_pool{}) << name << "=002";
        ::unsetenv(name);
    }
}

TEST(ThreadPool, WorkersAreNamedAndHooksSeeThemStartAndStop) {
    watchdog dog(30s);
    std::atomic<int> starts{0}, stops{0};
    {
        thread_pool_options o = fixed(2);
        o.name = "tp";
        o.on_thread_start = [&](std::size_t) { starts.fetch_add(1); };
        o.on_thread_stop = [&](std::size_t) { stops.fetch_add(1); };
        thread_pool pool(o);
        ASSERT_TRUE(eventually([&] { return starts.load() == 2; }));
        // Each thread names itself as it starts: poll until all three have.
        const auto has = [](const std::vector<std::string>& names, const char* name) {
            return std::find(names.begin(), names.end(), name) != names.end();
        };
        std::vector<std::string> names;
        EXPECT_TRUE(eventually([&] {
            names = thread_names();
            return has(names, "tp-worker-0") && has(names, "tp-worker-1") && has(names, "tp-gate");
        }));
    }
    EXPECT_EQ(stops.load(), 2);
}
