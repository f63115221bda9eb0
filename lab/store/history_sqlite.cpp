// The results history in an SQLite file, on SQLite's C API. Values always travel as bound
// parameters, never inside SQL text. Writes take the write lock up front (BEGIN IMMEDIATE)
// so that a second process appending at the same moment waits in the busy handler instead
// of failing half-way. Reads run in short transactions, a few runs each, so that a long read
// never holds off a writer for long: an append never changes a stored run, so the runs that
// were stored when the read began read back as one snapshot. A stop signal (the `stop` flag)
// ends any wait for a lock and any long statement.
#include "store/history_backend.hpp"
#include "store/history_schema.hpp"
#include "store/interrupted.hpp"
#include "text/utf8.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace contend::lab::history_detail {
namespace {

// The schema version (history_backend.hpp) is stored in PRAGMA user_version.

// How long a connection waits for a lock another process holds: long enough for any other
// append or read to finish (a reader holds it for a moment at a time, a writer for one
// append, however big), short enough that a stuck process is reported rather than waited on
// forever; the same as PostgreSQL's wait for the runs table. A stop signal ends it at once.
constexpr auto lock_wait_limit = std::chrono::minutes(10);

// A read transaction ends after about this long (at a run's end), so that a writer waiting
// for the lock gets it between two.
constexpr auto read_transaction_length = std::chrono::milliseconds(50);

// SQLite calls the progress handler every this many virtual-machine steps: a stop signal
// cuts a long statement (a read, a check of the whole file) within a few milliseconds.
constexpr int progress_steps = 10000;

// close_v2 rather than close: it cannot fail because a statement is still open.
using db_handle = c_handle<sqlite3, sqlite3_close_v2>;
using stmt_handle = c_handle<sqlite3_stmt, sqlite3_finalize>;

void make_parent_directory(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec)
        throw std::runtime_error("history: cannot create directory " + parent.string() + ": " + ec.message() + " (" +
                                 path + ")");
}

// Refuses a path that names something other than a regular file (a FIFO, a device, a
// folder): SQLite's open would block on a FIFO until a writer came, where no signal can stop
// it, and a device holds no history. A missing path is left to the open.
void check_regular_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISDIR(st.st_mode)  ? "a folder"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw std::runtime_error(std::string("history: not a regular file (") + kind +
                             "): a history is an SQLite file or a postgresql:// URI (" + path + ")");
}

// An open database, with the path every error message names.
class database {
public:
    // Read-only: the file must exist, and nothing (not even a journal) is written beside it.
    // `stop` (may be null: never) ends a wait for a lock and any statement running.
    database(std::string path, bool read_only, const std::atomic<int>* stop)
        : path_(std::move(path)), read_only_(read_only), stop_(stop) {
        check_regular_file(path_);
        if (!read_only) make_parent_directory(path_);
        open();
        if (roll_back_interrupted_write()) open();
    }

    database(const database&) = delete;  // SQLite's handlers hold its address
    database& operator=(const database&) = delete;

    sqlite3* get() const noexcept { return db_.get(); }
    bool read_only() const noexcept { return read_only_; }
    const std::string& path() const noexcept { return path_; }
    const std::atomic<int>* stop() const noexcept { return stop_; }

    // Throws for an error SQLite just reported on this connection; as interrupted when a stop
    // signal cut the wait or the statement short.
    [[noreturn]] void fail(std::string_view what) const {
        throw_if_stopped(stop_, "history: " + std::string(what) + ": given up; nothing was stored (" + path_ + ")");
        throw std::runtime_error("history: " + std::string(what) + ": " + sqlite3_errmsg(db_.get()) + " (" + path_ +
                                 ")");
    }

    // Throws for a problem SQLite knows nothing about (bad input, unexpected content).
    [[noreturn]] void reject(std::string_view why) const {
        throw std::runtime_error("history: " + std::string(why) + " (" + path_ + ")");
    }

    // Runs SQL that returns no rows.
    void exec(const char* sql, std::string_view what) const {
        if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
    }

