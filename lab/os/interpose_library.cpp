// The interposition library's locks, its place and the environment that preloads it.
#include "os/interpose_library.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "interpose/interpose_locks.hpp"

#ifndef CONTEND_INTERPOSE_BUILD_PATH
#define CONTEND_INTERPOSE_BUILD_PATH ""
#endif
#ifndef CONTEND_INTERPOSE_INSTALL_LIBDIR
#define CONTEND_INTERPOSE_INSTALL_LIBDIR "lib"
#endif

extern char** environ;

namespace contend::lab {
namespace {

constexpr const char* library_file = "libcontend_interpose.so";

}  // namespace

const std::vector<interpose_lock>& interpose_locks() {
    static const std::vector<interpose_lock> locks = {
#define CONTEND_INTERPOSE_LOCK_ENTRY(name, alias, type, description) {#name, alias, description},
        CONTEND_INTERPOSE_LOCKS(CONTEND_INTERPOSE_LOCK_ENTRY)
#undef CONTEND_INTERPOSE_LOCK_ENTRY
    };
    return locks;
}

const std::vector<std::string>& interpose_lock_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const auto& l : interpose_locks()) n.push_back(l.name);
        return n;
    }();
    return names;
}

std::string interpose_lock_named(std::string_view given) {
    for (const auto& l : interpose_locks())
        if (given == l.name || (!l.alias.empty() && given == l.alias)) return l.name;
    return "";
}

std::string find_interpose_library() {
    if (const char* given = std::getenv("CONTEND_INTERPOSE_LIBRARY"); given && *given) {
        if (!std::filesystem::path(given).is_absolute() || access(given, R_OK) != 0)
            throw std::runtime_error(std::string("CONTEND_INTERPOSE_LIBRARY=") + given +
                                     ": not an absolute path to a readable file");
        return given;
    }
    std::vector<std::filesystem::path> tried;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) tried.push_back(self.parent_path().parent_path() / CONTEND_INTERPOSE_INSTALL_LIBDIR / library_file);
    if (*CONTEND_INTERPOSE_BUILD_PATH) tried.emplace_back(CONTEND_INTERPOSE_BUILD_PATH);
    for (const auto& p : tried)
        if (access(p.c_str(), R_OK) == 0) return p.string();
    std::string where;
    for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
    throw std::runtime_error(std::string("the interposition library ") + library_file + " was not found (looked at " +
                             (where.empty() ? "nothing" : where) +
                             "; set CONTEND_INTERPOSE_LIBRARY to its absolute path)");
}

std::string preload_value(std::string_view library, const char* inherited) {
    if (!inherited || !*inherited) return std::string(library);
    return std::string(inherited) + ' ' + std::string(library);
}

std::vector<std::string> preloaded_environment(std::string_view library, std::string_view lock,
                                               const std::string& profile_path, const std::string& run_dir) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view v(*e);
        if (v.starts_with("LD_PRELOAD=") || v.starts_with("CONTEND_INTERPOSE_LOCK=") ||
            v.starts_with("CONTEND_INTERPOSE_PROFILE=") || v.starts_with("CONTEND_INTERPOSE_RUN_DIR="))
            continue;
        env.emplace_back(v);
    }
    env.push_back("LD_PRELOAD=" + preload_value(library, std::getenv("LD_PRELOAD")));
    env.push_back("CONTEND_INTERPOSE_LOCK=" + interpose_lock_named(lock));
    if (!profile_path.empty()) env.push_back("CONTEND_INTERPOSE_PROFILE=" + profile_path);
    if (!run_dir.empty()) env.push_back("CONTEND_INTERPOSE_RUN_DIR=" + run_dir);
    return env;
}

}  // namespace contend::lab
