// The lab's results history: every `contend bench` run, kept in one SQLite file so that a
// figure can later be compared with the runs before it, on the same machine or another.
// Internal to the lab (namespace contend::lab).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace contend::lab {

// A run as stored, with the id append gave it.
struct stored_run {
    std::int64_t id = 0;
    run_result run;
};

enum class history_access { read_write, read_only };

// One open history file. Every failure is reported as std::runtime_error whose message
// names the operation, SQLite's own message and the file's path.
//
// Several processes may use the same file at once: a writer that finds the file locked
// waits up to 5 s before giving up. One history_store object must not be used from
// several threads at the same time.
class history_store {
public:
    // read_write: opens the file at `path`, creating it and any missing parent directories;
    // creates the schema in a new or empty file, and migrates a history of an older schema
    // version (in one transaction). read_only: opens an existing history without writing
    // anything, not even a journal; a history of an older version is read as it is.
    //
    // Refused with the file left untouched, either way: a file that is not an SQLite
    // database, an SQLite database of another schema (another program's, or a contend
    // history missing a column), a schema version newer than this code knows; and, read
    // only, a missing file or one that holds no history yet.
    explicit history_store(const std::string& path, history_access access = history_access::read_write);

    // Throws, as the constructor would, when `path` could not take an append: an existing
    // file that is not a history this code can migrate. A missing file passes (append
    // creates it). Opens nothing for writing: `contend bench` asks before its first cell.
    static void check_appendable(const std::string& path);
    ~history_store();

    history_store(const history_store&) = delete;
    history_store& operator=(const history_store&) = delete;

    // Stores `run` and all its cells, in order, atomically: either everything is stored
    // or, when this throws, nothing is. Returns the new run's id; ids only grow.
    //
    // Parameters are stored in their one text form (format_params in results.hpp); a cell
    // whose parameters or metric names that form cannot hold makes append throw rather than
    // store something that would read back differently. Throws on a read-only store.
    std::int64_t append(const run_result& run);

    // The stored runs, oldest first: all of them when `limit` is 0, otherwise the newest
    // `limit`. Each run comes back with its cells in the order they were appended and
    // every field as it was given to append (a NaN comes back as a NaN; a -0.0 outside
    // the samples comes back as 0.0, as SQLite stores it). Reads one consistent snapshot,
    // even while another process appends.
    std::vector<run_result> runs(std::size_t limit = 0) const;

    // The same runs as runs(limit), each with its id.
    std::vector<stored_run> stored_runs(std::size_t limit = 0) const;

    // The run with this id, or nothing when there is none.
    std::optional<run_result> run(std::int64_t id) const;

    // How many runs are stored.
    std::size_t run_count() const;

    // The file's schema version as opened (a read-only history may be older than the code).
    int schema_version_of_file() const;

private:
    class connection;
    std::vector<stored_run> read_runs(const std::string& from, std::int64_t parameter) const;
    std::unique_ptr<connection> db_;
};

}  // namespace contend::lab
