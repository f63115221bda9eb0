#include "os/temp_folder.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace contend::lab {

temp_folder::temp_folder(std::string_view prefix, bool writable_by_all) {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t && *t == '/') base = t;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    std::string pattern = base + "/" + std::string(prefix) + "XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw std::system_error(errno, std::generic_category(), "cannot create a folder in " + base);
    path_ = pattern;
    if (writable_by_all && ::chmod(path_.c_str(), 0733) != 0) {
        const int e = errno;
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
        throw std::system_error(e, std::generic_category(), "cannot open the folder " + path_ + " to all users");
    }
}

temp_folder::~temp_folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace contend::lab
