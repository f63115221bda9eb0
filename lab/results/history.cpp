// The results history on SQLite's C API. Values always travel as bound parameters, never
// inside SQL text. Writes take the write lock up front (BEGIN IMMEDIATE) so that a second
// process appending at the same moment waits in the busy handler instead of failing
// half-way; reads run in one transaction so they see a single snapshot.
#include "results/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

namespace contend::lab {
namespace {

// Stored in PRAGMA user_version. Bump it, and teach the constructor to migrate, whenever
// the schema below changes.
constexpr int schema_version = 1;

// Long enough for another process to finish appending a run; short enough that a stuck
// one is reported rather than waited on forever.
constexpr int busy_timeout_ms = 5000;

// REAL columns may be NULL: SQLite cannot store a NaN and turns it into NULL, so NULL
// reads back as NaN. ops_per_worker holds the bit pattern of an unsigned 64-bit count.
// The index on run_id keeps reading a run's cells from scanning every cell ever stored.
constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    date TEXT NOT NULL,
    label TEXT NOT NULL,
    host_name TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    logical_cpus INTEGER NOT NULL,
    cpu_list TEXT NOT NULL,
    kernel TEXT NOT NULL,
    compiler TEXT NOT NULL,
    build_flags TEXT NOT NULL,
    governor TEXT NOT NULL,
    wait_backend TEXT NOT NULL,
    timer_slack_ns INTEGER NOT NULL,
    nanosleep_1ns_us REAL
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    suite TEXT NOT NULL,
    contender TEXT NOT NULL,
    params TEXT NOT NULL,
    workers INTEGER NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    ops_per_worker INTEGER NOT NULL,
    repetitions INTEGER NOT NULL,
    samples TEXT NOT NULL,
    median_ns REAL,
    p25_ns REAL,
    p75_ns REAL,
    cpu_ns_per_op REAL,
    min_share REAL,
    max_share REAL,
    has_fairness INTEGER NOT NULL,
    affinity TEXT NOT NULL,
    oversubscribed INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cells_by_name ON cells(name);
CREATE INDEX IF NOT EXISTS cells_by_run ON cells(run_id);
)sql";

// The column lists below and the order in which insert_*/read_* bind or read fields must
// agree; the round-trip test gives every field a distinct value to catch a swap.
constexpr const char* insert_run_sql =
    "INSERT INTO runs (date, label, host_name, cpu_model, logical_cpus, cpu_list, kernel,"
    " compiler, build_flags, governor, wait_backend, timer_slack_ns, nanosleep_1ns_us)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

constexpr const char* insert_cell_sql =
    "INSERT INTO cells (run_id, name, suite, contender, params, workers, status, detail,"
    " ops_per_worker, repetitions, samples, median_ns, p25_ns, p75_ns, cpu_ns_per_op,"
    " min_share, max_share, has_fairness, affinity, oversubscribed)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

// Newest `limit` runs (a negative limit means all), handed back oldest first.
constexpr const char* select_runs_sql =
    "SELECT id, date, label, host_name, cpu_model, logical_cpus, cpu_list, kernel, compiler,"
    " build_flags, governor, wait_backend, timer_slack_ns, nanosleep_1ns_us"
    " FROM (SELECT * FROM runs ORDER BY id DESC LIMIT ?) ORDER BY id";

constexpr const char* select_run_sql =
    "SELECT id, date, label, host_name, cpu_model, logical_cpus, cpu_list, kernel, compiler,"
    " build_flags, governor, wait_backend, timer_slack_ns, nanosleep_1ns_us"
    " FROM runs WHERE id = ?";

constexpr const char* select_cells_sql =
    "SELECT suite, contender, params, workers, status, detail, ops_per_worker, repetitions,"
    " samples, median_ns, p25_ns, p75_ns, cpu_ns_per_op, min_share, max_share, has_fairness,"
    " affinity, oversubscribed FROM cells WHERE run_id = ? ORDER BY id";

struct db_closer {
    // close_v2 rather than close: it cannot fail because a statement is still open.
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using db_handle = std::unique_ptr<sqlite3, db_closer>;

struct stmt_finalizer {
    void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
using stmt_handle = std::unique_ptr<sqlite3_stmt, stmt_finalizer>;

void make_parent_directory(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec)
        throw std::runtime_error("history: cannot create directory " + parent.string() + ": " + ec.message() +
                                 " (" + path + ")");
}

// An open database, with the path every error message names.
class database {
public:
    explicit database(std::string path) : path_(std::move(path)) {
        make_parent_directory(path_);
        sqlite3* raw = nullptr;
        const int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
        db_.reset(raw);  // a failed open may still hand back a handle that must be closed
        if (rc != SQLITE_OK) fail("cannot open");
        sqlite3_busy_timeout(raw, busy_timeout_ms);
    }