    // Ends the transaction under way, if any, for transaction (history_backend.hpp). SQLite
    // rolls back by itself after some errors; ROLLBACK then has nothing to do.
    void roll_back() const noexcept {
        if (!sqlite3_get_autocommit(db_.get())) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }

private:
    void open() {
        sqlite3* raw = nullptr;
        const int flags = read_only_ ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
        const int rc = sqlite3_open_v2(path_.c_str(), &raw, flags, nullptr);
        db_.reset(raw);  // a failed open may still hand back a handle that must be closed
        if (rc != SQLITE_OK) fail("cannot open");
        install_handlers(raw);
    }

    void install_handlers(sqlite3* raw) const {
        sqlite3_busy_handler(raw, &database::on_busy, const_cast<database*>(this));
        if (stop_ != nullptr)
            sqlite3_progress_handler(raw, progress_steps, &database::on_progress, const_cast<database*>(this));
    }

    bool stopped() const noexcept { return stop_ != nullptr && stop_->load() != 0; }

    // Another process holds the lock: wait, a little longer each time (up to 100 ms), until
    // lock_wait_limit has passed or a stop signal came (the sleep ends early on a signal).
    static int on_busy(void* self, int count) {
        auto* db = static_cast<database*>(self);
        const auto now = std::chrono::steady_clock::now();
        if (count == 0) db->busy_since_ = now;
        if (db->stopped() || now - db->busy_since_ >= lock_wait_limit) return 0;
        const long ms = std::min(100L, 1L << std::min(count, 7));
        const timespec pause{0, ms * 1000000L};
        ::nanosleep(&pause, nullptr);
        return db->stopped() ? 0 : 1;
    }

    static int on_progress(void* self) { return static_cast<database*>(self)->stopped() ? 1 : 0; }

    // A write cut short (kill -9, a second signal, a full disk, a power cut) leaves SQLite's
    // rollback journal beside the file, a "hot" journal: the next connection that may write
    // rolls it back, restoring the last committed state (the cut-short write stored nothing).
    // A read-only connection cannot, and every read fails with "attempt to write a readonly
    // database" (SQLITE_READONLY_ROLLBACK). So, found here, the journal is rolled back through
    // a connection that may write, for a reader too; where this process may not write the
    // file or its folder, the error says what happened and what to do. True when rolled back:
    // the caller opens afresh. Any other error is left to the first read, which reports it.
    bool roll_back_interrupted_write() const {
        constexpr const char* any_read = "SELECT count(*) FROM sqlite_master";
        if (sqlite3_exec(db_.get(), any_read, nullptr, nullptr, nullptr) == SQLITE_OK ||
            sqlite3_extended_errcode(db_.get()) != SQLITE_READONLY_ROLLBACK)
            return false;
        sqlite3* raw = nullptr;
        int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
        const db_handle writer(raw);
        if (rc == SQLITE_OK) {
            install_handlers(raw);
            rc = sqlite3_exec(raw, any_read, nullptr, nullptr, nullptr);  // the read rolls back
        }
        if (rc != SQLITE_OK) {
            throw_if_stopped(stop_,
                             "history: the journal of a write that was cut short was not rolled back (" + path_ + ")");
            reject("a write that was cut short (a killed process, a full disk) left SQLite's journal " + path_ +
                   "-journal, which must be rolled back before the history can be read, and this process cannot: " +
                   (raw ? sqlite3_errmsg(raw) : "out of memory") +
                   ". Run any contend command on the history as a user who may write the file and its folder, or "
                   "`sqlite3 " +
                   path_ + " 'PRAGMA integrity_check'`: either rolls the journal back");
        }
        return true;
    }

    std::string path_;
    bool read_only_;
    const std::atomic<int>* stop_;
    std::chrono::steady_clock::time_point busy_since_{};
    db_handle db_;
};

// A prepared statement. Parameters are bound, and columns read, in order: each bind_*
// call fills the next '?', each read_* call reads the next column of the current row.
class statement {
public:
    statement(const database& db, std::string_view what, const std::string& sql) : db_(db), what_(what) {
        sqlite3_stmt* raw = nullptr;
        const int rc = sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
        stmt_.reset(raw);
        if (rc != SQLITE_OK) db_.fail(what_);
    }

