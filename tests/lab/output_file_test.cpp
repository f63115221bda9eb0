// Output files: nothing a failed write touches is lost, no output may be an input.
#include "store/output_file.hpp"
#include "text/utf8.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using contend::lab::check_distinct;
using contend::lab::check_output_path;
using contend::lab::is_printable_utf8;
using contend::lab::output_error;
using contend::lab::write_output_file;

class OutputFile : public contend_test::temp_dir_test {
protected:
    std::size_t entries() const {
        return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
    }
};

TEST_F(OutputFile, ReplacesTheFileWholeAndLeavesNoTemporaryFile) {
    write(path("out.json"), "old");
    write_output_file("--json", path("out.json"), "new text");
    EXPECT_EQ(read(path("out.json")), "new text");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, CreatesMissingFoldersWhenWriting) {
    write_output_file("-o", path("a/b/page.html"), "x");
    EXPECT_EQ(read(path("a/b/page.html")), "x");
}

TEST_F(OutputFile, AFullDiskLeavesThePreviousFileIntact) {
    // A file size limit makes the write fail as a full disk would (EFBIG instead of
    // ENOSPC); the limit is set in a child process so that this one is not affected.
    const std::string previous(3000, 'p');
    write(path("last-run.json"), previous);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{1024, 1024};
        setrlimit(RLIMIT_FSIZE, &limit);
        try {
            write_output_file("--json", path("last-run.json"), std::string(8192, 'n'));
            _exit(1);  // no error: wrong
        } catch (const output_error& e) {
            _exit(std::string(e.what()).find("unchanged") != std::string::npos ? 0 : 2);
        }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the write must fail with an error saying the old file is unchanged";
    EXPECT_EQ(read(path("last-run.json")), previous);
    EXPECT_EQ(entries(), 1u) << "no temporary file left";
}

TEST_F(OutputFile, ADeviceThatIsFullIsAnError) {
    EXPECT_THROW(write_output_file("--csv", "/dev/full", "a,b\n"), output_error);
    EXPECT_NO_THROW(write_output_file("--csv", "/dev/null", "a,b\n"));
    EXPECT_TRUE(fs::is_character_file("/dev/null")) << "a device is written in place, never replaced";
}

TEST_F(OutputFile, ASymbolicLinkStaysALinkAndItsTargetGetsTheText) {
    write(path("real.html"), "old");
    fs::create_symlink("real.html", path("link.html"));
    write_output_file("-o", path("link.html"), "page");
    EXPECT_TRUE(fs::is_symlink(path("link.html")));
    EXPECT_EQ(read(path("real.html")), "page");
}

TEST_F(OutputFile, PathsThatCannotTakeOutputAreRefusedBeforeAnythingRuns) {
    write(path("plain"), "x");
    EXPECT_THROW(check_output_path("--json", dir_.string()), output_error) << "a folder";
    EXPECT_THROW(check_output_path("--json", path("plain/under.json")), output_error) << "under a file";
    EXPECT_THROW(check_output_path("--json", path("plain/deeper/under.json")), output_error);
    EXPECT_THROW(check_output_path("--json", ""), output_error);
    EXPECT_NO_THROW(check_output_path("--json", path("new/folder/run.json")));
    EXPECT_FALSE(fs::exists(path("new"))) << "checking creates nothing";
    EXPECT_NO_THROW(check_output_path("--json", "-"));
    EXPECT_EQ(read(path("plain")), "x");
}

TEST_F(OutputFile, PathsWithQuotesAndSpacesAreJustNames) {
    const std::string odd = path("it's \"quoted\" $(touch PWNED).json");
    write_output_file("--json", odd, "{}");
    EXPECT_EQ(read(odd), "{}");
    EXPECT_FALSE(fs::exists(path("PWNED")));
    EXPECT_FALSE(fs::exists("PWNED"));
}

