// Scratch folders: a folder whose owner was killed is swept by the next one of its prefix; a
// live owner's, a young one's and another prefix's are kept.
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "os/temp_folder.hpp"
#include "temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace lab = contend::lab;

constexpr const char* prefix = "contend-sweep-test-";

class TempFolder : public contend_test::temp_dir_test {
protected:
    void SetUp() override {
        temp_dir_test::SetUp();
        const char* old = std::getenv("TMPDIR");
        had_tmpdir_ = old != nullptr;
        if (old) old_tmpdir_ = old;
        ::setenv("TMPDIR", dir_.c_str(), 1);
    }
    void TearDown() override {
        if (had_tmpdir_) ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
        else ::unsetenv("TMPDIR");
        temp_dir_test::TearDown();
    }
    // As if it were last changed two minutes ago.
    static void age(const std::string& folder) {
        timeval then[2];
        ::gettimeofday(&then[0], nullptr);
        then[0].tv_sec -= 120;
        then[1] = then[0];
        ASSERT_EQ(::utimes(folder.c_str(), then), 0) << folder;
    }

    bool had_tmpdir_ = false;
    std::string old_tmpdir_;
};

TEST_F(TempFolder, AFolderWhoseOwnerWasKilledIsRemovedWhenTheNextOfItsPrefixIsMade) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[0]);
        lab::temp_folder mine(prefix);
        if (::write(fds[1], mine.path().c_str(), mine.path().size()) < 0) ::_exit(1);
        ::close(fds[1]);
        for (;;) ::pause();  // until killed: its destructor never runs
    }
    ::close(fds[1]);
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    ::close(fds[0]);
    ASSERT_GT(n, 0);
    const std::string left(buffer, static_cast<std::size_t>(n));
    ::kill(child, SIGKILL);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
    ASSERT_TRUE(fs::is_directory(left)) << left;
    write(fs::path(left) / "profile.1234", "left behind");
    age(left);

    lab::temp_folder next(prefix);
    EXPECT_FALSE(fs::exists(left)) << left;
    EXPECT_TRUE(fs::is_directory(next.path()));
}

TEST_F(TempFolder, ALiveOwnersFolderIsKeptHoweverOld) {
    lab::temp_folder first(prefix);
    age(first.path());
    lab::temp_folder second(prefix);
    EXPECT_TRUE(fs::is_directory(first.path()));
    EXPECT_NE(first.path(), second.path());
}

TEST_F(TempFolder, AnUnlockedFolderIsKeptForItsFirstMinute) {
    // Between mkdtemp and its lock a new folder is unlocked: the minute covers that.
    const std::string young = path(std::string(prefix) + "Ab3dE6");
    ASSERT_TRUE(fs::create_directory(young));
    lab::temp_folder next(prefix);
    EXPECT_TRUE(fs::is_directory(young));
    age(young);
    EXPECT_EQ(lab::sweep_abandoned_folders(dir_.string(), prefix), 1);
    EXPECT_FALSE(fs::exists(young));
}

TEST_F(TempFolder, FoldersOfAnotherNameAndLinksAreKept) {
    const std::string longer = path(std::string(prefix) + "Ab3dE6x");
    const std::string other = path("contend-other-Ab3dE6");
    const std::string target = path("target");
    const std::string link = path(std::string(prefix) + "Link00");
    ASSERT_TRUE(fs::create_directory(longer));
    ASSERT_TRUE(fs::create_directory(other));
    ASSERT_TRUE(fs::create_directory(target));
    fs::create_directory_symlink(target, link);
    for (const auto& f : {longer, other, target}) age(f);
    EXPECT_EQ(lab::sweep_abandoned_folders(dir_.string(), prefix), 0);
    for (const auto& f : {longer, other, target, link}) EXPECT_TRUE(fs::exists(fs::symlink_status(f))) << f;
}

}  // namespace
