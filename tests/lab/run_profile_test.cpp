// contend run --profile: the library's profile files read (and refused when they are not what
// it writes), merged over processes, their sites named with addr2line or named as the library
// named them, the table, the row in the lab's result model, and the CLI end to end, with the
// profile files written by the program itself where the library does not write them yet.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_profile.hpp"
#include "run_cli.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

// A function of this program for addr2line to name (outside the unnamed namespace: a global
// symbol, its name unmangled).
extern "C" __attribute__((noinline, used)) int contend_profile_test_site() { return 7; }

namespace {

using contend_test::run_cli;
using contend_test::shell_quote;
using json = nlohmann::json;
using RunProfile = contend_test::temp_dir_test;
namespace lab = contend::lab;

const bool environment_cleared = [] {
    unsetenv("CONTEND_INTERPOSE_LIBRARY");
    return true;
}();

json lock_json(const std::string& address, std::uint64_t wait_ns, std::uint64_t contended = 10) {
    return {{"address", address},
            {"acquisitions", 1000},
            {"contended", contended},
            {"wait_ns", wait_ns},
            {"wait_p99_ns", 2000},
            {"wait_max_ns", 5000},
            {"hold_samples", 10},
            {"hold_sampled_ns", 4000},
            {"hold_p99_ns", 700},
            {"site",
             {{"address", "0x55d0c0a01234"},
              {"module", "/no/such/module"},
              {"module_address", "0x1234"},
              {"function", "worker_loop"}}}};
}

json profile_json(std::int64_t pid, std::vector<json> locks = {}, double seconds = 1.5) {
    return {{"format", "contend-interpose-profile/1"},
            {"pid", pid},
            {"executable", "/usr/bin/prog"},
            {"lock", "contend_mutex"},
            {"seconds", seconds},
            {"hold_sample_period", 64},
            {"acquisitions", 4000},
            {"contended", 300},
            {"trylock_busy", 2},
            {"timeouts", 1},
            {"wait_ns", 9000000},
            {"locks_dropped", 0},
            {"locks", locks}};
}

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

TEST_F(RunProfile, TwoProcessesMergeTotalsTakeTheLongestSecondsAndKeepTheirLocksApart) {
    std::vector<lab::process_profile> processes = {
        lab::parse_profile(profile_json(10, {lock_json("0x1000", 50), lock_json("0x2000", 900)}, 2.0).dump()),
        lab::parse_profile(profile_json(11, {lock_json("0x1000", 400)}, 4.0).dump())};
    const auto m = lab::merge_profiles(processes, 11);
    EXPECT_EQ(m.processes, 2u);
    EXPECT_EQ(m.acquisitions, 8000u);
    EXPECT_EQ(m.contended, 600u);
    EXPECT_EQ(m.trylock_busy, 4u);
    EXPECT_EQ(m.timeouts, 2u);
    EXPECT_EQ(m.wait_ns, 18000000u);
    EXPECT_DOUBLE_EQ(m.seconds, 4.0);
    EXPECT_DOUBLE_EQ(m.contentions_per_second(), 600 / 4.0);
    ASSERT_EQ(m.locks.size(), 3u) << "the same address in two processes is two locks";
    EXPECT_EQ(m.locks[0].wait_ns, 900u);
    EXPECT_EQ(m.locks[1].pid, 11);
    EXPECT_EQ(m.locks[2].pid, 10);
    EXPECT_EQ(m.locks_named, std::vector<std::string>{"contend_mutex"});
}

TEST_F(RunProfile, TheTableShowsTheTop20ByContendedWaitAndCountsTheRest) {
    std::vector<json> locks;
    for (int i = 1; i <= 25; ++i) {
        char address[32];
        std::snprintf(address, sizeof address, "0x%x", 0x1000 * i);
        locks.push_back(lock_json(address, static_cast<std::uint64_t>(i) * 1000000, static_cast<std::uint64_t>(i)));
    }
    const auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, locks).dump())}, 7);
    const std::string table = lab::profile_table(m);
    EXPECT_NE(table.find("/usr/bin/prog, lock contend_mutex, 1 process, 1.500 s"), std::string::npos) << table;
    EXPECT_NE(table.find("200 contentions/s"), std::string::npos) << table;
    EXPECT_NE(table.find("holds timed on 1 in 64 acquisitions on average (random gaps), of locks once contended"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("... and 5 more contended locks (15.000 ms of wait)"), std::string::npos) << table;
    // Rank 1 is the longest wait (0x19000, 25 ms), rank 20 the 20th (0x6000); 0x5000 is not shown.
    const auto first = table.find("    1  0x19000 ");
    const auto twentieth = table.find("   20  0x6000 ");
    EXPECT_NE(first, std::string::npos) << table;
    EXPECT_NE(twentieth, std::string::npos) << table;
    EXPECT_LT(first, twentieth);
    EXPECT_EQ(table.find("  0x5000 "), std::string::npos) << table;
    EXPECT_NE(table.find("25.000"), std::string::npos) << "wait ms of the top lock:\n" << table;
    EXPECT_NE(table.find("worker_loop"), std::string::npos) << "the library's function name as the site:\n" << table;
}

