// contend run --profile, reading the library's files (run/profile_files.hpp): a profile read
// field by field, refused when it is not what the library writes, and a folder read whole.
#include <filesystem>
#include <string>
#include <vector>

#include "run/profile_files.hpp"
#include "run_profile_fixture.hpp"

namespace {

using namespace contend_test;
namespace lab = contend::lab;

TEST_F(RunProfile, AValidFileReadsEveryFieldAsWritten) {
    const auto p = lab::parse_profile(profile_json(42, {lock_json("0x7ffd5a1c3e40", 123456)}).dump());
    EXPECT_EQ(p.pid, 42);
    EXPECT_EQ(p.executable, "/usr/bin/prog");
    EXPECT_EQ(p.lock, "contend_mutex");
    EXPECT_DOUBLE_EQ(p.seconds, 1.5);
    EXPECT_EQ(p.hold_sample_period, 64u);
    EXPECT_EQ(p.acquisitions, 4000u);
    EXPECT_EQ(p.contended, 300u);
    EXPECT_EQ(p.trylock_busy, 2u);
    EXPECT_EQ(p.timeouts, 1u);
    EXPECT_EQ(p.wait_ns, 9000000u);
    ASSERT_EQ(p.locks.size(), 1u);
    const auto& l = p.locks[0];
    EXPECT_EQ(l.pid, 42);
    EXPECT_EQ(l.address, 0x7ffd5a1c3e40u);
    EXPECT_EQ(l.wait_ns, 123456u);
    EXPECT_EQ(l.hold_p99_ns, 700u);
    EXPECT_EQ(l.site.address, 0x55d0c0a01234u);
    EXPECT_EQ(l.site.module_address, 0x1234u);
    EXPECT_EQ(l.site.function, "worker_loop");
    EXPECT_DOUBLE_EQ(l.estimated_hold_ns(), 4000.0 / 10 * 1000);
}

TEST_F(RunProfile, ARwlocksReadsAndWritesAreReadApartAndAFileFromBeforeRwlocksReadsAsNone) {
    auto j = profile_json(42, {rwlock_json("0x10", 3000, 8), lock_json("0x20", 1000)});
    j["read_acquisitions"] = 600;
    j["write_acquisitions"] = 400;
    const auto p = lab::parse_profile(j.dump());
    EXPECT_EQ(std::make_pair(p.read_acquisitions, p.write_acquisitions),
              (std::pair<std::uint64_t, std::uint64_t>{600, 400}));
    ASSERT_EQ(p.locks.size(), 2u);
    const auto& rw = p.locks[0];
    EXPECT_TRUE(rw.rwlock);
    // Each mode's counts as rwlock_json wrote them: acquisitions, contended, timeouts, wait.
    const std::vector<std::uint64_t> reads = {rw.read_acquisitions, rw.read_contended, rw.read_timeouts,
                                              rw.read_wait_ns},
                                     writes = {rw.write_acquisitions, rw.write_contended, rw.write_timeouts,
                                               rw.write_wait_ns};
    EXPECT_EQ(reads, (std::vector<std::uint64_t>{600, 4, 0, 1500}));
    EXPECT_EQ(writes, (std::vector<std::uint64_t>{400, 4, 1, 1500}));
    EXPECT_FALSE(p.locks[1].rwlock);
    EXPECT_EQ(p.locks[1].read_acquisitions, 0u);

    const auto old = lab::parse_profile(profile_json(42, {lock_json("0x20", 1000)}).dump());
    EXPECT_EQ(old.read_acquisitions + old.write_acquisitions, 0u);

    auto other_kind = profile_json(42, {rwlock_json("0x10", 3000)});
    other_kind["locks"][0]["kind"] = "semaphore";
    EXPECT_THROW(lab::parse_profile(other_kind.dump()), lab::profile_error);
    auto missing = profile_json(42, {rwlock_json("0x10", 3000)});
    missing["locks"][0].erase("write_wait_ns");
    EXPECT_THROW(lab::parse_profile(missing.dump()), lab::profile_error);
}

TEST_F(RunProfile, AnotherFormatIsRefusedNamingBoth) {
    auto j = profile_json(42);
    j["format"] = "contend-interpose-profile/2";
    try {
        lab::parse_profile(j.dump());
        FAIL() << "accepted";
    } catch (const lab::profile_error& e) {
        EXPECT_NE(std::string(e.what()).find("contend-interpose-profile/2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("contend-interpose-profile/1"), std::string::npos) << e.what();
    }
}

TEST_F(RunProfile, MistypedOrHostileFieldsAreRefusedNotMisread) {
    const auto refused = [](const std::string& text) {
        EXPECT_THROW(lab::parse_profile(text), lab::profile_error) << text;
    };
    refused("");
    refused("{");
    refused("[]");
    refused(profile_json(0).dump());  // no process has pid 0
    auto j = profile_json(42);
    j["acquisitions"] = -1;
    refused(j.dump());
    j["acquisitions"] = 1.5;
    refused(j.dump());
    refused(R"({"format": "contend-interpose-profile/1", "acquisitions": 18446744073709551616})");
    j = profile_json(42);
    j.erase("wait_ns");
    refused(j.dump());
    j = profile_json(42);
    j["locks"] = "none";
    refused(j.dump());
    j = profile_json(42);
    j["seconds"] = "1";
    refused(j.dump());
    for (const std::string address : {"7ffd", "0x", "0xzz", "0x1 ", "0x10000000000000000", "-0x1"}) {
        auto l = lock_json("0x10", 1);
        l["address"] = address;
        refused(profile_json(42, {l}).dump());
    }
    // The same lock twice, and a duplicate key (nlohmann would keep only the last).
    refused(profile_json(42, {lock_json("0x10", 1), lock_json("0x10", 2)}).dump());
    std::string twice = profile_json(42).dump();
    twice.insert(1, R"("locks": [{"address": "0x1"}], )");
    refused(twice);
}

TEST_F(RunProfile, AFolderIsReadWholeAndEachBadFileIsNamedWithoutLosingTheOthers) {
    write(path("100.json"), profile_json(100, {lock_json("0x10", 5)}).dump());
    write(path("200.json"), "{\"format\": ");  // cut short
    write(path("300.json"), profile_json(300).dump());
    write(path(".400.json.tmp"), "{");  // the library's file being written: not read
    write(path("notes.txt"), "{");
    write(path("700.json"), profile_json(701).dump());  // its pid is not its name's
    ASSERT_EQ(mkfifo(path("500.json").c_str(), 0600), 0);  // would block a plain read forever
    write(path("elsewhere"), profile_json(600).dump());
    std::filesystem::create_symlink(path("elsewhere"), path("600.json"));
    const auto read = lab::read_profile_folder(dir_.string());
    ASSERT_EQ(read.processes.size(), 2u);
    EXPECT_EQ(read.processes[0].pid, 100);
    EXPECT_EQ(read.processes[1].pid, 300);
    std::string errors;
    for (const auto& e : read.errors) errors += e + "\n";
    EXPECT_EQ(read.errors.size(), 4u) << errors;
    for (const char* name : {"200.json: not JSON", "500.json: ", "600.json: ", "700.json: "})
        EXPECT_NE(errors.find(name), std::string::npos) << name << " not named in\n" << errors;
    EXPECT_EQ(errors.find("400"), std::string::npos) << errors;
    EXPECT_EQ(errors.find("notes"), std::string::npos) << errors;
}

}  // namespace

TEST_F(RunProfile, TheWaitAndHoldDistributionsAreReadAndAFileWithoutThemReadsZero) {
    auto with = with_distributions(lock_json("0x10", 3000));
    const auto p = lab::parse_profile(profile_json(42, {with, lock_json("0x20", 1000)}).dump());
    ASSERT_EQ(p.locks.size(), 2u);
    const auto& a = p.locks[0];
    EXPECT_EQ(std::vector<std::uint64_t>({a.wait_p50_ns, a.wait_p90_ns, a.wait_p99_ns, a.wait_max_ns}),
              std::vector<std::uint64_t>({300, 1200, 2000, 5000}));
    EXPECT_EQ(std::vector<std::uint64_t>({a.hold_p50_ns, a.hold_p90_ns, a.hold_p99_ns, a.hold_max_ns}),
              std::vector<std::uint64_t>({90, 400, 700, 900}));
    const auto& b = p.locks[1];
    EXPECT_EQ(b.wait_p50_ns + b.wait_p90_ns + b.hold_p50_ns + b.hold_p90_ns + b.hold_max_ns, 0u);
    with["hold_max_ns"] = -1;
    EXPECT_THROW(lab::parse_profile(profile_json(42, {with}).dump()), std::runtime_error);
}

TEST_F(RunProfile, TheSampledCallStacksAndTheWaitHistogramAreReadAndAFileWithoutThemReadsNone) {
    auto file = profile_json(42, {with_stacks(lock_json("0x10", 3000)), lock_json("0x20", 1000)});
    file["stack_sample_period"] = 4;
    const auto p = lab::parse_profile(file.dump());
    EXPECT_EQ(p.stack_sample_period, 4u);
    ASSERT_EQ(p.locks.size(), 2u);
    const auto& a = p.locks[0];
    ASSERT_EQ(a.stacks.size(), 2u);
    ASSERT_EQ(a.stacks[0].frames.size(), 3u);
    EXPECT_EQ(a.stacks[0].frames[1].function, "run_jobs");
    EXPECT_EQ(a.stacks[0].frames[2].module_address, 0x3000u);
    EXPECT_EQ(a.stacks[0].samples, 3u);
    EXPECT_EQ(a.stacks[0].wait_ns, 6000u);
    EXPECT_EQ(a.stacks[1].frames.back().function, "drain");
    EXPECT_EQ(a.wait_histogram, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{256, 6}, {4096, 4}}));
    EXPECT_TRUE(p.locks[1].stacks.empty());
    EXPECT_TRUE(p.locks[1].wait_histogram.empty());
    EXPECT_EQ(lab::parse_profile(profile_json(42, {lock_json("0x20", 1000)}).dump()).stack_sample_period, 0u);
}

