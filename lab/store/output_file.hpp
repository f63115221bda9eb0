// Writing an output file so that no failure loses what was there before: a results file, a
// CSV, a report page. Internal to the lab.
//
// A path names an output as the user gave it:
//  - "-" is standard output;
//  - an existing file that is not a regular file (a character device such as /dev/null or
//    /dev/full, a FIFO) is written in place, every error of the write and the close checked;
//  - anything else is written to a new temporary file in the target's folder, flushed to
//    disk, checked (its size must be what was written) and renamed over the target, so the
//    target holds either its old bytes or all the new ones. A symbolic link is followed: the
//    file it points to is replaced and the link stays a link.
#pragma once

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contend::lab {

// Every error of this file: says which output (`what`, e.g. "--json") and which path.
class output_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Before anything runs: can `path` take output? A folder, a path under a regular file, a
// folder that cannot be created or written, an existing device that cannot be written are
// refused with the reason. Creates nothing: missing folders are made when the output is
// written.
void check_output_path(const std::string& what, const std::string& path);

// Outputs must differ from each other and from every input: the same file reached by two
// spellings, a symbolic link or a hard link counts as the same. "-" (standard output) may be
// named once. Throws output_error naming both roles.
struct named_path {
    std::string what;  // "--json", "--db", "-o"
    std::string path;
};
void check_distinct(const std::vector<named_path>& outputs, const std::vector<named_path>& inputs = {});

// Thrown when an output could not be written (a full disk, a file size limit, a closed pipe,
// a failed rename): the paths were fine when checked, the write itself failed. The CLI's
// exit status 4, where check_output_path's and check_distinct's refusals are bad arguments.
class output_write_error : public output_error {
public:
    using output_error::output_error;
};

// Writes `text` as described above. Throws output_write_error; the target is then unchanged
// (a regular file) or partly written (a device or FIFO, which cannot be replaced).
void write_output_file(const std::string& what, const std::string& path, std::string_view text);

// Several outputs of one command written all or nothing, in two phases: add() writes each
// regular file's text to its temporary file beside the target (flushed and checked as
// write_output_file does); commit() then writes the outputs that cannot be replaced (standard
// output, devices, FIFOs) and, when they all succeeded, renames every temporary file over its
// target with the stop signals held. A failure before the renames (in add or in commit)
// replaces no file: every temporary file is removed and output_write_error says so. A rename
// cannot be undone, so one that fails after others succeeded (rare: each temporary file is in
// its target's folder) names the files already replaced. Destroyed without commit(), or after
// a failure, the set removes its temporary files. At most max_pending files are pending at
// once (remove_temporary_output keeps their names in fixed storage).
class output_set {
public:
    static constexpr std::size_t max_pending = 8;

    output_set() = default;
    ~output_set();
    output_set(const output_set&) = delete;
    output_set& operator=(const output_set&) = delete;

    // `what` names the output in messages ("--json"); `path` as for write_output_file.
    void add(const std::string& what, const std::string& path, std::string_view text);
    void commit();

private:
    struct in_place {  // standard output, a device or a FIFO: written by commit
        std::string what, path, target, text;
    };
    struct replacement {  // a temporary file written by add, renamed by commit
        std::string what, path, temporary, target;
    };
    void discard() noexcept;

    std::vector<in_place> in_place_;
    std::vector<replacement> replacements_;
};

// Stopping on a signal. After stop_outputs_on(&flag), write_output_file looks at `flag`
// (the number of a signal that asked the process to stop, 0 until one does) before it writes
// and again before a new file replaces the old one: once it is set, it writes nothing more,
// removes its temporary file and throws interrupted (interrupted.hpp), the target unchanged.
// Null (the default) never stops. Set once, before any output is written.
void stop_outputs_on(const std::atomic<int>* flag);

// Removes the temporary files that write_output_file or an output_set are writing now, if any. Safe in a signal
// handler (it only calls unlink): a handler about to end the process calls it so that no
// .NAME.tmp.XXXXXX file is left beside the target. The signals SIGINT, SIGTERM and SIGHUP are
// held back while the temporary file is created and while it is renamed, so that the name
// it knows is always the file's.
void remove_temporary_output() noexcept;

}  // namespace contend::lab
