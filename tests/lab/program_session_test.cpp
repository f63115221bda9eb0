// run/program_session: the pieces of `contend run` that need no program run: the PATH
// search, what the library's markers say about a run, and every refusal made before the
// program runs. tests/lab/run_test.cpp and run_losses_test.cpp run the whole session through
// the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "run/program_session.hpp"
#include "store/output_file.hpp"
#include "temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using contend::lab::program_file;
using contend::lab::program_request;
using contend::lab::program_session;

class ProgramFile : public contend_test::temp_dir_test {
protected:
    // DIR/NAME, made with the given permissions.
    std::string make(const std::string& dir, const std::string& name, fs::perms perms) {
        fs::create_directories(path(dir));
        const std::string file = path(dir + "/" + name);
        write(file, "#!/bin/sh\n");
        fs::permissions(file, perms);
        return file;
    }
};

TEST_F(ProgramFile, ANameWithASlashIsTheFileItselfWhateverThePath) {
    EXPECT_EQ(program_file("./prog", path("").c_str()), "./prog");
    EXPECT_EQ(program_file("/no/such/program", nullptr), "/no/such/program");
    EXPECT_EQ(program_file("sub/prog", "/usr/bin"), "sub/prog");
}

TEST_F(ProgramFile, ANameInNoFolderOfThePathIsNotFound) {
    fs::create_directories(path("a"));
    EXPECT_EQ(program_file("contend-no-such-program", path("a").c_str()), "");
    EXPECT_EQ(program_file("contend-no-such-program", (path("a") + ":" + path("missing")).c_str()), "");
}

TEST_F(ProgramFile, AFileWeMayNotExecuteIsPassedOverForTheNextFolder) {
    make("plain", "prog", fs::perms::owner_read | fs::perms::owner_write);
    const std::string runnable = make("runnable", "prog", fs::perms::owner_all);
    if (access(path("plain/prog").c_str(), X_OK) == 0) GTEST_SKIP() << "root may execute any file";
    EXPECT_EQ(program_file("prog", path("plain").c_str()), "");
    EXPECT_EQ(program_file("prog", (path("plain") + ":" + path("runnable")).c_str()), runnable);
}

TEST_F(ProgramFile, TheFirstFolderOfThePathThatHoldsItWins) {
    const std::string first = make("first", "prog", fs::perms::owner_all);
    make("second", "prog", fs::perms::owner_all);
    EXPECT_EQ(program_file("prog", (path("first") + ":" + path("second")).c_str()), first);
    EXPECT_EQ(program_file("prog", (path("missing") + ":" + path("second") + ":" + path("first")).c_str()),
              path("second") + "/prog");
}

TEST_F(ProgramFile, AnEmptyFolderOfThePathIsTheCurrentOne) {
    make("here", "prog", fs::perms::owner_all);
    const fs::path before = fs::current_path();
    fs::current_path(path("here"));
    const std::string leading = program_file("prog", (":" + path("missing")).c_str());
    const std::string trailing = program_file("prog", (path("missing") + ":").c_str());
    fs::current_path(before);
    EXPECT_EQ(leading, "./prog");
    EXPECT_EQ(trailing, "./prog");
}

TEST_F(ProgramFile, NoPathIsTheSystemsFolders) {
    const std::string sh = program_file("sh", nullptr);
    EXPECT_TRUE(sh == "/usr/bin/sh" || sh == "/bin/sh" || sh == "/usr/local/bin/sh") << sh;
}

TEST(InterpositionProblem, SaysWhenNoProcessLoadedTheLibraryOrOneTookAnotherLock) {
    contend::lab::run_markers markers;
    const std::string none = contend::lab::interposition_problem(markers, "contend_mutex", "prog", "/lib/x.so");
    EXPECT_EQ(none.rfind("no process of prog loaded the interposition library /lib/x.so: ", 0), 0u) << none;

    markers.loaded = {{11, "contend_mutex"}, {12, "glibc"}};
    const std::string other = contend::lab::interposition_problem(markers, "contend_mutex", "prog", "/lib/x.so");
    EXPECT_EQ(other.rfind("process 12 of prog ran its mutexes on glibc, not contend_mutex (", 0), 0u) << other;

    markers.loaded = {{11, "contend_mutex"}, {12, "contend_mutex"}};
    EXPECT_EQ(contend::lab::interposition_problem(markers, "contend_mutex", "prog", "/lib/x.so"), "");
}

class ProgramSession : public contend_test::temp_dir_test {
protected:
    program_request request() const {
        program_request r;
        r.argv = {"true"};
        r.json_path = path("run.json");
        return r;
    }

    // The message of the refusal of `r`; "" when none.
    static std::string refusal(const program_request& r) {
        try {
            program_session session(r);
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    }
};

TEST_F(ProgramSession, EveryRefusalComesBeforeAnythingRunsOrIsWritten) {
    program_request no_program = request();
    no_program.argv = {""};
    EXPECT_EQ(refusal(no_program), "no program to run (after --)");

    program_request label = request();
    label.label = "a\nb";
    EXPECT_EQ(refusal(label), "--label: the label must be printable UTF-8 (no control characters)");

    program_request json_on_stdout = request();
    json_on_stdout.json_path = "-";
    EXPECT_EQ(refusal(json_on_stdout),
              "--json -: standard output is the program's; give a file to write the results to");
    program_request csv_on_stdout = request();
    csv_on_stdout.csv_path = "-";
    EXPECT_EQ(refusal(csv_on_stdout), "--csv -: standard output is the program's; give a file to write the results to");

    program_request csv_empty = request();
    csv_empty.csv_path = "";
    EXPECT_EQ(refusal(csv_empty), "--csv \"\": an empty path");

    program_request unknown = request();
    unknown.locks = {"contend_mutex", "no_such_lock"};
    EXPECT_EQ(refusal(unknown), "--lock contend_mutex,no_such_lock: \"no_such_lock\" is not a lock (" +
                                    contend::lab::lock_choices() + ")");
    program_request twice = request();
    twice.locks = {"glibc", "contend_mutex", "glibc"};
    EXPECT_EQ(refusal(twice), "--lock glibc,contend_mutex,glibc: glibc is named twice");

    for (const int n : {0, program_session::max_repetitions + 1}) {
        program_request repetitions = request();
        repetitions.repetitions = n;
        EXPECT_EQ(refusal(repetitions), "--repetitions: from 1 to 1000") << n;
    }

    // Refused, and nothing was created: no output, no history.
    EXPECT_TRUE(fs::is_empty(path("")));
}

TEST_F(ProgramSession, AnOutputOnTheProgramIsRefusedForItWouldReplaceIt) {
    const std::string program = path("prog");
    write(program, "#!/bin/sh\n");
    fs::permissions(program, fs::perms::owner_all);
    program_request r = request();
    r.argv = {program};
    r.json_path = program;
    EXPECT_THROW(program_session{r}, contend::lab::output_error);
    r.json_path.reset();
    r.csv_path = program;
    EXPECT_THROW(program_session{r}, contend::lab::output_error);
    EXPECT_EQ(read(program), "#!/bin/sh\n");
}

}  // namespace
