#include "store/output_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "os/write_all.hpp"
#include "store/interrupted.hpp"

namespace contend::lab {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
    throw output_error(what + " " + path + ": " + why);
}

std::string errno_text(int error) { return std::strerror(error); }

[[noreturn]] void fail_write(const std::string& what, const std::string& path, const std::string& why) {
    throw output_write_error(what + " " + path + ": " + why);
}

std::atomic<const std::atomic<int>*> stop_flag{nullptr};

// The temporary files being written, for remove_temporary_output in a signal handler: their
// names in fixed buffers (a handler may not allocate) and whether each slot holds one now.
constexpr std::size_t slots = output_set::max_pending;
char temporary_name[slots][4096];
std::atomic<bool> temporary_exists[slots];
static_assert(std::atomic<bool>::is_always_lock_free, "read in a signal handler");

void throw_if_stopped_writing(const std::string& what, const std::string& path) {
    throw_if_stopped(stop_flag.load(),
                     what + " " + path + " was not written (the previous file, if any, is unchanged)");
}

// Holds back the stop signals for its lifetime: what happens inside is not cut in two by a
// handler that looks at its result.
class stop_signals_held {
public:
    stop_signals_held() {
        sigset_t held;
        sigemptyset(&held);
        for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&held, sig);
        pthread_sigmask(SIG_BLOCK, &held, &previous_);
    }
    ~stop_signals_held() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
    stop_signals_held(const stop_signals_held&) = delete;
    stop_signals_held& operator=(const stop_signals_held&) = delete;

private:
    sigset_t previous_;
};

// mkstemp on `pattern`, the file's name recorded for remove_temporary_output in a free slot
// when it fits the buffer (a path that long is left to the usual clean-up). Returns the
// descriptor or -1.
int create_temporary(std::string& pattern) {
    const stop_signals_held held;
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0 || pattern.size() >= sizeof temporary_name[0]) return fd;
    for (std::size_t i = 0; i < slots; ++i) {
        if (temporary_exists[i].load()) continue;
        std::memcpy(temporary_name[i], pattern.c_str(), pattern.size() + 1);
        temporary_exists[i].store(true);
        break;
    }
    return fd;
}

// The temporary file `name` is gone (renamed or removed): forget it.
void forget_temporary(const std::string& name) {
    for (std::size_t i = 0; i < slots; ++i)
        if (temporary_exists[i].load() && name == temporary_name[i]) temporary_exists[i].store(false);
}

void remove_temporary(const std::string& name) noexcept {
    ::unlink(name.c_str());
    forget_temporary(name);
}

// The file a path finally names: symbolic links followed as far as they resolve.
fs::path target_of(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::absolute(path, ec);
    if (ec) return path;
    for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
        const fs::path link = fs::read_symlink(p, ec);
        if (ec) break;
        p = link.is_absolute() ? link : p.parent_path() / link;
    }
    return p.lexically_normal();
}

// Whether a stop signal came: write_all then gives up on an EINTR (a FIFO nobody reads
// blocks until a signal) and returns it.
bool stop_requested() {
    const std::atomic<int>* flag = stop_flag.load();
    return flag != nullptr && flag->load() != 0;
}

// Standard output ("-"), or an existing file that is not a regular file (a device, a FIFO):
// written where it is, every error of the write and the close checked.
void write_in_place(const std::string& what, const std::string& path, const std::string& target,
                    std::string_view text) {
    if (path == "-") {
        // What stdio holds goes first, so the text lands after it; a failure there is this
        // output's failure too.
        if (std::fflush(stdout) != 0) fail_write(what, "(standard output)", "cannot write: " + errno_text(errno));
        if (const int error = write_all(STDOUT_FILENO, text, stop_requested); error != 0) {
            if (error == EINTR) throw_if_stopped_writing(what, "(standard output)");
            fail_write(what, "(standard output)", "cannot write: " + errno_text(error));
        }
        return;
    }
    // Opening a FIFO blocks until a reader comes: a stop signal ends the wait (no SA_RESTART).
    int fd = -1;
    while ((fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC)) < 0 && errno == EINTR)
        throw_if_stopped_writing(what, path);
    if (fd < 0) fail_write(what, path, "cannot open: " + errno_text(errno));
    int error = write_all(fd, text, stop_requested);
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error == EINTR) throw_if_stopped_writing(what, path);
    if (error != 0) fail_write(what, path, "cannot write: " + errno_text(error));
}

