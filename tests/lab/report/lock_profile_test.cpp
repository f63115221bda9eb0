// A profiled run's locks in the results and on the report's page: the row's text read back as
// written and refused when malformed, the object a results file holds, and the page's part
// (pages/lock_profile_page.hpp) that draws each lock's waits and lists its stacks.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pages/lock_profile_page.hpp"
#include "report_support.hpp"
#include "results/lock_profile.hpp"

using namespace contend_test::report;

namespace {

lab::lock_profile_data sample_profile() {
    lab::lock_profile_data p;
    p.stack_sample_period = 4;
    lab::profiled_lock l;
    l.site = "Cache::Lookup at cache.cc:12";
    l.acquisitions = 1000;
    l.contended = 40;
    l.wait_ns = 80000;
    l.wait_p50_ns = 900;
    l.wait_p90_ns = 4000;
    l.wait_p99_ns = 9000;
    l.wait_max_ns = 12000;
    l.wait_histogram = {{512, 10}, {1024, 25}, {8192, 5}};
    l.stacks = {{{"Cache::Lookup at cache.cc:12", "main"}, 7, 60000}, {{"Cache::Release at cache.cc:30"}, 2, 20000}};
    l.stacks_seen = 3;
    l.sampled_waits = 10;
    l.sampled_wait_ns = 81000;
    p.locks.push_back(l);
    l.site = "0x7f00deadbeef";
    l.rwlock = true;
    l.stacks.clear();
    l.stacks_seen = l.sampled_waits = l.sampled_wait_ns = 0;
    p.locks.push_back(l);
    return p;
}

std::string profiled_run_file() { return CONTEND_LAB_GOLDEN_DIR "/report_profiled_run.json"; }

}  // namespace

TEST(LockProfile, TheTextReadsBackAsTheSameProfileAndTheSameText) {
    const auto p = sample_profile();
    const std::string text = lab::lock_profile_text(p);
    const auto back = lab::lock_profile_from_text(text);
    EXPECT_EQ(lab::lock_profile_text(back), text);
    EXPECT_EQ(back.stack_sample_period, 4u);
    ASSERT_EQ(back.locks.size(), 2u);
    EXPECT_EQ(back.locks[0].site, p.locks[0].site);
    EXPECT_EQ(back.locks[0].wait_histogram, p.locks[0].wait_histogram);
    ASSERT_EQ(back.locks[0].stacks.size(), 2u);
    EXPECT_EQ(back.locks[0].stacks[0].frames, p.locks[0].stacks[0].frames);
    EXPECT_EQ(back.locks[0].stacks[1].wait_ns, 20000u);
    EXPECT_TRUE(back.locks[1].rwlock);
    EXPECT_EQ(lab::lock_profile_text({}), "") << "no lock is no profile";
    EXPECT_TRUE(lab::lock_profile_from_text("").locks.empty());
}

