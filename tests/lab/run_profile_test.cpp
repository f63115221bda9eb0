// contend run --profile end to end through the CLI, with the profile files written by the
// program itself where the library does not write them yet. Each seam's own tests:
// run_profile_files_test.cpp, run_profile_table_test.cpp, run_site_names_test.cpp,
// run_profile_cells_test.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_profile.hpp"
#include "run_cli.hpp"
#include "run_environment.hpp"
#include "run_profile_fixture.hpp"
#include "store/results_io.hpp"
#include "temp_dir.hpp"

namespace {

using contend_test::lock_json;
using contend_test::profile_json;
using contend_test::run_cli;
using contend_test::shell_quote;
using json = nlohmann::json;
using RunProfile = contend_test::temp_dir_test;
namespace lab = contend::lab;

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
