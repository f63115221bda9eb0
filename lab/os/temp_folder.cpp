#include "os/temp_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>

namespace contend::lab {
namespace {

std::string scratch_base() {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t && *t == '/') base = t;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return base;
}

}  // namespace

int sweep_abandoned_folders(const std::string& base, std::string_view prefix, double min_age_s) {
    int removed = 0;
    std::error_code ec;
    std::filesystem::directory_iterator it(base, ec), end;
    if (ec) return 0;
    const std::time_t now = std::time(nullptr);
    for (; it != end; it.increment(ec)) {
        if (ec) break;
        const std::string name = it->path().filename().string();
        if (name.size() != prefix.size() + 6 || !name.starts_with(prefix)) continue;
        // O_NOFOLLOW: a link of that name is not ours to follow.
        const int fd = ::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        const bool stale = ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() &&
                           static_cast<double>(now - st.st_mtime) >= min_age_s && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (stale) {
            std::error_code ignored;
            if (std::filesystem::remove_all(it->path(), ignored) > 0 && !ignored) ++removed;
        }
        ::close(fd);
    }
    return removed;
}

temp_folder::temp_folder(std::string_view prefix, bool writable_by_all) {
    const std::string base = scratch_base();
    sweep_abandoned_folders(base, prefix);
    std::string pattern = base + "/" + std::string(prefix) + "XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw std::system_error(errno, std::generic_category(), "cannot create a folder in " + base);
    path_ = pattern;
    // Held until the destructor; a folder we could not lock is only never swept.
    lock_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_SH);
    if (writable_by_all && ::chmod(path_.c_str(), 0733) != 0) {
        const int e = errno;
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
        if (lock_fd_ >= 0) ::close(lock_fd_);
        throw std::system_error(e, std::generic_category(), "cannot open the folder " + path_ + " to all users");
    }
}

temp_folder::~temp_folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace contend::lab
