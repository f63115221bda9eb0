// The lab's results history: every `contend bench` run, kept in one SQLite file, or in a
// PostgreSQL database that several machines share, so that a figure can later be compared
// with the runs before it, on the same machine or another. Internal to the lab (namespace
// contend::lab).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/results.hpp"

namespace contend::lab {

// A run as stored, with the id append gave it.
struct stored_run {
    std::int64_t id = 0;
    run_result run;
};

enum class history_access { read_write, read_only };

namespace history_detail {
class backend;
}

// One open history. Where it is, `path`, is either
//  - a PostgreSQL connection URI, "postgresql://..." or "postgres://..." (libpq's form, e.g.
//    postgresql://user@host:5432/dbname or postgresql:///dbname?host=/run/postgresql): the
//    history is the tables runs, cells, metrics and contend_schema in the database's current
//    schema (the first of its search_path), which holds nothing else. The database itself
//    must exist; this creates tables, never databases. A server that does not answer fails
//    the open after connect_timeout (10 s unless the URI gives one); or
//  - anything else: the path of an SQLite file.
// Both store the same tables and columns and behave alike, as described below; where they
// differ, the difference is noted.
//
// Every failure is reported as std::runtime_error whose message names the operation, the
// database's own message and the history: the file's path, or the URI with any password
// masked (printable() below).
//
// Several processes may use the same history at once. SQLite: a connection that finds the
// file locked waits for up to 10 minutes (a stop signal ends the wait); a reader holds the
// lock for about 50 ms at a time, so that a long read (a history of a million cells) never
// keeps an append waiting for long. PostgreSQL: appends queue behind each other for
// the runs table, first come first served, for up to 10 minutes (however long each takes: a
// fleet may append at once; a stop signal given to append ends the wait, storing nothing);
// migrations queue on an advisory lock and give up after waiting 5 s for a lock. One
// history_store object must not be used from several threads at the same time.
class history_store {
public:
    // read_write: opens the file at `path`, creating it and any missing parent directories;
    // creates the schema in a new or empty file, and migrates a history of an older schema
    // version (in one transaction). read_only: opens an existing history without writing
    // anything, not even a journal; a history of an older version is read as it is. Either
    // way, a journal left by a write that was cut short (a killed process, a full disk) is
    // first rolled back, as SQLite does when a writer opens the file: the file is then as its
    // last committed append left it. Where this process may not write the file and its
    // folder, the open is refused with a message that says so and how to roll it back.
    //
    // Refused with the file left untouched, either way: a file that is not an SQLite
    // database, an SQLite database of another schema (another program's, or a contend
    // history missing a column), a schema version newer than this code knows; and, read
    // only, a missing file or one that holds no history yet.
    //
    // PostgreSQL: the same, for the database's current schema: read_write creates the tables
    // when the schema holds no table at all, and refuses one that holds other tables or a
    // newer version; read_only refuses a schema with no history and writes nothing at all
    // (its transactions are read-only).
    //
    // SQLite: a path that exists but is not a regular file (a FIFO, a device, a folder) is
    // refused before SQLite opens it (its open would block on a FIFO). `stop` (may be null:
    // never), once it holds a signal's number, ends any wait for a lock and any read or check
    // under way, which then throws interrupted (interrupted.hpp), having stored nothing;
    // append's own `stop` defaults to it. A file this open created is removed again when the
    // schema could not be written to it (a full disk), rather than left empty. PostgreSQL:
    // `stop` cancels the statement under way (a read, a wait for a lock) and is looked at
    // between rows read, throwing interrupted as for SQLite.
    explicit history_store(const std::string& path, history_access access = history_access::read_write,
                           const std::atomic<int>* stop = nullptr);

