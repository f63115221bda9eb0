// The profile files of `contend run --profile`, declared once for the side that writes them
// (the interposition library, src/interpose/profile.cpp) and the side that reads them (the
// lab, lab/run/profile_files.cpp). Header-only and dependency-free: the library is a shared
// object that links nothing of the lab, the lab links nothing of it, and both include this.
//
// One file per process image, one JSON object (docs/lab.md, "contend run"):
//   {"format": format_name, "pid": N, "executable": "...", "lock": "...", "seconds": X,
//    "hold_sample_period": N, "acquisitions": N, "contended": N, "trylock_busy": N,
//    "timeouts": N, "wait_ns": N, "locks_dropped": N, "read_acquisitions": N,
//    "write_acquisitions": N, "locks": [LOCK, ...]}
//   LOCK: {"address": "0x..", "acquisitions": N, "contended": N, "timeouts": N, "wait_ns": N,
//          "wait_p99_ns": N, "wait_max_ns": N, "hold_samples": N, "hold_sampled_ns": N,
//          "hold_p99_ns": N, "wait_p50_ns": N, "wait_p90_ns": N, "hold_p50_ns": N,
//          "hold_p90_ns": N, "hold_max_ns": N, "site": SITE[, RWLOCK][, STACKS][, HISTOGRAM]}
//   The percentiles are read off the library's log-linear histograms (within about 6 %), as
//   is hold_max_ns (the sampled holds' longest); wait_max_ns is exact, and no wait percentile
//   is written above it. The p50s, p90s and
//   hold_max_ns came later: a reader takes 0 for a file without them.
//   RWLOCK (a pthread rwlock's, whose counts above are its reads and writes together):
//          "kind": "rwlock", "read_acquisitions": N, "read_contended": N, "read_timeouts": N,
//          "read_wait_ns": N, "write_acquisitions": N, "write_contended": N,
//          "write_timeouts": N, "write_wait_ns": N
// The file's read_acquisitions and write_acquisitions are its rwlocks' (both within its
// acquisitions). A LOCK without "kind" is a mutex (files before rwlocks were profiled).
//   SITE: {"address": "0x..", "module": "...", "module_address": "0x..", "function": "..."}
//   STACKS (later; optional): "stacks": [{"frames": [SITE, ...], "samples": N, "wait_ns": N},
//          ...], the call stacks of the sampled contended waits (one in the file's
//          "stack_sample_period" per thread), each with how many waits it took and their
//          time, most wait first; frames innermost first, from the lock's caller outwards.
//   HISTOGRAM (later; optional): "wait_histogram": [[LOW_NS, N], ...], the contended waits
//          by the library's log-linear bucket (the bucket's lower bound in ns, its count),
//          the empty buckets left out, in order.
// N: a whole number >= 0 below 2^64; X: a number >= 0; "0x..": "0x" and 1 to 16 hex digits.
// A reader ignores fields it does not know, so a field may be added without a new format; a
// change that an older reader would misread names a new format_name (its version after '/').
//
// The files in the folder (CONTEND_INTERPOSE_PROFILE), <pid> in decimal:
//   <pid>.json          the profile of the process's last image
//   <pid>-<n>.json      the profile of an image that exec'd (n = 1, 2, ...: the first free)
//   .<pid>.json.tmp     a profile being written (renamed, or linked, once whole)
//   <pid>.running       the process locked with the profile on and has not written it yet
//   <pid>.loaded.<lock> the image loaded the library and took <lock> (in CONTEND_INTERPOSE_RUN_DIR)
#pragma once

namespace contend::interpose::profile_format {

inline constexpr char format_name[] = "contend-interpose-profile/1";

// Every field name of the objects above, each once (a LOCK shares acquisitions, contended,
// timeouts and wait_ns with the file, and RWLOCK read_ and write_acquisitions; a SITE shares
// address with a LOCK).
namespace fields {
inline constexpr char format[] = "format";
inline constexpr char pid[] = "pid";
inline constexpr char executable[] = "executable";
inline constexpr char lock[] = "lock";
inline constexpr char seconds[] = "seconds";
inline constexpr char hold_sample_period[] = "hold_sample_period";
inline constexpr char acquisitions[] = "acquisitions";
inline constexpr char contended[] = "contended";
inline constexpr char trylock_busy[] = "trylock_busy";
inline constexpr char timeouts[] = "timeouts";
inline constexpr char wait_ns[] = "wait_ns";
inline constexpr char locks_dropped[] = "locks_dropped";
inline constexpr char locks[] = "locks";
inline constexpr char address[] = "address";
inline constexpr char wait_p99_ns[] = "wait_p99_ns";
inline constexpr char wait_max_ns[] = "wait_max_ns";
inline constexpr char hold_samples[] = "hold_samples";
inline constexpr char hold_sampled_ns[] = "hold_sampled_ns";
inline constexpr char hold_p99_ns[] = "hold_p99_ns";
inline constexpr char wait_p50_ns[] = "wait_p50_ns";
inline constexpr char wait_p90_ns[] = "wait_p90_ns";
inline constexpr char hold_p50_ns[] = "hold_p50_ns";
inline constexpr char hold_p90_ns[] = "hold_p90_ns";
inline constexpr char hold_max_ns[] = "hold_max_ns";
inline constexpr char site[] = "site";
inline constexpr char module[] = "module";
inline constexpr char module_address[] = "module_address";
inline constexpr char function[] = "function";
inline constexpr char kind[] = "kind";
inline constexpr char rwlock_kind[] = "rwlock";  // kind's one value
inline constexpr char read_acquisitions[] = "read_acquisitions";
inline constexpr char read_contended[] = "read_contended";
inline constexpr char read_timeouts[] = "read_timeouts";
inline constexpr char read_wait_ns[] = "read_wait_ns";
inline constexpr char write_acquisitions[] = "write_acquisitions";
inline constexpr char write_contended[] = "write_contended";
inline constexpr char write_timeouts[] = "write_timeouts";
inline constexpr char write_wait_ns[] = "write_wait_ns";
inline constexpr char stack_sample_period[] = "stack_sample_period";
inline constexpr char stacks[] = "stacks";
inline constexpr char frames[] = "frames";
inline constexpr char samples[] = "samples";
inline constexpr char wait_histogram[] = "wait_histogram";
}  // namespace fields

// The parts of the files' names.
inline constexpr char profile_suffix[] = ".json";
inline constexpr char image_separator = '-';
inline constexpr char temporary_prefix[] = ".";
inline constexpr char temporary_suffix[] = ".json.tmp";
inline constexpr char running_suffix[] = ".running";
inline constexpr char loaded_infix[] = ".loaded.";

}  // namespace contend::interpose::profile_format
