// A fresh folder for one run's scratch files, made with mkdtemp under $TMPDIR when that is an
// absolute path, else /tmp, and removed with everything in it by the destructor. Private (mode
// 0700); with `writable_by_all`, 0733, so that a program that drops its privileges (a daemon
// started as root that becomes `nobody`) can still write there (others cannot list it).
// contend run's profile folders and the programs suite's scratch folders are made here.
#pragma once

#include <string>
#include <string_view>

namespace contend::lab {

class temp_folder {
public:
    // `prefix` names the folder: "<base>/<prefix>XXXXXX". Throws std::system_error saying
    // where, when the folder cannot be made or opened to all.
    explicit temp_folder(std::string_view prefix, bool writable_by_all = false);
    ~temp_folder();
    temp_folder(const temp_folder&) = delete;
    temp_folder& operator=(const temp_folder&) = delete;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

}  // namespace contend::lab
