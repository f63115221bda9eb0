// `contend run --profile`: the per-lock profiles the interposition library writes at exit
// (CONTEND_INTERPOSE_PROFILE, one `<pid>.json` per process: docs/lab.md, "contend run"), read,
// merged over the program's processes, their call sites named with addr2line, printed as a
// table, and the run recorded as one row of the lab's result model. The CLI
// (cli/run_command.cpp) calls these in order; tests call each one alone.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/results.hpp"
#include "run/preload_run.hpp"

namespace contend::lab {

// The "format" every profile file names; a file of another format is refused.
inline constexpr std::string_view profile_format_name = "contend-interpose-profile/1";

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
};

// One mutex of one process: counts and durations (ns) as the file holds them.
struct lock_profile {
    std::int64_t pid = 0;
    std::uint64_t address = 0;
    std::uint64_t acquisitions = 0, contended = 0, wait_ns = 0, wait_p99_ns = 0, wait_max_ns = 0;
    std::uint64_t hold_samples = 0, hold_sampled_ns = 0, hold_p99_ns = 0;
    lock_site site;

    // hold_sampled_ns / hold_samples * acquisitions; NaN without a sampled hold.
    double estimated_hold_ns() const;
    // The site as the table names it: "function at file:line", else the function, else
    // "module+0xoffset", else the address; control characters escaped.
    std::string site_text() const;
};

// One process's file.
struct process_profile {
    std::int64_t pid = 0;
    std::string executable, lock;
    double seconds = 0;
    std::uint64_t hold_sample_period = 0;
    std::uint64_t acquisitions = 0, contended = 0, trylock_busy = 0, timeouts = 0, wait_ns = 0, locks_dropped = 0;
    std::vector<lock_profile> locks;
};

// Parses the text of one file. Refuses (profile_error) anything but one object of the format
// above: another "format", a missing or mistyped field, a count that is not a whole number
// >= 0 (or past 2^64), an address that is not a hex string, duplicate keys. Unknown fields
// are ignored: a later library may add some without changing the format's name.
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

// A fresh folder for one run (mkdtemp) under $TMPDIR when it is an absolute path, else /tmp,
// removed with everything in it by the destructor. Private (mode 0700); with
// `writable_by_all`, 0733, so that a program that drops its privileges (a daemon started as
// root that becomes `nobody`) can still write its profile there (others cannot list it).
class profile_directory {
public:
    explicit profile_directory(bool writable_by_all = false);
    ~profile_directory();
    profile_directory(const profile_directory&) = delete;
    profile_directory& operator=(const profile_directory&) = delete;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

// The program's processes together: totals summed, seconds the longest process's, every
// lock kept apart by (pid, address), sorted by total wait (then contentions, pid, address).
struct program_profile {
    std::int64_t main_pid = 0;  // the program contend started (0: unknown)
    std::size_t processes = 0;
    // Processes whose profile is missing (a `.running` marker left) or could not be read; set
    // by the caller, printed in the table's header.
    std::size_t processes_lost = 0;
    std::string executable;  // the main process's, else the first file's
    std::vector<std::string> locks_named;  // each distinct "lock" of the files
    std::vector<std::uint64_t> hold_sample_periods;  // each distinct period
    double seconds = 0;
    std::uint64_t acquisitions = 0, contended = 0, trylock_busy = 0, timeouts = 0, wait_ns = 0, locks_dropped = 0;
    std::vector<lock_profile> locks;

    // Contended acquisitions per second (the bench suites' contentions_per_second); NaN when
    // seconds is 0.
    double contentions_per_second() const;
};
program_profile merge_profiles(const std::vector<process_profile>& processes, std::int64_t main_pid = 0);

// Names the sites of the first `limit` locks (those the table shows) with `tool -a -f -C -i
// -e MODULE ADDRESS...` (binutils addr2line), one call per module, run without a shell (MODULE
// is one argument, whatever it holds: after -e, even a leading '-' is not an option), bounded
// by `timeout_s` and 16 MiB of output. A module that is not a
// regular file, a tool that is missing, fails, times out or prints what cannot be read leaves
// those sites as the library named them (site_text falls back). Returns one line per module
// that could not be symbolized ("" when all were, or none needed it).
std::vector<std::string> symbolize_sites(program_profile& profile, std::size_t limit = 20,
                                         const std::string& tool = "addr2line", double timeout_s = 30);

// The table printed at exit: a header for the program, the `top` locks by contended wait,
// and a line for the rest.
std::string profile_table(const program_profile& profile, std::size_t top = 20);

// One run of the program under one lock.
struct program_run {
    program_status status;
    double wall_ns = 0;
    std::optional<program_profile> profile;  // none: not profiled, or no profile was read
    std::size_t processes_lost = 0;  // with --profile: processes whose profile is missing
    // Why the run did not run on the lock asked for ("" when it did): no process loaded the
    // library, or one took another lock.
    std::string not_interposed;
};

// The runs of one lock as one cell of the lab's model (docs/lab.md, "contend run"): suite
// "run", contender the lock, params program:<name>/args:<hash> (and profile:on when
// profiled), 1 worker, operation "run", each run's wall time a sample, status "ok" when every
// run exited 0 (else the first failure's; "not_interposed" for a run that did not run on the
// lock), the profile's figures as metrics (each the median over the runs that were profiled;
// processes_lost the largest).
struct run_record_input {
    std::vector<std::string> argv;
    std::string lock;
    bool profiled = false;
    std::vector<program_run> runs;  // at least one
};
cell_result run_cell(const run_record_input& input);

// The params of a program: `program:` its file name with every byte outside [A-Za-z0-9._+-]
// replaced by '_' (at most 64 bytes; "_" when nothing is left), `args:` 12 hex digits of a
// hash of the arguments after it (FNV-1a 64 over each argument's length and bytes).
param_list program_params(const std::vector<std::string>& argv);

}  // namespace contend::lab