TEST_F(RunProfile, HostileNamesInAProfileReachTheTerminalEscaped) {
    auto l = lock_json("0x10", 1);
    l["site"]["function"] = "evil\x1b]0;pwned\x07\n\u202e";
    auto p = profile_json(7, {l});
    p["executable"] = "/bin/\x1b[2Jx";
    const std::string table = lab::profile_table(lab::merge_profiles({lab::parse_profile(p.dump())}));
    EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
    EXPECT_EQ(table.find('\x07'), std::string::npos) << table;
    EXPECT_EQ(table.find("\u202e"), std::string::npos) << table;
    EXPECT_NE(table.find("evil\\x1B]0;pwned"), std::string::npos) << table;
}

// A site's module: not a file, a tool that fails or prints nonsense, all leave the library's
// name (else module+offset) and say why.
TEST_F(RunProfile, SymbolizationFallsBackWhenAddr2lineFailsOrIsMissing) {
    write(path("module"), "not an ELF file");
    auto l = lock_json("0x10", 1);
    l["site"]["module"] = path("module");
    auto nameless = lock_json("0x20", 1);
    nameless["site"]["module"] = path("module");
    nameless["site"]["function"] = "";
    auto missing = lock_json("0x30", 1);  // /no/such/module
    missing["site"]["function"] = "";
    const std::string nonsense = path("nonsense.sh");
    write(nonsense, "#!/bin/sh\necho hello\n");
    chmod(nonsense.c_str(), 0755);
    for (const std::string& tool : {std::string("false"), std::string("/no/such/addr2line"), nonsense}) {
        auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, {l, nameless, missing}).dump())});
        const auto failures = lab::symbolize_sites(m, 20, tool);
        EXPECT_EQ(failures.size(), 2u) << tool;
        for (const auto& lock : m.locks) {
            EXPECT_EQ(lock.site_text(), lock.address == 0x10 ? "worker_loop" : "module+0x1234") << tool;
        }
    }
}

// The real addr2line on this test program names one of its own functions.
TEST_F(RunProfile, Addr2lineNamesAFunctionOfThisProgram) {
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&contend_profile_test_site), &info), 0);
    const auto address = reinterpret_cast<std::uintptr_t>(&contend_profile_test_site);
    // What the library writes: the offset in a position-independent executable (ELF e_type
    // ET_DYN, 3), the address itself in a fixed one (ET_EXEC, 2).
    const std::string elf = read("/proc/self/exe").substr(0, 18);
    ASSERT_EQ(elf.size(), 18u);
    const bool pie = elf[16] == 3;
    const auto base = pie ? reinterpret_cast<std::uintptr_t>(info.dli_fbase) : 0;
    char module_address[32];
    std::snprintf(module_address, sizeof module_address, "0x%zx", static_cast<std::size_t>(address - base));
    auto l = lock_json("0x10", 1);
    l["site"]["module"] = std::filesystem::read_symlink("/proc/self/exe").string();
    l["site"]["module_address"] = module_address;
    l["site"]["function"] = "";
    auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, {l}).dump())});
    const auto failures = lab::symbolize_sites(m);
    ASSERT_TRUE(failures.empty()) << failures.front();
    EXPECT_EQ(m.locks[0].site.symbol, "contend_profile_test_site") << m.locks[0].site_text();
}