// Each hole a hostile history row or file could use, refused with what is wrong in it.
TEST(LockProfile, AMalformedTextIsRefusedSayingWhat) {
    const json good = json::parse(lab::lock_profile_text(sample_profile()));
    const auto with = [&](const std::function<void(json&)>& edit) {
        json j = good;
        edit(j);
        return j.dump();
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{not json", "not JSON"},
        {"[]", "not an object"},
        {with([](json& j) { j.erase("locks"); }), "lacks 'locks'"},
        {with([](json& j) { j["locks"] = json::array(); }), "locks are empty"},
        {with([](json& j) {
             j["locks"] = json::array(
                 {j["locks"][0], j["locks"][0], j["locks"][0], j["locks"][0], j["locks"][0], j["locks"][0]});
         }),
         "holds more than 5"},
        {with([](json& j) { j["locks"][0]["site"] = 7; }), "locks[0].site is not a string"},
        {with([](json& j) { j["locks"][0]["site"] = ""; }), "locks[0].site is empty"},
        {with([](json& j) { j["locks"][0]["site"] = std::string(1025, 'x'); }), "longer than 1024 bytes"},
        {with([](json& j) { j["locks"][0]["kind"] = "spin"; }), "neither \"mutex\" nor \"rwlock\""},
        {with([](json& j) { j["locks"][0]["contended"] = -1; }), "locks[0].contended is not a whole number"},
        {with([](json& j) { j["locks"][0]["wait_ns"] = 1.5; }), "locks[0].wait_ns is not a whole number"},
        {with([](json& j) { j["locks"][0]["wait_histogram"][1][0] = 512; }), "does not start above the bucket"},
        {with([](json& j) { j["locks"][0]["wait_histogram"][0] = json::array({1}); }), "is not a pair"},
        {with([](json& j) {
             json buckets = json::array();
             for (int b = 1; b <= 513; ++b) buckets.push_back({b, 1});
             j["locks"][0]["wait_histogram"] = buckets;
         }),
         "wait_histogram holds more than 512"},
        {with([](json& j) { j["locks"][0]["stacks"] = json::array_t(4, j["locks"][0]["stacks"][0]); }),
         "stacks holds more than 3"},
        {with([](json& j) { j["locks"][0]["stacks"][0]["frames"] = json::array(); }), "frames is empty"},
        {with([](json& j) { j["locks"][0]["stacks"][0]["frames"] = json::array_t(17, "f"); }), "holds more than 16"},
        {with([](json& j) { j["locks"][0]["stacks"][0]["frames"][0] = nullptr; }), "frames[0] is not a string"},
        {with([](json& j) { j["locks"][0]["stacks_seen"] = 1; }), "stacks_seen is fewer than its stacks"},
        {with([](json& j) { j["stack_sample_period"] = "4"; }), "stack_sample_period is not a whole number"},
    };
    for (const auto& [text, expected] : cases) {
        try {
            lab::lock_profile_from_text(text);
            ADD_FAILURE() << "accepted: " << text.substr(0, 200);
        } catch (const lab::lock_profile_error& e) {
            EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
                << e.what() << "\nexpected: " << expected;
        }
    }
}

// In a results file the profile is an object, read and checked as the row's text is.
TEST(LockProfile, AResultsFileHoldsItAsAnObjectAndRefusesAMalformedOne) {
    const lab::run_result run = lab::run_from_json(read_file(profiled_run_file()));
    ASSERT_EQ(run.cells.size(), 3u);
    EXPECT_FALSE(run.cells[0].lock_profile.empty());
    EXPECT_TRUE(run.cells[2].lock_profile.empty());
    const json written = json::parse(lab::to_json(run));
    EXPECT_TRUE(written["benchmarks"][0]["lock_profile"].is_object());
    EXPECT_FALSE(written["benchmarks"][2].contains("lock_profile")) << "absent from a row without one";
    EXPECT_EQ(lab::to_json(lab::run_from_json(lab::to_json(run))), lab::to_json(run));

    json as_string = written;
    as_string["benchmarks"][0]["lock_profile"] = as_string["benchmarks"][0]["lock_profile"].dump();
    EXPECT_THROW(
        {
            try {
                lab::run_from_json(as_string.dump());
            } catch (const std::runtime_error& e) {
                EXPECT_NE(std::string(e.what()).find("'lock_profile' is not an object"), std::string::npos) << e.what();
                throw;
            }
        },
        std::runtime_error);
    json hostile = written;
    hostile["benchmarks"][0]["lock_profile"]["locks"][0]["wait_histogram"][0] = "x";
    EXPECT_THROW(
        {
            try {
                lab::run_from_json(hostile.dump());
            } catch (const std::runtime_error& e) {
                EXPECT_NE(std::string(e.what()).find("lock profile: locks[0].wait_histogram[0] is not a pair"),
                          std::string::npos)
                    << e.what();
                throw;
            }
        },
        std::runtime_error);
}

TEST(Report, AProfiledRunsLocksAreDrawnWithTheirFiguresAndStacksAndNamesAreEscaped) {
    const std::string page =
        lab::render_report({{"profiled.json", lab::run_from_json(read_file(profiled_run_file()))}}, fake_library);
    // Two rows with two locks each, every lock with a histogram: four charts; the third row has
    // no profile.
    EXPECT_EQ(count(page, "<div class=\"locks\">"), 2u);
    EXPECT_EQ(count(page, "<div class=\"lock\">"), 4u);
    EXPECT_NE(page.find("data-lock-charts-expected=\"4\""), std::string::npos);
    EXPECT_NE(page.find("data-lock-charts-rendered=\"0\""), std::string::npos);
    const json data = page_data(page);
    ASSERT_EQ(data["lock_charts"].size(), 4u);
    const json& first = data["lock_charts"][0];
    EXPECT_EQ(first["canvas"], "chart-0-lock-0-0");
    EXPECT_NE(page.find("<canvas id=\"chart-0-lock-0-0\""), std::string::npos);
    EXPECT_EQ(first["labels"].size(), 24u);
    EXPECT_EQ(first["labels"][0], "\u2265 1.02 \u00b5s");
    EXPECT_EQ(first["counts"].size(), 24u);
    EXPECT_EQ(first["counts"][0], 16);
    // The figures and the stacks: the first stack took 140 of the 228 ms sampled (61 %).
    EXPECT_NE(page.find("1. mutex at LRUCacheShard::Lookup at cache/lru_cache.cc:412"), std::string::npos);
    EXPECT_NE(page.find("20412 of 1843211 acquisitions contended, waiting 912 ms in all; a wait took 18.4 \u00b5s at "
                        "p50, 61.4 \u00b5s at p90, 246 \u00b5s at p99, 3.93 ms at most"),
              std::string::npos);
    EXPECT_NE(page.find("<span class=\"share\">61 %</span> of the sampled waits' time (3120 waits)"),
              std::string::npos);
    EXPECT_NE(page.find("2 of its 5 call stacks, of 5103 sampled waits (1 contended wait in 4)"), std::string::npos);
    EXPECT_NE(page.find("<li><code>TableCache::FindTable at db/table_cache.cc:142</code></li>"), std::string::npos);
    EXPECT_NE(page.find("The 2 locks that waited longest"), std::string::npos);
    EXPECT_NE(page.find("2. rwlock at rocksdb::port::Mutex::Lock"), std::string::npos);
    EXPECT_NE(page.find("No call stack sampled for this lock."), std::string::npos);
    // A frame's name is text, never markup.
    EXPECT_EQ(page.find("<script>alert"), std::string::npos);
    EXPECT_NE(page.find("&lt;script&gt;alert(&#39;frame&#39;)&lt;/script&gt; &amp; co at x.cc:1"), std::string::npos);
    // A page without a profiled row has no lock part, and says it expects no lock chart.
    const std::string plain = lab::render_report({{"fixture.json", fixture()}}, fake_library);
    EXPECT_EQ(plain.find("<div class=\"locks\">"), std::string::npos);
    EXPECT_NE(plain.find("data-lock-charts-expected=\"0\""), std::string::npos);
}

// A history row is read as stored: a malformed profile there fails the page, naming the row.
TEST(Report, AMalformedLockProfileFailsThePageNamingItsRow) {
    lab::run_result run = lab::run_from_json(read_file(profiled_run_file()));
    run.cells[1].lock_profile = "{\"locks\": 3}";
    try {
        lab::render_report({{"history run 1", run}}, fake_library);
        ADD_FAILURE() << "rendered";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("row run/contend_mutex/program:db_bench"), std::string::npos) << what;
        EXPECT_NE(what.find("lock profile: the profile lacks 'stack_sample_period'"), std::string::npos) << what;
    }
}