TEST_F(OutputFile, AnOutputThatIsAnInputOrAnotherOutputIsRefused) {
    write(path("history.db"), "db");
    fs::create_symlink("history.db", path("alias.db"));
    fs::create_hard_link(path("history.db"), path("hard.db"));
    const std::string same_spelled_otherwise = (dir_ / "." / "history.db").string();
    EXPECT_THROW(check_distinct({{"--json", path("history.db")}, {"--db", path("history.db")}}), output_error);
    EXPECT_THROW(check_distinct({{"--json", same_spelled_otherwise}, {"--db", path("history.db")}}), output_error);
    EXPECT_THROW(check_distinct({{"-o", path("alias.db")}}, {{"--db", path("history.db")}}), output_error);
    EXPECT_THROW(check_distinct({{"-o", path("hard.db")}}, {{"--db", path("history.db")}}), output_error);
    EXPECT_THROW(check_distinct({{"--json", path("new.json")}, {"--csv", path("new.json")}}), output_error)
        << "two outputs to one new file";
    EXPECT_THROW(check_distinct({{"--json", "-"}, {"--csv", "-"}}), output_error);
    EXPECT_NO_THROW(check_distinct({{"--json", path("a.json")}, {"--csv", path("a.csv")}, {"--db", path("h.db")}}));
    try {
        check_distinct({{"-o", path("history.db")}}, {{"--db", path("history.db")}});
    } catch (const output_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("-o"), std::string::npos) << what;
        EXPECT_NE(what.find("input --db"), std::string::npos) << what;
    }
    EXPECT_EQ(read(path("history.db")), "db");
}

TEST(PrintableUtf8, AcceptsTextAndRefusesBrokenBytesAndControls) {
    EXPECT_TRUE(is_printable_utf8(""));
    EXPECT_TRUE(is_printable_utf8("v1.2 \xc2\xb5s caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"));
    EXPECT_FALSE(is_printable_utf8("\xff"));
    EXPECT_FALSE(is_printable_utf8("abc\xc3"));  // cut in the middle of a character
    EXPECT_FALSE(is_printable_utf8("\xc0\xaf"));  // overlong '/'
    EXPECT_FALSE(is_printable_utf8("\xed\xa0\x80"));  // a surrogate
    EXPECT_FALSE(is_printable_utf8("line\nbreak"));
    EXPECT_FALSE(is_printable_utf8(std::string("nul\0byte", 8)));
}