TEST_F(RunProfile, TheRowIsOneCellOfSuiteRunWithTheProfilesFiguresAndRoundTripsThroughJson) {
    const auto m = lab::merge_profiles(
        {lab::parse_profile(profile_json(7, {lock_json("0x10", 2000000), lock_json("0x20", 3000)}).dump())}, 7);
    lab::program_status exited;
    exited.pid = 7;
    exited.cpu_ns = 5e6;
    lab::run_result run;
    run.context.date = "2026-01-01T00:00:00Z";
    run.cells.push_back(
        lab::run_cell({{"/usr/bin/prog", "--threads=8", "run"}, "ttas", true, {{exited, 2.5e9, m, 0, ""}}}));
    const auto& c = run.cells[0];
    EXPECT_EQ(c.name().substr(0, 27), "run/ttas/program:prog/args:") << c.name();
    EXPECT_EQ(c.params.back(), (std::pair<std::string, std::string>{"profile", "on"}));
    EXPECT_EQ(c.workers, 1);
    EXPECT_EQ(c.operation, "run");
    EXPECT_EQ(c.status, "ok");
    EXPECT_EQ(c.ns_per_op, std::vector<double>{2.5e9});
    EXPECT_DOUBLE_EQ(c.median_ns, 2.5e9);
    EXPECT_DOUBLE_EQ(c.metric("contentions_per_s"), 200);
    EXPECT_DOUBLE_EQ(c.metric("wait_ms"), 9);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_wait_ms"), 2);
    EXPECT_DOUBLE_EQ(c.metric("wait_p99_us"), 2);
    EXPECT_DOUBLE_EQ(c.metric("top_lock_hold_ms"), 0.4);
    EXPECT_DOUBLE_EQ(c.metric("locks_contended"), 2);

    const auto back = lab::run_from_json(lab::to_json(run));
    ASSERT_EQ(back.cells.size(), 1u);
    EXPECT_EQ(back.cells[0].name(), c.name());
    EXPECT_EQ(back.cells[0].metrics.size(), c.metrics.size());
    for (const auto& [name, value] : c.metrics) EXPECT_DOUBLE_EQ(back.cells[0].metric(name), value) << name;

    lab::program_status failed;
    failed.value = 3;
    EXPECT_EQ(lab::run_cell({{"prog"}, "glibc", false, {{failed, 1e6, std::nullopt, 0, ""}}}).detail, "exit status 3");
    lab::program_status killed;
    killed.signalled = true;
    killed.value = 9;
    const auto k = lab::run_cell({{"prog"}, "glibc", false, {{killed, 1e6, std::nullopt, 0, ""}}});
    EXPECT_EQ(k.status, "crashed");
    EXPECT_EQ(k.detail.substr(0, 18), "killed by signal 9") << k.detail;
    EXPECT_TRUE(k.metrics.empty());
}

TEST_F(RunProfile, SeveralRunsOfALockAreTheSamplesOfOneCellItsMetricsTheirMediansItsStatusTheFirstFailure) {
    const auto profile_of = [](std::uint64_t wait_ns) {
        auto j = profile_json(7, {lock_json("0x10", 1000)});
        j["wait_ns"] = wait_ns;
        return lab::merge_profiles({lab::parse_profile(j.dump())}, 7);
    };
    lab::program_status ok, failed;
    failed.value = 3;
    const auto c = lab::run_cell({{"prog"},
                                  "contend_mutex",
                                  true,
                                  {{ok, 3e6, profile_of(1'000'000), 0, ""},
                                   {ok, 1e6, profile_of(5'000'000), 0, ""},
                                   {ok, 2e6, std::nullopt, 0, ""},
                                   {ok, 4e6, profile_of(2'000'000), 0, ""}}});
    EXPECT_EQ(c.repetitions, 4);
    EXPECT_EQ(c.ns_per_op, (std::vector<double>{3e6, 1e6, 2e6, 4e6}));
    EXPECT_DOUBLE_EQ(c.median_ns, 2.5e6);
    EXPECT_DOUBLE_EQ(c.metric("wait_ms"), 2);  // the median of 1, 5 and 2: the unprofiled run has none
    EXPECT_EQ(c.status, "ok");
    const auto f =
        lab::run_cell({{"prog"}, "glibc", false, {{ok, 1e6, std::nullopt, 0, ""}, {failed, 1e6, std::nullopt, 0, ""}}});
    EXPECT_EQ(f.status, "failed");
    EXPECT_EQ(f.detail, "exit status 3");
}