    statement& bind_text(std::string_view value) {
        // An empty view may have a null data(), which SQLite would store as NULL, not "".
        const char* data = value.data() ? value.data() : "";
        check_bind(sqlite3_bind_text64(stmt_.get(), ++bound_, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
        return *this;
    }

    statement& bind_int(std::int64_t value) {
        check_bind(sqlite3_bind_int64(stmt_.get(), ++bound_, value));
        return *this;
    }

    statement& bind_bool(bool value) { return bind_int(value ? 1 : 0); }

    statement& bind_real(double value) {
        // Explicit about what SQLite would do anyway: a NaN is stored as NULL.
        const int rc = std::isnan(value) ? sqlite3_bind_null(stmt_.get(), ++bound_)
                                         : sqlite3_bind_double(stmt_.get(), ++bound_, value);
        check_bind(rc);
        return *this;
    }

    // True when a row is ready to read, false when the statement has finished.
    bool step() {
        assert(bound_ == sqlite3_bind_parameter_count(stmt_.get()));
        read_ = 0;
        const int rc = sqlite3_step(stmt_.get());
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        db_.fail(what_);
    }

    // Makes the statement ready to be bound and stepped again.
    void rewind() noexcept {
        sqlite3_reset(stmt_.get());  // its result repeats the last step's, already reported
        bound_ = 0;
    }

    std::string read_text() {
        const int column = next_column();
        const unsigned char* text = sqlite3_column_text(stmt_.get(), column);
        if (text == nullptr) return {};
        return {reinterpret_cast<const char*>(text),
                static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), column))};
    }

    std::int64_t read_int() { return sqlite3_column_int64(stmt_.get(), next_column()); }

    bool read_bool() { return read_int() != 0; }

    double read_real() {
        const int column = next_column();
        if (sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
        return sqlite3_column_double(stmt_.get(), column);
    }

private:
    void check_bind(int rc) const {
        if (rc != SQLITE_OK) db_.fail(what_);
    }

    int next_column() {
        assert(read_ < sqlite3_column_count(stmt_.get()));
        return read_++;
    }

    const database& db_;
    std::string what_;
    stmt_handle stmt_;
    int bound_ = 0;
    int read_ = 0;
};

int user_version(const database& db) {
    statement query(db, "cannot read schema version", "PRAGMA user_version");
    if (!query.step()) db.reject("cannot read schema version");
    return static_cast<int>(query.read_int());
}

// The columns of `table`, empty when there is no such table.
std::vector<std::string> columns_of(const database& db, const char* table) {
    statement query(db, "cannot read the schema", std::string("PRAGMA table_info(") + table + ")");
    std::vector<std::string> columns;
    while (query.step()) {
        (void)query.read_int();  // cid
        columns.push_back(query.read_text());
    }
    return columns;
}

std::size_t table_count(const database& db) {
    statement query(db, "cannot read the schema", "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
    if (!query.step()) db.reject("cannot read the schema");
    return static_cast<std::size_t>(query.read_int());
}

// What a file holds: 0 for a file with no tables at all (a new or empty file, which may
// become a history), or the schema version of a contend history. Anything else -- another
// program's database, a version newer than this lab knows, a history missing a column --
// is refused with the reason, and nothing is written to it.
int history_version(const database& db) {
    const int version = user_version(db);
    const std::size_t tables = table_count(db);
    if (version == 0 && tables == 0) return 0;
    if (version > schema_version) db.reject(newer_version_message(version));
    if (!has_history_tables(version, [&](const char* table) { return columns_of(db, table); }))
        db.reject("not a contend history: the file is an SQLite database of another schema (user_version " +
                  std::to_string(version) + ", " + std::to_string(tables) +
                  " tables); it was left untouched. Give --db a new file");
    return version;
}

// history_version in one read transaction: its several queries then see one snapshot, not a
// schema another process is creating between two of them.
int history_version_snapshot(const database& db) {
    transaction reading(db, "BEGIN", "cannot read the schema");
    const int version = history_version(db);
    reading.commit();
    return version;
}

// Brings a file of an older version (or an empty one) to the current schema, in one
// transaction: either the whole migration happens or none of it.
void migrate(const database& db) {
    transaction migrating(db, "BEGIN IMMEDIATE", "cannot create or migrate the schema");
    // Again under the write lock: another process may have done it meanwhile.
    const int found = history_version(db);
    if (found == schema_version) return;
    if (found == 0) {
        db.exec(schema_tables_sql(sqlite_sql).c_str(), "cannot create schema");
    } else {
        db.exec(migration_sql(sqlite_sql, found).c_str(), "cannot migrate the schema");
    }
    // A pragma takes no bound parameters; the value is this file's own constant.
    db.exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "cannot set schema version");
    migrating.commit();
}