// Several outputs of one command: a failure on any of them replaces none of the files.
TEST_F(OutputFile, AnOutputSetThatFailsOnADeviceReplacesNoFileAndLeavesNoTemporaryFile) {
    write(path("a.json"), "old a");
    write(path("b.html"), "old b");
    contend::lab::output_set set;
    set.add("--json", path("a.json"), "new a");
    set.add("--html", path("b.html"), "new b");
    set.add("--markdown", "/dev/full", "# report\n");
    EXPECT_EQ(entries(), 4u) << "the two temporary files are written before the commit";
    try {
        set.commit();
        ADD_FAILURE() << "a write to /dev/full must fail";
    } catch (const contend::lab::output_write_error& e) {
        EXPECT_NE(std::string(e.what()).find("--markdown /dev/full"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no output file was replaced"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read(path("a.json")), "old a");
    EXPECT_EQ(read(path("b.html")), "old b");
    EXPECT_EQ(entries(), 2u) << "no temporary file left";
}

TEST_F(OutputFile, AnOutputSetThatFailsWhileAddingReplacesNoFileOnceDestroyed) {
    write(path("a.json"), "old a");
    write(path("big.md"), "old big");
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{1024, 1024};
        setrlimit(RLIMIT_FSIZE, &limit);
        try {
            contend::lab::output_set set;
            set.add("--json", path("a.json"), "new a");
            set.add("--markdown", path("big.md"), std::string(8192, 'n'));
            _exit(1);  // no error: wrong
        } catch (const contend::lab::output_write_error&) {
            _exit(0);
        }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the second file's write must fail";
    EXPECT_EQ(read(path("a.json")), "old a");
    EXPECT_EQ(read(path("big.md")), "old big");
    EXPECT_EQ(entries(), 2u) << "no temporary file left";
}

TEST_F(OutputFile, AnOutputSetReplacesEveryFileOnCommitAndRemoveTemporaryOutputRemovesEveryPendingFile) {
    write(path("a.json"), "old a");
    {
        contend::lab::output_set set;
        set.add("--json", path("a.json"), "new a");
        set.add("--html", path("sub/b.html"), "new b");
        set.commit();
    }
    EXPECT_EQ(read(path("a.json")), "new a");
    EXPECT_EQ(read(path("sub/b.html")), "new b");
    EXPECT_EQ(entries(), 2u);

    contend::lab::output_set pending;
    pending.add("--json", path("a.json"), "newer a");
    pending.add("--csv", path("c.csv"), "c");
    EXPECT_EQ(entries(), 4u);
    contend::lab::remove_temporary_output();  // what a second signal's handler does
    EXPECT_EQ(entries(), 2u) << "both temporary files removed";
    EXPECT_EQ(read(path("a.json")), "new a");
}

// A label is a column of `history list` and a cell of every report: a TAB splits the column,
// U+0085 is a line break to some readers, an unterminated U+202E reverses what follows it.
TEST(PrintableUtf8, RefusesTabC1ControlsAndBidirectionalControls) {
    EXPECT_FALSE(is_printable_utf8("a\tb"));
    EXPECT_FALSE(is_printable_utf8("next\xc2\x85line"));  // U+0085
    EXPECT_FALSE(is_printable_utf8("\xc2\x9f"));  // U+009F
    for (const char* bidi : {"\xe2\x80\xaa", "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa9"})
        EXPECT_FALSE(is_printable_utf8(std::string("gnp.") + bidi + "exe")) << bidi;
    EXPECT_TRUE(is_printable_utf8("\xc2\xa0nbsp"));  // U+00A0 is no control
}

// Issue item 20: the bidirectional marks U+200E, U+200F and U+061C reorder a line as the
// overrides do, and U+2028 and U+2029 break it (Unicode's mandatory breaks, JavaScript's line
// terminators): all were accepted in labels.
TEST(PrintableUtf8, RefusesBidirectionalMarksAndLineSeparators) {
    for (const char* mark : {"\xe2\x80\x8e", "\xe2\x80\x8f", "\xd8\x9c", "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
        EXPECT_FALSE(is_printable_utf8(std::string("a") + mark + "b")) << mark;
        EXPECT_EQ(contend::lab::message_text(std::string("a") + mark).find(mark), std::string::npos) << mark;
    }
}

TEST(MessageText, EscapesControlsAndCutsLongTextAtACharacter) {
    using contend::lab::message_text;
    EXPECT_EQ(message_text(std::string("BM_a\0b", 6)), "BM_a\\x00b");
    EXPECT_EQ(message_text("tab\there"), "tab\\x09here");
    EXPECT_EQ(message_text("r\xe2\x80\xae"
                           "evil"),
              "r\\u{202E}evil");
    EXPECT_EQ(message_text("\xff"), "\\xFF");
    EXPECT_EQ(message_text("caf\xc3\xa9"), "caf\xc3\xa9");
    const std::string huge(1 << 20, 'x');
    const std::string cut = message_text(huge);
    EXPECT_EQ(cut, std::string(200, 'x') + "... (1048576 bytes)");
    EXPECT_EQ(message_text("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9... (4 bytes)");  // never half a character
    EXPECT_EQ(message_text(huge, std::string::npos).size(), huge.size());
}

}  // namespace

TEST(OutputTail, KeepsTheEndOfAProgramsOutputOnOneLineWithItsControlsEscaped) {
    using contend::lab::output_tail;
    EXPECT_EQ(output_tail("one\ntwo\r\n"), "one two  ");
    EXPECT_EQ(output_tail("abcdefghij", 4), "...ghij");
    EXPECT_EQ(output_tail("ok \x1b[31mred"), "ok \\x1B[31mred");
    EXPECT_EQ(output_tail(""), "");
}
