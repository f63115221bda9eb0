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

// Writes `text` as described above. Throws output_error; the target is then unchanged
// (a regular file) or partly written (a device or FIFO, which cannot be replaced).
void write_output_file(const std::string& what, const std::string& path, std::string_view text);

// Stopping on a signal. After stop_outputs_on(&flag), write_output_file looks at `flag`
// (the number of a signal that asked the process to stop, 0 until one does) before it writes
// and again before a new file replaces the old one: once it is set, it writes nothing more,
// removes its temporary file and throws interrupted (interrupted.hpp), the target unchanged.
// Null (the default) never stops. Set once, before any output is written.
void stop_outputs_on(const std::atomic<int>* flag);

// Removes the temporary file that write_output_file is writing now, if any. Safe in a signal
// handler (it only calls unlink): a handler about to end the process calls it so that no
// .NAME.tmp.XXXXXX file is left beside the target. The signals SIGINT, SIGTERM and SIGHUP are
// held back while the temporary file is created and while it is renamed, so that the name
// it knows is always the file's.
void remove_temporary_output() noexcept;

// Whether `text` is valid UTF-8 without control characters: what a label must be to travel
// through JSON, CSV, SQLite, HTML and a terminal unchanged and unambiguous. Refused: the C0
// controls (TAB included: it splits a column), DEL, the C1 controls U+0080..U+009F (U+0085 is
// a line break to some readers), and the bidirectional embeddings, overrides and isolates
// U+202A..U+202E, U+2066..U+2069 (an unterminated U+202E reverses the rest of a line).
bool is_printable_utf8(std::string_view text);

// `text` made safe and short for a message: control bytes, DEL and bytes that are not UTF-8
// as \xNN, C1 controls and bidirectional controls as \u{NNNN}, so that a NUL neither cuts the
// message nor a U+202E reverses it; past `max_bytes` of the result it is cut (at a character)
// and "... (N bytes)" says how long it was. std::string::npos: never cut.
std::string message_text(std::string_view text, std::size_t max_bytes = 200);

}  // namespace contend::lab