    sqlite3* get() const noexcept { return db_.get(); }

    // Throws for an error SQLite just reported on this connection.
    [[noreturn]] void fail(std::string_view what) const {
        throw std::runtime_error("history: " + std::string(what) + ": " + sqlite3_errmsg(db_.get()) + " (" +
                                 path_ + ")");
    }

    // Throws for a problem SQLite knows nothing about (bad input, unexpected content).
    [[noreturn]] void reject(std::string_view why) const {
        throw std::runtime_error("history: " + std::string(why) + " (" + path_ + ")");
    }

    // Runs SQL that returns no rows.
    void exec(const char* sql, std::string_view what) const {
        if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
    }

private:
    std::string path_;
    db_handle db_;
};

// A prepared statement. Parameters are bound, and columns read, in order: each bind_*
// call fills the next '?', each read_* call reads the next column of the current row.
class statement {
public:
    statement(const database& db, std::string_view what, std::string_view sql) : db_(db), what_(what) {
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
        return {reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), column))};
    }

    std::int64_t read_int() { return sqlite3_column_int64(stmt_.get(), next_column()); }

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

// A transaction that rolls back unless committed, so any throw between begin and commit
// leaves the file as it was.
class transaction {
public:
    transaction(const database& db, const char* begin_sql, std::string_view what) : db_(db), what_(what) {
        db_.exec(begin_sql, what_);
    }

    ~transaction() {
        // SQLite rolls back by itself after some errors; ROLLBACK then has nothing to do.
        if (!committed_ && !sqlite3_get_autocommit(db_.get()))
            sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }

    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;

    void commit() {
        db_.exec("COMMIT", what_);
        committed_ = true;
    }

private:
    const database& db_;
    std::string what_;
    bool committed_ = false;
};

int user_version(const database& db) {
    statement query(db, "cannot read schema version", "PRAGMA user_version");
    if (!query.step()) db.reject("cannot read schema version");
    return static_cast<int>(query.read_int());
}

void check_version_known(const database& db, int version) {
    if (version > schema_version)
        db.reject("schema version " + std::to_string(version) + " is newer than this lab knows (" +
                  std::to_string(schema_version) + ")");
}

void ensure_schema(const database& db) {
    // Read first: this is where a file that is not a database fails, before anything writes,
    // and an up-to-date file needs no write lock at all.
    const int found = user_version(db);
    check_version_known(db, found);
    // Per connection, and outside any transaction, where SQLite would ignore it.
    db.exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
    if (found == schema_version) return;

    transaction creating(db, "BEGIN IMMEDIATE", "cannot create schema");
    // Again under the write lock: another process may have created it meanwhile.
    check_version_known(db, user_version(db));
    db.exec(schema_sql, "cannot create schema");
    // A pragma takes no bound parameters; the value is this file's own constant.
    db.exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "cannot set schema version");
    creating.commit();
}