// Writes `text` to a new temporary file beside `target`, flushed to disk and checked, and
// returns its name; throws (the temporary file removed) when any of that fails.
std::string write_temporary(const std::string& what, const std::string& path, const fs::path& target,
                            std::string_view text) {
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    // Appends only: GCC 12 warns (-Wrestrict, a false positive) on "." + std::string&&.
    std::string name = ".";
    name.append(target.filename().string()).append(".tmp.XXXXXX");
    std::string pattern = (folder / name).string();
    throw_if_stopped_writing(what, path);
    const int fd = create_temporary(pattern);
    if (fd < 0)
        fail_write(what, path, "cannot create a temporary file in " + folder.string() + ": " + errno_text(errno));
    const std::string temporary = pattern;
    auto give_up = [&](const std::string& why) {
        ::close(fd);
        remove_temporary(temporary);
        fail_write(what, path, why + " (the previous file, if any, is unchanged)");
    };
    // The new file gets the old one's permissions, or what a plain create would give.
    struct stat old {};
    mode_t mode = 0;
    if (::stat(target.c_str(), &old) == 0) {
        mode = old.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    if (::fchmod(fd, mode) != 0) give_up("cannot set permissions: " + errno_text(errno));
    if (const int error = write_all(fd, text, stop_requested); error != 0) {
        if (error == EINTR) {
            ::close(fd);
            remove_temporary(temporary);
            throw_if_stopped_writing(what, path);
        }
        give_up("cannot write: " + errno_text(error));
    }
    if (::fsync(fd) != 0) give_up("cannot flush to disk: " + errno_text(errno));
    struct stat written {};
    if (::fstat(fd, &written) != 0) give_up("cannot check the written file: " + errno_text(errno));
    if (static_cast<std::size_t>(written.st_size) != text.size())
        give_up("the written file holds " + std::to_string(written.st_size) + " bytes, not " +
                std::to_string(text.size()));
    if (::close(fd) != 0) {
        const int error = errno;
        remove_temporary(temporary);
        fail_write(what, path, "cannot write: " + errno_text(error) + " (the previous file, if any, is unchanged)");
    }
    return temporary;
}

// Identity of an existing file, or of the path a new one would get.
struct identity {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    std::string path;  // canonical spelling when it does not exist yet

    bool same_as(const identity& other) const {
        if (exists && other.exists) return device == other.device && inode == other.inode;
        return !exists && !other.exists && path == other.path;
    }
};

identity identify(const std::string& path) {
    identity id;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        id.exists = true;
        id.device = st.st_dev;
        id.inode = st.st_ino;
    }
    std::error_code ec;
    id.path = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
    return id;
}

}  // namespace

void check_output_path(const std::string& what, const std::string& path) {
    if (path.empty()) fail(what, "\"\"", "an empty path");
    if (path == "-") return;
    const fs::path target = target_of(path);
    std::error_code ec;
    const auto status = fs::status(target, ec);
    if (status.type() == fs::file_type::directory) fail(what, path, "is a folder");
    if (status.type() != fs::file_type::not_found && status.type() != fs::file_type::regular) {
        // A device or FIFO is written in place: it must be writable now.
        if (::access(target.c_str(), W_OK) != 0) fail(what, path, "cannot write: " + errno_text(errno));
        return;
    }
    // The nearest folder that exists must be a folder (not a file) where a new file or
    // folder can be made: missing folders are created when the output is written.
    fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    for (;;) {
        const auto s = fs::status(folder, ec);
        if (s.type() == fs::file_type::directory) break;
        if (s.type() != fs::file_type::not_found) fail(what, path, folder.string() + " is not a folder");
        if (!folder.has_parent_path() || folder == folder.parent_path()) break;
        folder = folder.parent_path();
    }
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
        fail(what, path, "cannot write in the folder " + folder.string() + ": " + errno_text(errno));
}