// A stack's first 8 frames are listed, the rest counted; one lock is said as one.
TEST(Report, AStacksInnermostFramesAreListedAndTheRestCounted) {
    lab::run_result run = lab::run_from_json(read_file(profiled_run_file()));
    auto p = lab::lock_profile_from_text(run.cells[0].lock_profile);
    p.locks.resize(1);
    p.locks[0].stacks[0].frames.clear();
    for (int f = 0; f < 11; ++f) p.locks[0].stacks[0].frames.push_back("frame" + std::to_string(f));
    run.cells[0].lock_profile = lab::lock_profile_text(p);
    run.cells[1].lock_profile.clear();
    const std::string page = lab::render_report({{"one.json", run}}, fake_library);
    EXPECT_NE(page.find("<code>frame7</code>"), std::string::npos);
    EXPECT_EQ(page.find("<code>frame8</code>"), std::string::npos);
    EXPECT_NE(page.find("\u2026 3 more frames"), std::string::npos);
    EXPECT_NE(page.find("The one lock that waited,"), std::string::npos);
}

TEST(LockProfile, DurationsAreWrittenInTheirUnitWithThreeFigures) {
    EXPECT_EQ(lab::duration_text(0), "0 ns");
    EXPECT_EQ(lab::duration_text(850), "850 ns");
    EXPECT_EQ(lab::duration_text(999.7), "1 \u00b5s");
    EXPECT_EQ(lab::duration_text(12500), "12.5 \u00b5s");
    EXPECT_EQ(lab::duration_text(3.2e6), "3.2 ms");
    EXPECT_EQ(lab::duration_text(1.05e9), "1.05 s");
    EXPECT_EQ(lab::duration_text(7.2e12), "7.2e+03 s");
    EXPECT_EQ(lab::duration_text(-1), "n/a");
}
