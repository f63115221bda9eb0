// `contend disasm` runs objdump on its own executable. Its path once went into a
// shell command line, so a folder named q'$(touch PWNED)'x ran a command and a folder
// named it's broke the quoting. These tests copy the built CLI into such folders and run
// the copy (without a shell themselves), then look for what an injection would leave.
#include "tools/disasm/disasm.hpp"
#include "measure/workload.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;
namespace lab = contend::lab;

namespace {

enum class kind { first, second };
template <kind K>
struct on_enum {};

struct outcome {
    int exit_code = -1;  // -1 when it did not exit normally
    std::string output;  // stdout and stderr together
};

// Runs argv[0] with these arguments, no shell in between, in the current directory.
outcome run_argv(std::vector<std::string> args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    outcome o;
    if (spawned != 0) {
        ::close(fds[0]);
        o.output = std::string("could not start: ") + std::strerror(spawned);
        return o;
    }
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        o.output.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
}

// Every file named PWNED under `dir`, as a readable list.
std::string pwned_files_under(const fs::path& dir) {
    std::string found;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.path().filename() == "PWNED") found += e.path().string() + "\n";
    return found;
}

class DisasmPath : public testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "contend_disasm_test_XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
        root_ = tmpl;
    }
    void TearDown() override {
        if (!root_.empty()) fs::remove_all(root_);
    }
    fs::path root_;
};

}  // namespace

TEST_P(DisasmPath, AFolderNameIsOnlyCharacters) {
    ASSERT_FALSE(fs::exists("PWNED")) << "a PWNED file is already in " << fs::current_path()
                                      << " (left by an earlier run?): remove it first";
    const fs::path folder = root_ / GetParam();
    fs::create_directory(folder);
    const fs::path copy = folder / "contend";
    fs::copy_file(CONTEND_CLI_PATH, copy);

    // From the temp dir (where a relative `touch PWNED` would land) and from the test's own
    // working directory, by absolute path.
    const fs::path cwd = fs::current_path();
    for (const auto& from : {root_, cwd}) {
        fs::current_path(from);
        const auto o = run_argv({copy.string(), "disasm", "counter", "contend_mutex"});
        fs::current_path(cwd);
        SCOPED_TRACE("run from " + from.string());
        ASSERT_EQ(o.exit_code, 0) << o.output;
        EXPECT_NE(o.output.find("locked_counter<contend::mutex>::run("), std::string::npos) << o.output;
        EXPECT_NE(o.output.find("counter/contend_mutex: "), std::string::npos) << o.output;
#if !defined(__SANITIZE_THREAD__)  // ThreadSanitizer turns every atomic into a call into its runtime
        EXPECT_NE(o.output.find("<== atomic"), std::string::npos) << o.output;
#endif
    }
    EXPECT_EQ(pwned_files_under(root_), "");
    EXPECT_FALSE(fs::exists(cwd / "PWNED"));
}

INSTANTIATE_TEST_SUITE_P(HostileFolder, DisasmPath, testing::Values("q'$(touch PWNED)'x", "it's"),
                         [](const auto& info) { return info.index == 0 ? "CommandSubstitution" : "Apostrophe"; });

TEST(DisasmObjdump, AFileObjdumpCannotReadIsAnErrorNotAnEmptyListing) {
    const fs::path dir = fs::temp_directory_path() / ("contend_disasm_bad_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    { std::ofstream(dir / "not_an_executable") << "plain text\n"; }
    EXPECT_THROW(lab::disassemble_run((dir / "not_an_executable").string(), "x"), std::runtime_error);
    EXPECT_THROW(lab::disassemble_run((dir / "no such file").string(), "x"), std::runtime_error);
    fs::remove_all(dir);
}

TEST(DisasmObjdump, AMissingObjdumpIsAClearError) {
    const fs::path empty = fs::temp_directory_path() / ("contend_disasm_nopath_" + std::to_string(::getpid()));
    fs::create_directories(empty);
    const char* old = std::getenv("PATH");
    const std::string saved = old ? old : "";
    ::setenv("PATH", empty.c_str(), 1);  // no objdump on it
    std::string message;
    try {
        lab::disassemble_run(CONTEND_CLI_PATH, "x");
    } catch (const std::runtime_error& e) {
        message = e.what();
    }
    if (old) ::setenv("PATH", saved.c_str(), 1);
    else ::unsetenv("PATH");
    fs::remove_all(empty);
    EXPECT_NE(message.find("objdump"), std::string::npos) << message;
}

TEST(DisasmObjdump, AFunctionNotInTheBinaryIsAnError) {
    try {
        lab::disassemble_run(CONTEND_CLI_PATH, "no_such_workload_type");
        FAIL() << "expected an error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("no function no_such_workload_type::run"), std::string::npos) << e.what();
    }
}

// `contend disasm` finds run() by its type's name as objdump -C prints it. The name came from
// __PRETTY_FUNCTION__, which spelled these two otherwise (an enum constant by name, where
// objdump prints a cast number; "long unsigned int"), and their loops were not found.
TEST(DisasmNames, ATypeIsNamedAsObjdumpNamesIt) {
    EXPECT_EQ(lab::demangled_type_name<std::atomic<unsigned long>>(), "std::atomic<unsigned long>");
    EXPECT_EQ(lab::demangled_type_name<on_enum<kind::second>>(),
              "(anonymous namespace)::on_enum<((anonymous namespace)::kind)1>");
    EXPECT_EQ(lab::demangled_type_name("not a mangled name"), "not a mangled name");
}