void check_distinct(const std::vector<named_path>& outputs, const std::vector<named_path>& inputs) {
    std::vector<std::pair<const named_path*, identity>> seen;
    for (const auto& in : inputs) seen.emplace_back(&in, identify(in.path));
    const std::size_t input_count = seen.size();
    bool stdout_taken = false;
    for (const auto& out : outputs) {
        if (out.path == "-") {
            if (stdout_taken)
                throw output_error("only one output may go to standard output ('-'); " + out.what + " is the second");
            stdout_taken = true;
            continue;
        }
        const identity id = identify(out.path);
        for (std::size_t i = 0; i < seen.size(); ++i) {
            if (!seen[i].second.same_as(id)) continue;
            const named_path& other = *seen[i].first;
            throw output_error(out.what + " " + out.path + " is the same file as " +
                               (i < input_count ? "the input " : "the output ") + other.what + " " + other.path +
                               ": refusing to overwrite it; nothing was run or written");
        }
        seen.emplace_back(&out, id);
    }
}

void stop_outputs_on(const std::atomic<int>* flag) { stop_flag.store(flag); }

void remove_temporary_output() noexcept {
    for (std::size_t i = 0; i < slots; ++i)
        if (temporary_exists[i].load()) ::unlink(temporary_name[i]);
}

output_set::~output_set() { discard(); }

void output_set::discard() noexcept {
    for (const auto& r : replacements_) remove_temporary(r.temporary);
    replacements_.clear();
    in_place_.clear();
}

void output_set::add(const std::string& what, const std::string& path, std::string_view text) {
    throw_if_stopped_writing(what, path == "-" ? "(standard output)" : path);
    if (path == "-") {
        in_place_.push_back({what, path, path, std::string(text)});
        return;
    }
    const fs::path target = target_of(path);
    std::error_code ec;
    const auto status = fs::status(target, ec);
    if (status.type() == fs::file_type::directory) fail_write(what, path, "is a folder");
    if (status.type() != fs::file_type::not_found && status.type() != fs::file_type::regular) {
        in_place_.push_back({what, path, target.string(), std::string(text)});
        return;
    }
    if (replacements_.size() == max_pending)
        throw std::logic_error("output_set: more than " + std::to_string(max_pending) + " files at once");
    if (target.has_parent_path()) {
        fs::create_directories(target.parent_path(), ec);
        if (ec)
            fail_write(what, path, "cannot create the folder " + target.parent_path().string() + ": " + ec.message());
    }
    const std::string temporary = write_temporary(what, path, target, text);
    replacements_.push_back({what, path, temporary, target.string()});
}

void output_set::commit() {
    // Nothing is replaced unless everything else was written: a failure below leaves every
    // target file as it was (the destructor removes the temporary files).
    const std::string none_replaced = replacements_.empty() ? "" : " (no output file was replaced)";
    for (const auto& out : in_place_) {
        try {
            write_in_place(out.what, out.path, out.target, out.text);
        } catch (const output_write_error& e) {
            discard();
            throw output_write_error(e.what() + none_replaced);
        }
    }
    in_place_.clear();
    // Renamed at once, with the stop signals held: a signal that came before is seen here and
    // replaces nothing, one that comes now waits until every file is in place.
    const stop_signals_held held;
    if (const auto* flag = stop_flag.load(); flag && flag->load() != 0 && !replacements_.empty()) {
        const std::string what = replacements_.front().what, path = replacements_.front().path;
        discard();
        throw_if_stopped_writing(what, path);
    }
    std::string replaced;
    for (std::size_t i = 0; i < replacements_.size(); ++i) {
        const replacement& r = replacements_[i];
        if (::rename(r.temporary.c_str(), r.target.c_str()) != 0) {
            const int error = errno;
            const std::string why =
                "cannot replace: " + errno_text(error) +
                (replaced.empty() ? std::string(" (no output file was replaced)")
                                  : " (the previous file is unchanged; already replaced: " + replaced + ")");
            const std::string what = r.what, path = r.path;
            replacements_.erase(replacements_.begin(), replacements_.begin() + static_cast<std::ptrdiff_t>(i));
            discard();
            fail_write(what, path, why);
        }
        forget_temporary(r.temporary);
        replaced += (replaced.empty() ? "" : ", ") + r.what + " " + r.path;
    }
    replacements_.clear();
}

void write_output_file(const std::string& what, const std::string& path, std::string_view text) {
    output_set one;
    one.add(what, path, text);
    one.commit();
}

}  // namespace contend::lab