// "k:v/k:v". Refuses what could not be split back apart the same way.
std::string encode_params(const database& db, const cell_result& cell) {
    std::string out;
    for (std::size_t i = 0; i < cell.params.size(); ++i) {
        const auto& [key, value] = cell.params[i];
        if (key.find_first_of(":/") != std::string::npos || value.find('/') != std::string::npos)
            db.reject("cannot append cell " + cell.name() + ": parameter \"" + key + "\" = \"" + value +
                      "\" contains a separator ('/', or ':' in the key)");
        if (i > 0) out += '/';
        out += key;
        out += ':';
        out += value;
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> decode_params(const database& db, std::string_view text) {
    std::vector<std::pair<std::string, std::string>> params;
    if (text.empty()) return params;
    for (;;) {
        const std::size_t slash = text.find('/');
        const std::string_view item = text.substr(0, slash);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) db.reject("stored parameters are malformed: " + std::string(text));
        params.emplace_back(item.substr(0, colon), item.substr(colon + 1));
        if (slash == std::string_view::npos) return params;
        text.remove_prefix(slash + 1);
    }
}

// Shortest text that reads back as the same double, independent of the C locale.
std::string encode_samples(const std::vector<double>& samples) {
    std::string out;
    for (const double sample : samples) {
        char buffer[64];
        const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, sample);
        assert(ec == std::errc{});  // 64 bytes hold any double's shortest form
        if (!out.empty()) out += ' ';
        out.append(buffer, end);
    }
    return out;
}

std::vector<double> decode_samples(const database& db, std::string_view text) {
    std::vector<double> samples;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        const std::string_view item = text.substr(0, space);
        double sample = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), sample);
        if (ec != std::errc{} || end != item.data() + item.size())
            db.reject("stored samples are malformed: " + std::string(item));
        samples.push_back(sample);
        text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
    }
    return samples;
}

std::int64_t insert_run(const database& db, const machine_context& c) {
    statement insert(db, "cannot append run", insert_run_sql);
    insert.bind_text(c.date).bind_text(c.label).bind_text(c.host_name).bind_text(c.cpu_model);
    insert.bind_int(c.logical_cpus).bind_text(c.cpu_list).bind_text(c.kernel).bind_text(c.compiler);
    insert.bind_text(c.build_flags).bind_text(c.governor).bind_text(c.wait_backend);
    insert.bind_int(c.timer_slack_ns).bind_real(c.nanosleep_1ns_us);
    insert.step();
    return sqlite3_last_insert_rowid(db.get());
}

void insert_cell(const database& db, statement& insert, std::int64_t run_id, const cell_result& cell) {
    insert.rewind();
    insert.bind_int(run_id).bind_text(cell.name()).bind_text(cell.suite).bind_text(cell.contender);
    insert.bind_text(encode_params(db, cell)).bind_int(cell.workers).bind_text(cell.status).bind_text(cell.detail);
    insert.bind_int(static_cast<std::int64_t>(cell.ops_per_worker)).bind_int(cell.repetitions);
    insert.bind_text(encode_samples(cell.ns_per_op));
    insert.bind_real(cell.median_ns).bind_real(cell.p25_ns).bind_real(cell.p75_ns).bind_real(cell.cpu_ns_per_op);
    insert.bind_real(cell.min_share).bind_real(cell.max_share).bind_int(cell.has_fairness ? 1 : 0);
    insert.bind_text(cell.affinity).bind_int(cell.oversubscribed ? 1 : 0);
    insert.step();
}

machine_context read_context(statement& row) {
    machine_context c;
    c.date = row.read_text();
    c.label = row.read_text();
    c.host_name = row.read_text();
    c.cpu_model = row.read_text();
    c.logical_cpus = static_cast<std::int32_t>(row.read_int());
    c.cpu_list = row.read_text();
    c.kernel = row.read_text();
    c.compiler = row.read_text();
    c.build_flags = row.read_text();
    c.governor = row.read_text();
    c.wait_backend = row.read_text();
    c.timer_slack_ns = row.read_int();
    c.nanosleep_1ns_us = row.read_real();
    return c;
}