// Refuses a damaged file before anything is stored in it: SQLite would append to a file whose
// other pages are corrupt, and every later read of the history would then fail on them
// ("database disk image is malformed"), the new run with the old ones. quick_check reads
// every page (a 100 MB history takes a fraction of a second); a stop signal cuts it short.
void check_intact(const database& db) {
    statement check(db, "cannot check the file", "PRAGMA quick_check(1)");
    std::string verdict = check.step() ? check.read_text() : std::string("no verdict");
    std::replace(verdict.begin(), verdict.end(), '\n', ' ');  // one line, as every message
    if (verdict != "ok")
        db.reject("the file is damaged (SQLite's quick_check: " + verdict +
                  "): nothing was stored in it. Keep a copy; `sqlite3 " + db.path() +
                  " .recover` gets back what it still holds");
}

// bind_fields and read_fields (history_schema.hpp), a value the history cannot hold or a
// stored value that is malformed refused in words.
template <class Record>
void bind_record(const database& db, statement& s, const Record& record,
                 const std::vector<const field<Record>*>& fields) {
    try {
        bind_fields(s, record, fields);
    } catch (const std::invalid_argument& e) {
        db.reject(std::string("cannot append: ") + e.what());
    }
}

template <class Record>
void read_record(const database& db, statement& s, Record& record, const std::vector<const field<Record>*>& fields) {
    try {
        read_fields(s, record, fields);
    } catch (const std::invalid_argument& e) {
        db.reject(std::string("stored value is malformed: ") + e.what());
    }
}

std::int64_t insert_run(const database& db, const machine_context& c) {
    statement insert(db, "cannot append run", insert_run_sql(sqlite_sql));
    bind_record(db, insert, c, fields_in(context_fields(), schema_version));
    insert.step();
    return sqlite3_last_insert_rowid(db.get());
}

// `fields`: the cell fields of the current schema, as insert_cell_sql lists them.
void insert_cell(const database& db, statement& insert, statement& insert_metric, std::int64_t run_id,
                 const cell_result& cell, const std::vector<const field<cell_result>*>& fields) {
    insert.rewind();
    insert.bind_int(run_id).bind_text(cell.name());
    bind_record(db, insert, cell, fields);
    insert.step();
    const std::int64_t cell_id = sqlite3_last_insert_rowid(db.get());
    for (const auto& [name, value] : cell.metrics) {
        try {
            check_metric_name(name);
        } catch (const std::invalid_argument& e) {
            db.reject(std::string("cannot append cell ") + message_text(cell.name()) + ": " + e.what());
        }
        insert_metric.rewind();
        insert_metric.bind_int(cell_id).bind_text(name).bind_real(value);
        insert_metric.step();
    }
}

class sqlite_history final : public backend {
public:
    sqlite_history(const std::string& path, history_access access, const std::atomic<int>* stop)
        : created_(access == history_access::read_write && !std::filesystem::exists(path)),
          db_(path, access == history_access::read_only, stop) {
        if (access == history_access::read_only) {
            version_ = history_version_snapshot(db_);
            if (version_ == 0) db_.reject("holds no contend history (run `contend bench` first)");
            return;
        }
        try {
            // Read first: this is where a file that is not a database, or one of another
            // schema, fails, before anything writes; an up-to-date file needs no write lock.
            if (history_version_snapshot(db_) != schema_version) migrate(db_);
            // Per connection, and outside any transaction, where SQLite would ignore it.
            db_.exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
        } catch (...) {
            // The open created the file and the schema could not be written (a full disk): an
            // empty file named like a history would only mislead. Removed; anything else stays.
            std::error_code ec;
            if (created_ && std::filesystem::file_size(path, ec) == 0 && !ec) std::filesystem::remove(path, ec);
            throw;
        }
    }

