// A fresh folder for one run's scratch files, made with mkdtemp under $TMPDIR when that is an
// absolute path, else /tmp, and removed with everything in it by the destructor. Private (mode
// 0700); with `writable_by_all`, 0733, so that a program that drops its privileges (a daemon
// started as root that becomes `nobody`) can still write there (others cannot list it).
// contend run's profile folders and the programs suite's scratch folders are made here.
//
// Folders a killed process left: the owner holds an flock on its folder for the folder's
// life (the kernel drops it when the process ends, however it ends, SIGKILL included). Making
// a folder first removes every folder of the same prefix under the same base that is ours
// (same user), is over a minute old, and whose lock it can take: its owner is gone. A
// minute, because between mkdtemp and the flock a new folder is unlocked; a lock, not a
// pid, because a pid may be another's by now or live in another pid namespace.
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
    int lock_fd_ = -1;  // the folder, open and flocked (LOCK_SH) while it is ours
};

// Removes the folders "<base>/<prefix>??????" (mkdtemp's six characters) whose owner ended
// (see above): those over `min_age_s` old that are ours and unlocked. Returns how many it
// removed. Errors are skipped: a sweep is tidying, never a reason to fail a run.
int sweep_abandoned_folders(const std::string& base, std::string_view prefix, double min_age_s = 60);

}  // namespace contend::lab