cell_result read_cell(const database& db, statement& row) {
    cell_result cell;
    cell.suite = row.read_text();
    cell.contender = row.read_text();
    cell.params = decode_params(db, row.read_text());
    cell.workers = static_cast<std::int32_t>(row.read_int());
    cell.status = row.read_text();
    cell.detail = row.read_text();
    cell.ops_per_worker = static_cast<std::uint64_t>(row.read_int());
    cell.repetitions = static_cast<std::int32_t>(row.read_int());
    cell.ns_per_op = decode_samples(db, row.read_text());
    cell.median_ns = row.read_real();
    cell.p25_ns = row.read_real();
    cell.p75_ns = row.read_real();
    cell.cpu_ns_per_op = row.read_real();
    cell.min_share = row.read_real();
    cell.max_share = row.read_real();
    cell.has_fairness = row.read_int() != 0;
    cell.affinity = row.read_text();
    cell.oversubscribed = row.read_int() != 0;
    return cell;
}

std::vector<cell_result> read_cells(const database& db, statement& select, std::int64_t run_id) {
    std::vector<cell_result> cells;
    select.rewind();
    select.bind_int(run_id);
    while (select.step()) cells.push_back(read_cell(db, select));
    return cells;
}

}  // namespace

class history_store::connection : public database {
public:
    using database::database;
};

history_store::history_store(const std::string& path) : db_(std::make_unique<connection>(path)) {
    ensure_schema(*db_);
}

history_store::~history_store() = default;

std::int64_t history_store::append(const run_result& run) {
    transaction appending(*db_, "BEGIN IMMEDIATE", "cannot append run");
    const std::int64_t run_id = insert_run(*db_, run.context);
    {
        statement insert(*db_, "cannot append cell", insert_cell_sql);
        for (const cell_result& cell : run.cells) insert_cell(*db_, insert, run_id, cell);
    }
    appending.commit();
    return run_id;
}

std::vector<run_result> history_store::runs(std::size_t limit) const {
    std::vector<run_result> result;
    for (stored_run& stored : stored_runs(limit)) result.push_back(std::move(stored.run));
    return result;
}

std::vector<stored_run> history_store::stored_runs(std::size_t limit) const {
    constexpr auto max_limit = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    const std::int64_t sql_limit = limit == 0 ? -1 : static_cast<std::int64_t>(std::min(limit, max_limit));

    std::vector<stored_run> result;
    transaction reading(*db_, "BEGIN", "cannot read runs");
    {
        statement select_runs(*db_, "cannot read runs", select_runs_sql);
        statement select_cells(*db_, "cannot read cells", select_cells_sql);
        select_runs.bind_int(sql_limit);
        while (select_runs.step()) {
            stored_run stored;
            stored.id = select_runs.read_int();
            stored.run.context = read_context(select_runs);
            stored.run.cells = read_cells(*db_, select_cells, stored.id);
            result.push_back(std::move(stored));
        }
    }
    reading.commit();
    return result;
}

std::optional<run_result> history_store::run(std::int64_t id) const {
    transaction reading(*db_, "BEGIN", "cannot read run");
    std::optional<run_result> found;
    {
        statement select_run(*db_, "cannot read run", select_run_sql);
        select_run.bind_int(id);
        if (select_run.step()) {
            (void)select_run.read_int();  // the id, which the caller gave
            run_result run;
            run.context = read_context(select_run);
            statement select_cells(*db_, "cannot read cells", select_cells_sql);
            run.cells = read_cells(*db_, select_cells, id);
            found = std::move(run);
        }
    }
    reading.commit();
    return found;
}

std::size_t history_store::run_count() const {
    statement count(*db_, "cannot count runs", "SELECT count(*) FROM runs");
    if (!count.step()) db_->reject("cannot count runs");
    return static_cast<std::size_t>(count.read_int());
}

}  // namespace contend::lab