    int version() const override { return version_; }

    std::int64_t append(const run_result& run, const std::atomic<int>* stop) override {
        if (db_.read_only()) db_.reject("opened read-only: cannot append");
        if (stop == nullptr) stop = db_.stop();
        const std::string undone = "nothing was stored (" + db_.path() + ")";
        throw_if_stopped(stop, undone);
        transaction appending(db_, "BEGIN IMMEDIATE", "cannot append run");
        // Under the write lock: the file as this append finds it.
        check_intact(db_);
        const std::int64_t run_id = insert_run(db_, run.context);
        {
            const auto fields = fields_in(cell_fields(), schema_version);
            statement insert(db_, "cannot append cell", insert_cell_sql(sqlite_sql));
            statement insert_metric(db_, "cannot append metric", insert_metric_sql(sqlite_sql));
            for (const cell_result& cell : run.cells) {
                throw_if_stopped(stop, undone);  // the transaction then rolls back
                insert_cell(db_, insert, insert_metric, run_id, cell, fields);
            }
        }
        throw_if_stopped(stop, undone);
        appending.commit();
        return run_id;
    }

    std::vector<stored_run> newest_runs(std::size_t limit) const override {
        constexpr auto max_limit = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
        const std::int64_t sql_limit = limit == 0 ? -1 : static_cast<std::int64_t>(std::min(limit, max_limit));
        // Newest `limit` runs (a negative limit means all), handed back oldest first.
        return read_runs("SELECT id FROM (SELECT id FROM runs ORDER BY id DESC LIMIT ?) ORDER BY id", sql_limit);
    }

    std::optional<stored_run> run(std::int64_t id) const override {
        auto found = read_runs("SELECT id FROM runs WHERE id = ?", id);
        if (found.empty()) return std::nullopt;
        return std::move(found.front());
    }

    std::size_t run_count() const override {
        statement count(db_, "cannot count runs", "SELECT count(*) FROM runs");
        if (!count.step()) db_.reject("cannot count runs");
        return static_cast<std::size_t>(count.read_int());
    }

private:
    // Reads the runs whose ids `ids_sql` selects (one '?' bound to `parameter`), oldest first,
    // with their cells and metrics. The ids are read first, in one transaction; the runs then
    // a few at a time, each batch in a transaction of its own (read_transaction_length), so
    // that a writer waits for one batch at most, not for the whole read. A run, once stored,
    // never changes, and no run is ever deleted: the batches read what one snapshot taken with
    // the ids would. The columns read are those of the file's schema version: a field added
    // later keeps its default. A stop signal ends the read between two runs (or inside a
    // long statement) with interrupted.
    std::vector<stored_run> read_runs(const std::string& ids_sql, std::int64_t parameter) const {
        std::vector<std::int64_t> ids;
        {
            transaction reading(db_, "BEGIN", "cannot read runs");
            statement select_ids(db_, "cannot read runs", ids_sql);
            select_ids.bind_int(parameter);
            while (select_ids.step()) ids.push_back(select_ids.read_int());
            reading.commit();
        }
        const auto run_fields = fields_in(context_fields(), version_);
        const auto cell_columns = fields_in(cell_fields(), version_);
        std::vector<stored_run> result;
        result.reserve(ids.size());
        for (std::size_t next = 0; next < ids.size();) {
            throw_if_stopped(db_.stop(), "the history was not read (" + db_.path() + ")");
            transaction reading(db_, "BEGIN", "cannot read runs");
            statement select_run(db_, "cannot read runs",
                                 "SELECT " + column_list(run_fields) + " FROM runs WHERE id = ?");
            statement select_cells(
                db_, "cannot read cells",
                "SELECT id, " + column_list(cell_columns) + " FROM cells WHERE run_id = ? ORDER BY id");
            std::optional<statement> select_metrics;
            if (version_ >= 2)
                select_metrics.emplace(db_, "cannot read metrics",
                                       "SELECT m.cell_id, m.name, m.value FROM metrics m JOIN cells c ON c.id = "
                                       "m.cell_id WHERE c.run_id = ? ORDER BY m.rowid");
            const auto started = std::chrono::steady_clock::now();
            do {
                stored_run stored;
                stored.id = ids[next++];
                select_run.rewind();
                select_run.bind_int(stored.id);
                if (!select_run.step()) db_.reject("run " + std::to_string(stored.id) + " vanished while being read");
                read_record(db_, select_run, stored.run.context, run_fields);
                std::vector<std::int64_t> cell_ids;
                select_cells.rewind();
                select_cells.bind_int(stored.id);
                while (select_cells.step()) {
                    cell_ids.push_back(select_cells.read_int());
                    read_record(db_, select_cells, stored.run.cells.emplace_back(), cell_columns);
                }
                if (select_metrics) read_metrics(*select_metrics, stored, cell_ids);
                result.push_back(std::move(stored));
            } while (next < ids.size() && std::chrono::steady_clock::now() - started < read_transaction_length);
            reading.commit();
        }
        return result;
    }

