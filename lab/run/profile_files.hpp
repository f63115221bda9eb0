// `contend run --profile`, the interposer's side of it: the files the interposition library
// leaves in the run's folder (one `<pid>.json` profile per process, its markers), read and
// checked, and the folder itself. The format: src/interpose/format/profile_format.hpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "os/temp_folder.hpp"
#include "profile_format.hpp"  // src/interpose/format/: the format, declared once for both sides

namespace contend::lab {

// The "format" every profile file names; a file of another format is refused.
inline constexpr std::string_view profile_format_name = contend::interpose::profile_format::format_name;

// A profile file that is not what the library writes: what() says what is wrong.
class profile_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where a lock was first contended, as the library saw it, and as addr2line named it.
struct lock_site {
    std::uint64_t address = 0;
    std::string module;  // "" when unknown
    std::uint64_t module_address = 0;
    std::string function;  // the library's dladdr name, "" when none
    // From addr2line (symbolize_sites): the innermost frame's function and "file:line" ("" when
    // it had none), and the function the call was inlined into, when it was ("" otherwise).
    std::string symbol, source, inlined_in;

    // As a table names it: "function at file:line", else the function, else
    // "module+0xoffset", else the address; control characters escaped.
    std::string text() const;
};

// A call stack that sampled contended waits of a lock came from: its frames innermost first
// (from the lock's caller outwards), how many of the sampled waits it took and their time.
struct lock_stack {
    std::vector<lock_site> frames;
    std::uint64_t samples = 0, wait_ns = 0;
};

// One mutex of one process: counts and durations (ns) as the file holds them.
struct lock_profile {
    std::int64_t pid = 0;
    std::uint64_t address = 0;
    std::uint64_t acquisitions = 0, contended = 0, wait_ns = 0, wait_p99_ns = 0, wait_max_ns = 0;
    std::uint64_t hold_samples = 0, hold_sampled_ns = 0, hold_p99_ns = 0;
    // The distributions' other points (0 in a file written before they were).
    std::uint64_t wait_p50_ns = 0, wait_p90_ns = 0, hold_p50_ns = 0, hold_p90_ns = 0, hold_max_ns = 0;
    lock_site site;
    // The sampled waits' call stacks, most wait first, and the contended waits by the library's
    // log-linear bucket (its lower bound in ns, its count), in order; both empty in a file
    // written before them.
    std::vector<lock_stack> stacks;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> wait_histogram;
    // A pthread rwlock (the file's "kind": "rwlock"): the counts above are its reads and
    // writes together, these each mode's; all 0 for a mutex.
    bool rwlock = false;
    std::uint64_t read_acquisitions = 0, read_contended = 0, read_timeouts = 0, read_wait_ns = 0;
    std::uint64_t write_acquisitions = 0, write_contended = 0, write_timeouts = 0, write_wait_ns = 0;

    // hold_sampled_ns / hold_samples * acquisitions; NaN without a sampled hold.
    double estimated_hold_ns() const;
    // The site as the table names it (lock_site::text).
    std::string site_text() const;
};

// One process's file.
struct process_profile {
    std::int64_t pid = 0;
    std::string executable, lock;
    double seconds = 0;
    std::uint64_t hold_sample_period = 0;
    std::uint64_t stack_sample_period = 0;  // 0 in a file from before the stacks, or with them off
    std::uint64_t acquisitions = 0, contended = 0, trylock_busy = 0, timeouts = 0, wait_ns = 0, locks_dropped = 0;
    // Of the acquisitions, the rwlocks' reads and writes (0 in a file from before rwlocks).
    std::uint64_t read_acquisitions = 0, write_acquisitions = 0;
    std::vector<lock_profile> locks;
};

// Parses the text of one file. Refuses (profile_error) anything but one object of the format
// above: another "format", a missing or mistyped field, a count that is not a whole number
// >= 0 (or past 2^64), an address that is not a hex string, duplicate keys, a lock "kind"
// other than "rwlock". Unknown fields are ignored: a later library may add some without
// changing the format's name; the rwlocks' fields are optional (files from before them).
process_profile parse_profile(std::string_view text);

// What a profile folder held: the processes read (by pid), and one line per file that could
// not be read ("1234.json: why"). Only names `<pid>.json` and `<pid>-<n>.json` (the profile
// of an image that then exec'd) are read; the library's temporary files
// (`.<pid>.json.tmp`), its markers and anything else are skipped. A file is read only when
// it is a regular file (not a FIFO, which would block, nor a symbolic link) of at most
// max_profile_bytes, and its "pid" must be the one in its name.
struct profile_folder {
    std::vector<process_profile> processes;
    std::vector<std::string> errors;
};
inline constexpr std::size_t max_profile_bytes = 64 << 20;
profile_folder read_profile_folder(const std::string& folder);

// What the library told contend run through the run folder (CONTEND_INTERPOSE_RUN_DIR and
// CONTEND_INTERPOSE_PROFILE): each process image that loaded it, with the lock it took
// (`<pid>.loaded.<lock>`), and each process that locked with the profile on and left no
// profile (`<pid>.running`: killed by a signal, still running when the program ended, or its
// write failed), sorted by pid.
struct run_markers {
    std::vector<std::pair<std::int64_t, std::string>> loaded;
    std::vector<std::int64_t> unfinished;
};
run_markers read_run_markers(const std::string& folder);

// A fresh folder for one run's profiles (os/temp_folder.hpp), "contend-run-profile.XXXXXX".
class profile_directory : public temp_folder {
public:
    explicit profile_directory(bool writable_by_all = false) : temp_folder("contend-run-profile.", writable_by_all) {}
};

// An address as the table and the messages write it: "0x" and lowercase hex digits.
std::string hex_text(std::uint64_t v);

}  // namespace contend::lab