TEST_F(RunProfile, TheProgramParamsAreSafeAndTheArgumentsHashKeepsTheirBoundaries) {
    const auto p = lab::program_params({"/weird dir/na/me\n\x1b\xff", "a"});
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].second, "me___");
    EXPECT_NO_THROW(lab::check_params(p));
    EXPECT_EQ(lab::program_params({"dir/"})[0].second, "_");
    EXPECT_EQ(lab::program_params({std::string(300, 'x')})[0].second.size(), 64u);
    EXPECT_NE(lab::program_params({"p", "a b"})[1].second, lab::program_params({"p", "a", "b"})[1].second);
    EXPECT_EQ(lab::program_params({"p", "x"})[1].second, lab::program_params({"/bin/p", "x"})[1].second);
    EXPECT_EQ(lab::program_params({"p", "x"})[1].second.size(), 12u);
}

// Only the locks the table shows are symbolized: a profile with thousands of modules costs at
// most 20 addr2line calls.
TEST_F(RunProfile, OnlyTheSitesOfTheLocksShownAreSymbolized) {
    std::vector<json> locks;
    for (int i = 1; i <= 25; ++i) {
        auto l = lock_json("0x" + std::to_string(i * 1000), static_cast<std::uint64_t>(i));
        l["site"]["module"] = "/no/such/module" + std::to_string(i);
        locks.push_back(l);
    }
    auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, locks).dump())});
    EXPECT_EQ(lab::symbolize_sites(m, 20, "false").size(), 20u);
    EXPECT_EQ(lab::symbolize_sites(m, 1, "false").size(), 1u);
}

// --- The CLI end to end ---------------------------------------------------------------------