    // The metrics of `stored`'s cells, whose ids (ascending, as read) are `cell_ids`.
    void read_metrics(statement& select_metrics, stored_run& stored, const std::vector<std::int64_t>& cell_ids) const {
        select_metrics.rewind();
        select_metrics.bind_int(stored.id);
        while (select_metrics.step()) {
            const std::int64_t cell_id = select_metrics.read_int();
            std::string name = select_metrics.read_text();
            const double value = select_metrics.read_real();
            // Binary search: a run of many cells with metrics must not cost cells x metrics.
            const auto at = std::lower_bound(cell_ids.begin(), cell_ids.end(), cell_id);
            if (at == cell_ids.end() || *at != cell_id) db_.reject("a metric of a cell not in its run");
            stored.run.cells[static_cast<std::size_t>(at - cell_ids.begin())].metrics.emplace_back(std::move(name),
                                                                                                   value);
        }
    }

    bool created_;  // the open created the file
    database db_;
    int version_ = schema_version;  // of the file, as opened
};

}  // namespace

void check_sqlite_appendable(const std::string& path, const std::atomic<int>* stop) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found) {
        // Created at the first append: its nearest folder must take a new file (and the journal).
        std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
        while (!std::filesystem::exists(folder, ec) && folder.has_parent_path() && folder != folder.parent_path())
            folder = folder.parent_path();
        if (::access(folder.c_str(), W_OK | X_OK) != 0)
            throw std::runtime_error("history: cannot create the file: cannot write in the folder " + folder.string() +
                                     ": " + std::strerror(errno) + " (" + path + ")");
        return;
    }
    check_regular_file(path);
    // What the append will do, short of storing: open the file for writing, take the write
    // lock (a read-only file, an immutable one or one on a read-only mount fails here, where
    // SQLite would otherwise open it read-only without a word) and check it is intact. The
    // folder must take the journal SQLite writes beside the file.
    const database db(path, true, stop);
    (void)history_version_snapshot(db);
    {
        const database writer(path, false, stop);
        if (sqlite3_db_readonly(writer.get(), "main") == 1)
            writer.reject(
                "cannot write the file: this process may only read it (its permissions, an immutable "
                "file or a read-only file system)");
        transaction trying(writer, "BEGIN IMMEDIATE", "cannot take the write lock");
        check_intact(writer);
    }  // rolled back: nothing written
    const std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
        throw std::runtime_error("history: cannot write SQLite's journal beside the file: cannot write in the folder " +
                                 folder.string() + ": " + std::strerror(errno) + " (" + path + ")");
}

std::unique_ptr<backend> open_sqlite(const std::string& path, history_access access, const std::atomic<int>* stop) {
    return std::make_unique<sqlite_history>(path, access, stop);
}

}  // namespace contend::lab::history_detail