// A hostile or broken file's stacks and histogram are refused, never half read.
TEST_F(RunProfile, MalformedStacksAndHistogramsAreRefused) {
    const auto refused = [](const json& lock, const std::string& says) {
        try {
            lab::parse_profile(profile_json(42, {lock}).dump());
            ADD_FAILURE() << "accepted: " << lock.dump();
        } catch (const lab::profile_error& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    const auto good = with_stacks(lock_json("0x10", 3000));
    auto j = good;
    j["stacks"] = "no";
    refused(j, "\"stacks\" is not an array");
    j = good;
    j["stacks"][0]["frames"] = json::array();
    refused(j, "stacks[0]: \"frames\" is not an array of 1 to 64 sites");
    j = good;
    j["stacks"][0]["frames"] = json::array();
    for (int i = 0; i < 65; ++i) j["stacks"][0]["frames"].push_back(good["stacks"][0]["frames"][0]);
    refused(j, "1 to 64 sites");
    j = good;
    j["stacks"][1]["frames"][1]["address"] = "1234";
    refused(j, "stacks[1]: frames[1]: \"address\" is not an address");
    j = good;
    j["stacks"][0]["samples"] = -3;
    refused(j, "stacks[0]: \"samples\" is not a whole number");
    j = good;
    j["wait_histogram"] = {{4096, 4}, {256, 6}};
    refused(j, "not in increasing order");
    j = good;
    j["wait_histogram"] = {{256, 6, 1}};
    refused(j, "a bucket is not a pair");
    j = good;
    j["wait_histogram"] = {{256, -6}};
    refused(j, "a bucket is not a pair");
}