    // Throws, as the constructor would, when `path` could not take an append: an existing
    // file that is not a history this code can migrate, one this process may not write (its
    // permissions, an immutable file, a read-only mount: found by opening it for writing and
    // taking the write lock, then letting go, with nothing written), one whose folder cannot
    // take SQLite's journal, a damaged one (append's check, below). A missing file passes when
    // its folder can take it (append creates it). `contend bench` asks before its first cell.
    // PostgreSQL: connects (so an unreachable server or a missing database fails here) and
    // checks that the schema is a history this code can migrate, or holds no table yet.
    static void check_appendable(const std::string& path, const std::atomic<int>* stop = nullptr);

    // Whether `path` names a PostgreSQL database (a URI) rather than an SQLite file: it starts
    // with postgresql:// or postgres://, in any case. Such a path is not a file: nothing is
    // created, checked or written under that name.
    static bool is_database_uri(std::string_view path);

    // Throws std::invalid_argument, saying why (and naming `path` as printable shows it), for
    // a `path` that can hold no history or is a mistake for a URI: "" and ":memory:" (SQLite's
    // temporary and in-memory databases, which keep nothing), an SQLite URI filename
    // ("file:..."), a near-miss of a PostgreSQL URI ("postgresql:/h/db", "postgressql://",
    // "pg://") and a URI of any other scheme ("scheme:/..."). A file of such a name is
    // reached as ./NAME. The constructor and check_appendable refuse these too (as
    // std::runtime_error, as their other failures).
    static void check_location(std::string_view path);

    // What no output may be written onto, for the history at `path`: the SQLite file and the
    // files SQLite keeps beside it (PATH-journal, PATH-wal, PATH-shm), which it deletes or
    // rewrites; each as given and, behind a symbolic link, as the file SQLite resolves it to.
    // Nothing for a PostgreSQL URI.
    static std::vector<std::string> files_of(const std::string& path);

    // `path` as messages may show it: a URI, or what reads as one, with its password replaced
    // by "***" (postgresql://user:secret@host, ...?password=secret, and a password that
    // holds a raw '@', '/' or '?'), and the value of every password or sslpassword
    // parameter; a file path as it is.
    static std::string printable(std::string_view path);
    ~history_store();

    history_store(const history_store&) = delete;
    history_store& operator=(const history_store&) = delete;

    // Stores `run` and all its cells, in order, atomically: either everything is stored
    // or, when this throws, nothing is. Returns the new run's id; ids only grow. A stored run
    // is never changed nor deleted (the reads below rely on it).
    //
    // SQLite: first checks, under the write lock, that the file is intact (PRAGMA
    // quick_check, which reads the whole file): a damaged history is refused, nothing stored,
    // rather than given a run that no read could bring back.
    //
    // Parameters are stored in their one text form (format_params in results.hpp); a cell
    // whose parameters or metric names that form cannot hold makes append throw rather than
    // store something that would read back differently. Throws on a read-only store.
    // PostgreSQL's text cannot hold a NUL character nor bytes that are not UTF-8: a run
    // whose text has either makes append throw there (SQLite stores it).
    //
    // `stop`, when given, is looked at before the append starts, between cells and just
    // before it commits: once it holds a signal's number, append stores nothing and throws
    // interrupted (interrupted.hpp). A signal that comes while the commit runs is too late:
    // the run is stored.
    std::int64_t append(const run_result& run, const std::atomic<int>* stop = nullptr);

    // The stored runs, oldest first: all of them when `limit` is 0, otherwise the newest
    // `limit`. Each run comes back with its cells in the order they were appended and
    // every field as it was given to append (a NaN comes back as a NaN; a -0.0 outside
    // the samples comes back as 0.0, as SQLite stores it, and PostgreSQL the same so that
    // the two agree). Reads one consistent snapshot, even while another process appends: the
    // runs stored when the read began. SQLite reads them a few at a time, each batch in its own
    // short transaction, so that an append waits for one batch at most.
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
    std::unique_ptr<history_detail::backend> db_;
};

}  // namespace contend::lab