// The program writes its own profile where the library would: the CLI's reading, table, row
// and clean-up are tested whether or not the library writes profiles.
TEST_F(RunProfile, TheCliPrintsTheTableRecordsTheRowRemovesTheFolderAndKeepsTheExitStatus) {
    write(path("good.json"), profile_json(1, {lock_json("0x10", 2000000)}).dump());
    // The shell's pid is the program's: its file is renamed to that, as the library does.
    const std::string script =
        "sed \"s/\\\"pid\\\":1,/\\\"pid\\\":$$,/\" " + shell_quote(path("good.json")) +
        " > \"$CONTEND_INTERPOSE_PROFILE/$$.json\"; echo '{' > \"$CONTEND_INTERPOSE_PROFILE/9.json\"; "
        "echo \"$CONTEND_INTERPOSE_PROFILE\" > " +
        shell_quote(path("folder")) + "; exit 5";
    const auto o =
        run_cli("run --profile --json " + shell_quote(path("run.json")) + " -- sh -c " + shell_quote(script));
    EXPECT_EQ(o.exit_code, 5) << o.output;
    EXPECT_NE(o.output.find("9.json: not JSON"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("worker_loop"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("holds timed on 1 in 64"), std::string::npos) << o.output;
    std::string folder = read(path("folder"));
    ASSERT_FALSE(folder.empty());
    folder.pop_back();
    EXPECT_TRUE(folder.starts_with("/")) << folder;
    EXPECT_FALSE(std::filesystem::exists(folder)) << folder << " was left behind";
    const auto run = lab::run_from_json(read(path("run.json")));
    ASSERT_EQ(run.cells.size(), 1u);
    EXPECT_EQ(run.cells[0].suite, "run");
    EXPECT_EQ(run.cells[0].status, "failed");
    EXPECT_EQ(run.cells[0].detail, "exit status 5");
    EXPECT_DOUBLE_EQ(run.cells[0].metric("top_lock_wait_ms"), 2);
    EXPECT_FALSE(run.context.cpu_model.empty());
}

TEST_F(RunProfile, NoProfileFileIsSaidInOneLine) {
    const auto o = run_cli("run --profile -- sh -c 'kill -KILL $$'");
    EXPECT_EQ(o.exit_code, 128 + 9) << o.output;
    EXPECT_NE(o.output.find("no profile was written"), std::string::npos) << o.output;
}

// Our torture program under the real library: with profiles once the library writes them,
// without until then; the JSON is readable either way.
TEST_F(RunProfile, TheTortureProgramsRunIsRecordedReadably) {
    const auto o = run_cli("run --profile --json " + shell_quote(path("run.json")) + " -- " +
                           "env CONTEND_INTERPOSE_EXPECT=contend_mutex " + shell_quote(CONTEND_TEST_TORTURE_PATH) +
                           " " + shell_quote(CONTEND_TEST_DLOPENED_PATH));
    ASSERT_EQ(o.exit_code, 0) << o.output;
    const auto run = lab::run_from_json(read(path("run.json")));
    ASSERT_EQ(run.cells.size(), 1u);
    const auto& c = run.cells[0];
    EXPECT_EQ(c.status, "ok");
    EXPECT_EQ(c.contender, "contend_mutex");
    if (o.output.find("no profile was written") != std::string::npos) {
        EXPECT_TRUE(c.metrics.empty());
    } else {
        EXPECT_GT(c.metric("acquisitions"), 0) << o.output;
        EXPECT_NE(o.output.find("contend run --profile:"), std::string::npos) << o.output;
    }
}

// The program may replace the folder with a link to another: contend removes the link, never
// what it points to.
TEST_F(RunProfile, AProfileFolderReplacedByALinkLeavesTheLinkedFolderAlone) {
    std::filesystem::create_directory(path("precious"));
    write(path("precious/keep"), "x");
    const auto o = run_cli("run --profile -- sh -c " +
                           shell_quote("rm -rf \"$CONTEND_INTERPOSE_PROFILE\" && ln -s " +
                                       shell_quote(path("precious")) + " \"$CONTEND_INTERPOSE_PROFILE\""));
    // The program removed the library's marker with the folder: contend cannot tell that it was
    // interposed, and says so (exit 3).
    EXPECT_EQ(o.exit_code, 3) << o.output;
    EXPECT_TRUE(std::filesystem::exists(path("precious/keep"))) << o.output;
}

TEST_F(RunProfile, BadOutputsAreRefusedBeforeTheProgramRuns) {
    const std::string witness = path("ran");
    const std::string touch = " -- touch " + shell_quote(witness);
    const std::string program = path("prog");
    write(program, "#!/bin/sh\ntouch " + shell_quote(witness) + "\n");
    chmod(program.c_str(), 0755);
    for (const std::string& options : std::vector<std::string>{
             "--json -", "--csv -", "--json " + shell_quote(path("a")) + " --csv " + shell_quote(path("a")),
             "--json " + shell_quote(path("h.db")) + " --db " + shell_quote(path("h.db")),
             "--json " + shell_quote(path("prog") + "/under_a_file"), "--json " + shell_quote(dir_.string()), "--db ''",
             "--db mysql://x", "--label $'a\\nb'"}) {
        const auto o = run_cli("run " + options + touch);
        EXPECT_EQ(o.exit_code, 2) << options << ":\n" << o.output;
        EXPECT_FALSE(std::filesystem::exists(witness)) << options << ": the program ran";
    }
    const auto onto_program = run_cli("run --json " + shell_quote(program) + " -- " + shell_quote(program));
    EXPECT_EQ(onto_program.exit_code, 2) << onto_program.output;
    EXPECT_NE(onto_program.output.find("the program"), std::string::npos) << onto_program.output;
    EXPECT_FALSE(std::filesystem::exists(witness));
}

TEST_F(RunProfile, AResultThatCannotBeWrittenExits4UnlessTheProgramFailedFirst) {
    EXPECT_EQ(run_cli("run --json /dev/full -- true").exit_code, 4);
    EXPECT_EQ(run_cli("run --json /dev/full -- sh -c 'exit 3'").exit_code, 3);
}

TEST_F(RunProfile, TwoRecordedRunsGoToTheHistoryAndCompareReadsTheirFiles) {
    const std::string db = shell_quote(path("h.db"));
    for (const char* name : {"a.json", "b.json"}) {
        const auto o = run_cli("run --lock glibc --db " + db + " --json " + shell_quote(path(name)) + " -- true");
        ASSERT_EQ(o.exit_code, 0) << o.output;
    }
    const auto history = run_cli("history list --db " + db);
    EXPECT_EQ(history.exit_code, 0) << history.output;
    const auto compared = run_cli("compare " + shell_quote(path("a.json")) + " " + shell_quote(path("b.json")));
    EXPECT_NE(compared.exit_code, 2) << compared.output;
}

}  // namespace
