// The results history in a PostgreSQL database, through libpq. The same tables and columns
// as the SQLite file (history_backend.hpp), with PostgreSQL's types; the schema version is
// the one row of the table contend_schema.
//
// Values always travel as parameters of PQexecParams, in text form, never inside SQL text.
// The transactions, and why:
//  - an append is one READ COMMITTED transaction that first locks the runs table against
//    other appenders (EXCLUSIVE mode: readers still read). Appenders queue for that lock in
//    the server's order, first come first served, for up to append_lock_wait: a fleet
//    appending at once waits its turn however long each append takes. Ids come from identity columns,
//    which only grow; the lock makes runs commit in the order of their ids, as SQLite's
//    single writer does, so a reader never sees run 5 and later a run 4 appear before it;
//  - every read is one REPEATABLE READ, READ ONLY transaction: one snapshot for the runs,
//    their cells and their metrics;
//  - creating or migrating the schema is one transaction under a transaction-scoped
//    advisory lock, which serializes two processes opening a new database at once; the
//    second finds the work done when it gets the lock.
#include <libpq-fe.h>
#include <poll.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "store/history_backend.hpp"
#include "store/history_schema.hpp"
#include "store/interrupted.hpp"
#include "text/utf8.hpp"

namespace contend::lab::history_detail {
namespace {

// Used when the URI gives no connect_timeout: an unreachable server is reported after this
// long instead of libpq's default, which is to wait for the operating system (minutes).
constexpr const char* default_connect_timeout_s = "10";

// How long a migration, or a statement of an append once it holds the runs table, waits for a
// lock before giving up: as long as SQLite's busy timeout (history_sqlite.cpp).
constexpr const char* lock_timeout = "5s";

// How long an append waits for the runs table while other appends hold it. Not lock_timeout:
// one append of 60,000 benchmarks holds it for longer than 5 s, and a fleet appending at once
// must queue, not fail. Bounded, so that an appender stopped while it holds the lock (a
// suspended process, a hung client) is reported rather than waited for forever; a stop
// signal ends the wait at once.
constexpr std::chrono::minutes append_lock_wait{10};

// A read looks at the stop flag every this many rows it turns into runs, cells or metrics.
constexpr int rows_between_stop_checks = 4096;

// The key of the advisory lock that serializes schema creation and migration. Any fixed
// number works; this one is "contend" in ASCII, unlikely to be another program's key.
constexpr long long schema_lock_key = 0x636f6e74656e64;

// The schema of the current version, created in a database schema that holds no table: the
// history's tables, and the one row of contend_schema that holds its version.
std::string schema_sql() {
    return "CREATE TABLE contend_schema (version integer NOT NULL);\n" + schema_tables_sql(postgres_sql) +
           "INSERT INTO contend_schema (version) VALUES (" + std::to_string(schema_version) + ");\n";
}

using connection_handle = c_handle<PGconn, PQfinish>;
using result_handle = c_handle<PGresult, PQclear>;

// libpq's messages end in a newline and may span lines (DETAIL, HINT): one line for ours.
std::string one_line(std::string_view message) {
    std::string out;
    bool line_start = false;
    for (const char ch : message) {
        if (ch == '\n') {
            out += "; ";
            line_start = true;
        } else if (!(line_start && (ch == ' ' || ch == '\t'))) {  // libpq indents a continued line
            out += ch;
            line_start = false;
        }
    }
    while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
    return out;
}

// The parameters of one statement, in order ($1, $2...): text, or NULL.
class parameters {
public:
    parameters& bind_text(std::string_view value) {
        // libpq passes C strings: a NUL would cut the value short, silently.
        if (value.find('\0') != std::string_view::npos)
            throw std::invalid_argument("text holds a NUL character, which PostgreSQL cannot store");
        values_.emplace_back(std::string(value));
        return *this;
    }

    parameters& bind_int(std::int64_t value) {
        values_.emplace_back(std::to_string(value));
        return *this;
    }

    parameters& bind_bool(bool value) {
        values_.emplace_back(value ? "true" : "false");
        return *this;
    }

    parameters& bind_real(double value) {
        if (std::isnan(value)) {
            values_.emplace_back(std::nullopt);  // as in the SQLite file: NULL reads back as NaN
        } else if (std::isinf(value)) {
            values_.emplace_back(value > 0 ? "Infinity" : "-Infinity");
        } else {
            // The shortest text that reads back as the same double. A -0.0 is stored as 0.0:
            // the SQLite file does so, and the two backends give back the same runs.
            char buffer[64];
            const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value == 0 ? 0.0 : value);
            values_.emplace_back(std::string(buffer, end));
        }
        return *this;
    }

    parameters& bind_null() {
        values_.emplace_back(std::nullopt);
        return *this;
    }

    std::vector<const char*> pointers() const {
        std::vector<const char*> out;
        for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
        return out;
    }

private:
    std::vector<std::optional<std::string>> values_;
};

// A result's fields, read in order along one row: each read_* takes the next column.
class row_reader {
public:
    row_reader(const PGresult* result, int row) : result_(result), row_(row) {}

    bool is_null() const { return PQgetisnull(result_, row_, column_) != 0; }

    std::string read_text() {
        const int c = next();
        return {PQgetvalue(result_, row_, c), static_cast<std::size_t>(PQgetlength(result_, row_, c))};
    }

    std::int64_t read_int() {
        const std::string text = read_text();
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size())
            throw std::invalid_argument("not an integer: '" + text + "'");
        return value;
    }

    bool read_bool() {
        const std::string text = read_text();
        if (text != "t" && text != "f") throw std::invalid_argument("not a boolean: '" + text + "'");
        return text == "t";
    }

    double read_real() {
        if (is_null()) {
            ++column_;
            return std::numeric_limits<double>::quiet_NaN();
        }
        const std::string text = read_text();
        if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();  // written by another program
        if (text == "Infinity") return std::numeric_limits<double>::infinity();
        if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        // A value below the smallest subnormal is reported as out of range yet read as 0,
        // as PostgreSQL itself reads it.
        if ((ec != std::errc{} && ec != std::errc::result_out_of_range) || end != text.data() + text.size())
            throw std::invalid_argument("not a number: '" + text + "'");
        return value;
    }

private:
    int next() { return column_++; }

    const PGresult* result_;
    int row_;
    int column_ = 0;
};

// An open connection, with the URI (password masked) every error message names.
class database {
public:
    // `stop` (may be null: never): a statement sent by query() is cancelled once it holds a
    // signal, and any failure then throws interrupted.
    database(const std::string& given_uri, bool read_only, const std::atomic<int>* stop = nullptr)
        : uri_(libpq_form(given_uri)), where_(history_store::printable(given_uri)), read_only_(read_only), stop_(stop) {
        // Later keywords override earlier ones, and the URI (dbname, expanded) overrides
        // what comes before it: the URI may set its own connect_timeout or
        // application_name, but the client encoding is always UTF-8, which is what the
        // history's text is (the server converts to the database's encoding).
        const char* keywords[] = {"connect_timeout", "application_name", "dbname", "client_encoding", nullptr};
        const char* values[] = {default_connect_timeout_s, "contend", uri_.c_str(), "UTF8", nullptr};
        conn_.reset(PQconnectdbParams(keywords, values, 1));
        if (!conn_) reject("cannot connect: out of memory");
        if (PQstatus(conn_.get()) != CONNECTION_OK) fail("cannot connect", nullptr);
        // Notices (a ROLLBACK with nothing to roll back, an identity's implicit sequence) are
        // not ours to print: libpq would write them to stderr.
        PQsetNoticeProcessor(
            conn_.get(), [](void*, const char*) {}, nullptr);
        // extra_float_digits 3: doubles come back in a form that reads back exactly (the
        // shortest one since PostgreSQL 12; 17 digits before). A read-only history opens
        // read-only transactions only, so nothing can write through it by mistake.
        exec(std::string("SET extra_float_digits = 3; SET lock_timeout = '") + lock_timeout + "'" +
                 (read_only ? "; SET default_transaction_read_only = on" : ""),
             "cannot set up the session");
    }

    bool read_only() const noexcept { return read_only_; }
    PGconn* get() const noexcept { return conn_.get(); }
    const std::string& where() const noexcept { return where_; }

    // Throws for an error PostgreSQL reported: the result's message, or the connection's
    // when there is no result; as interrupted when a stop signal came (the statement was
    // cancelled for it, or failed meanwhile).
    [[noreturn]] void fail(std::string_view what, const PGresult* result) const {
        throw_if_stopped_while(what);
        const char* message = result ? PQresultErrorMessage(result) : "";
        if (*message == '\0') message = PQerrorMessage(conn_.get());
        // libpq quotes what it could not parse, a password included.
        throw std::runtime_error("history: " + std::string(what) + ": " + without_passwords(one_line(message), uri_) +
                                 " (" + where_ + ")");
    }

    // Throws for a problem PostgreSQL knows nothing about (bad input, unexpected content).
    [[noreturn]] void reject(std::string_view why) const {
        throw std::runtime_error("history: " + std::string(why) + " (" + where_ + ")");
    }

    // Runs SQL of no parameters and no rows: several statements may be given.
    void exec(const std::string& sql, std::string_view what) const {
        const result_handle result(PQexec(conn_.get(), sql.c_str()));
        if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) fail(what, result.get());
    }

    // Ends the transaction under way, if any, for transaction (history_backend.hpp). After a
    // failed statement the transaction is aborted: ROLLBACK ends it. On a broken connection
    // there is nothing to end (the server rolls back by itself).
    void roll_back() const noexcept {
        if (PQtransactionStatus(conn_.get()) != PQTRANS_IDLE) PQclear(PQexec(conn_.get(), "ROLLBACK"));
    }

    // Runs one statement with its parameters; its rows, if any, are in the result. With a
    // stop flag, it is sent and waited for (send_and_wait), so that a signal cancels it.
    result_handle query(std::string_view what, const std::string& sql, const parameters& params = {}) const {
        result_handle result;
        if (stop_ == nullptr) {
            const std::vector<const char*> values = params.pointers();
            result.reset(PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                      nullptr, nullptr, 0));
        } else {
            throw_if_stopped_while(what);  // rather than send it only to cancel it
            result = send_and_wait(what, sql, params, stop_, std::nullopt).first;
        }
        const ExecStatusType status = PQresultStatus(result.get());
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) fail(what, result.get());
        return result;
    }

    // Why send_and_wait cancelled its statement.
    enum class cancelled { no, stop, deadline };

    // Sends one statement and waits for its result, looking at `stop` (may be null) and the
    // deadline (if any) every 100 ms: when either says so, the statement is cancelled, and the
    // server answers it with an error. The result (null on a broken connection) and why it
    // was cancelled; the caller checks the result's status.
    std::pair<result_handle, cancelled> send_and_wait(
        std::string_view what, const std::string& sql, const parameters& params, const std::atomic<int>* stop,
        std::optional<std::chrono::steady_clock::time_point> deadline) const {
        PGconn* conn = conn_.get();
        const std::vector<const char*> values = params.pointers();
        if (PQsendQueryParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                              nullptr, 0) == 0)
            fail(what, nullptr);
        cancelled why = cancelled::no;
        while (PQisBusy(conn) != 0) {
            if (why == cancelled::no) {
                if (stop != nullptr && stop->load() != 0) why = cancelled::stop;
                else if (deadline && std::chrono::steady_clock::now() > *deadline) why = cancelled::deadline;
                if (why != cancelled::no) {
                    if (PGcancel* cancel = PQgetCancel(conn)) {
                        char error[256];
                        PQcancel(cancel, error, sizeof error);
                        PQfreeCancel(cancel);
                    }
                }
            }
            pollfd ready{PQsocket(conn), POLLIN, 0};
            ::poll(&ready, 1, 100);
            if (PQconsumeInput(conn) == 0) fail(what, nullptr);
        }
        result_handle result(PQgetResult(conn));
        while (PGresult* more = PQgetResult(conn)) PQclear(more);  // the end of this statement's results
        return {std::move(result), why};
    }

    // Throws interrupted when the stop flag holds a signal; a read calls it between rows.
    void throw_if_stopped_while(std::string_view what) const {
        throw_if_stopped(stop_, "history: " + std::string(what) + ": given up; nothing was stored (" + where_ + ")");
    }

    // The one value of a query that returns one row of one column.
    std::int64_t query_int(std::string_view what, const std::string& sql, const parameters& params = {}) const {
        const result_handle result = query(what, sql, params);
        if (PQntuples(result.get()) != 1 || PQnfields(result.get()) != 1)
            reject(std::string(what) + ": expected one value");
        return read(what, [&] { return row_reader(result.get(), 0).read_int(); });
    }

    // Runs `reading`, turning a value that cannot be read into an error naming the history.
    template <class Read>
    auto read(std::string_view what, Read&& reading) const -> decltype(reading()) {
        try {
            return reading();
        } catch (const std::invalid_argument& e) {
            reject(std::string(what) + ": stored value is malformed: " + e.what());
        }
    }

private:
    std::string uri_;  // as libpq reads it
    std::string where_;
    bool read_only_;
    const std::atomic<int>* stop_;
    connection_handle conn_;
};

constexpr const char* read_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

// The relations (tables, views...) of the current schema, which is where the history's tables
// are created and looked for.
std::int64_t relation_count(const database& db) {
    return db.query_int("cannot read the schema",
                        "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = "
                        "c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', "
                        "'f')");
}

// The columns of `table` in the current schema, empty when there is no such table.
std::vector<std::string> columns_of(const database& db, const char* table) {
    const result_handle result =
        db.query("cannot read the schema",
                 "SELECT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
                 " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
                 " AND c.relname = $1 AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped",
                 parameters().bind_text(table));
    std::vector<std::string> columns;
    for (int row = 0; row < PQntuples(result.get()); ++row)
        columns.push_back(row_reader(result.get(), row).read_text());
    return columns;
}

// What the current schema holds: 0 when it holds no table at all (it may become a history),
// or the schema version of a contend history. Anything else -- another program's tables, a
// version newer than this lab knows, a history missing a column -- is refused with the
// reason, and nothing is written.
int history_version(const database& db) {
    const std::int64_t relations = relation_count(db);
    const std::vector<std::string> version_columns = columns_of(db, "contend_schema");
    if (relations == 0) return 0;
    std::int64_t version = 0;
    if (version_columns == std::vector<std::string>{"version"}) {
        const result_handle result = db.query("cannot read schema version", "SELECT version FROM contend_schema");
        if (PQntuples(result.get()) == 1 && !PQgetisnull(result.get(), 0, 0))
            version = db.read("cannot read schema version", [&] { return row_reader(result.get(), 0).read_int(); });
    }
    if (version > schema_version) db.reject(newer_version_message(version));
    const int v = static_cast<int>(version);
    if (!has_history_tables(v, [&](const char* table) { return columns_of(db, table); }))
        db.reject("not a contend history: the database's schema holds " + std::to_string(relations) +
                  " tables of another schema (contend schema version " + std::to_string(version) +
                  "); it was left untouched. Give --db an empty database");
    return v;
}

// history_version in one read-only snapshot.
int history_version_snapshot(const database& db) {
    transaction reading(db, read_snapshot, "cannot read the schema");
    const int version = history_version(db);
    reading.commit();
    return version;
}

// Brings an empty schema or a history of an older version to the current version, in one
// transaction: either the whole migration happens or none of it.
void migrate(const database& db) {
    transaction migrating(db, "BEGIN", "cannot create or migrate the schema");
    db.query("cannot create or migrate the schema", "SELECT pg_advisory_xact_lock($1)",
             parameters().bind_int(schema_lock_key));
    // Again under the lock, in a snapshot taken after it: another process may have done it.
    const int found = history_version(db);
    if (found == schema_version) return;
    if (found == 0) {
        db.exec(schema_sql(), "cannot create schema");
    } else {
        db.exec(migration_sql(postgres_sql, found), "cannot migrate the schema");
        db.query("cannot set schema version", "UPDATE contend_schema SET version = $1",
                 parameters().bind_int(schema_version));
    }
    migrating.commit();
}

class postgres_history final : public backend {
public:
    postgres_history(const std::string& uri, history_access access, const std::atomic<int>* stop)
        : db_(uri, access == history_access::read_only, stop) {
        version_ = history_version_snapshot(db_);
        if (access == history_access::read_only) {
            if (version_ == 0) db_.reject("holds no contend history (run `contend bench` first)");
            return;
        }
        // Checked first, in a read-only snapshot: a foreign or newer schema fails before
        // anything writes; an up-to-date one takes no lock at all.
        if (version_ != schema_version) migrate(db_);
        version_ = schema_version;
    }

    int version() const override { return version_; }

    std::int64_t append(const run_result& run, const std::atomic<int>* stop) override {
        if (db_.read_only()) db_.reject("opened read-only: cannot append");
        const std::string undone = "nothing was stored (" + db_.where() + ")";
        throw_if_stopped(stop, undone);
        const auto run_fields = fields_in(context_fields(), schema_version);
        const auto cell_columns = fields_in(cell_fields(), schema_version);
        const std::string insert_run = insert_run_sql(postgres_sql);
        const std::string insert_cell = insert_cell_sql(postgres_sql);
        const std::string insert_metric = insert_metric_sql(postgres_sql);

        transaction appending(db_, "BEGIN", "cannot append run");
        lock_runs_for_append(stop, undone);
        parameters run_values;
        bind_record(run_values, run.context, run_fields, "run");
        const std::int64_t run_id = db_.query_int("cannot append run", insert_run, run_values);
        for (const cell_result& cell : run.cells) {
            throw_if_stopped(stop, undone);  // the transaction then rolls back
            parameters cell_values;
            cell_values.bind_int(run_id);
            // The name escaped in messages: a NUL in it would cut the message there.
            bind_record(cell_values, cell, cell_columns, "cell " + message_text(cell.name()), cell.name());
            const std::int64_t cell_id = db_.query_int("cannot append cell", insert_cell, cell_values);
            for (const auto& [name, value] : cell.metrics) {
                parameters metric_values;
                try {
                    check_metric_name(name);
                    metric_values.bind_int(cell_id).bind_text(name).bind_real(value);
                } catch (const std::invalid_argument& e) {
                    db_.reject("cannot append cell " + message_text(cell.name()) + ": " + e.what());
                }
                db_.query("cannot append metric", insert_metric, metric_values);
            }
        }
        throw_if_stopped(stop, undone);
        appending.commit();
        return run_id;
    }

    std::vector<stored_run> newest_runs(std::size_t limit) const override {
        parameters selection;
        constexpr auto max_limit = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
        if (limit == 0) selection.bind_null();  // LIMIT NULL: no limit
        else selection.bind_int(static_cast<std::int64_t>(std::min(limit, max_limit)));
        return read_runs("SELECT id FROM runs ORDER BY id DESC LIMIT $1", selection);
    }

    std::optional<stored_run> run(std::int64_t id) const override {
        auto found = read_runs("SELECT $1::bigint", parameters().bind_int(id));
        if (found.empty()) return std::nullopt;
        return std::move(found.front());
    }

    std::size_t run_count() const override {
        return static_cast<std::size_t>(db_.query_int("cannot count runs", "SELECT count(*) FROM runs"));
    }

private:
    // LOCK TABLE runs, waiting in the server's queue for up to append_lock_wait while another
    // append holds it. The statement is sent without waiting for its answer, so that the wait
    // can look at `stop` (every 100 ms) and cancel the request when a signal asks to stop.
    void lock_runs_for_append(const std::atomic<int>* stop, const std::string& undone) const {
        db_.exec("SET LOCAL lock_timeout = 0", "cannot append run");  // this transaction only
        using cancelled = database::cancelled;
        const auto [locked, why] = db_.send_and_wait("cannot append run", "LOCK TABLE runs IN EXCLUSIVE MODE", {}, stop,
                                                     std::chrono::steady_clock::now() + append_lock_wait);
        if (PQresultStatus(locked.get()) != PGRES_COMMAND_OK) {
            if (why == cancelled::stop) throw_if_stopped(stop, undone);
            if (why == cancelled::deadline)
                db_.reject("cannot append run: other appends held the runs table for more than " +
                           std::to_string(append_lock_wait.count()) + " minutes; nothing was stored");
            db_.fail("cannot append run", locked.get());
        }
        db_.exec(std::string("SET LOCAL lock_timeout = '") + lock_timeout + "'", "cannot append run");
    }

    // Parameters for `fields` of `record`, after those already in `values`; `name` (when not
    // empty) first. A value the history cannot hold is refused before anything is sent.
    template <class Record>
    void bind_record(parameters& values, const Record& record, const std::vector<const field<Record>*>& fields,
                     const std::string& what, const std::string& name = {}) const {
        try {
            if (!name.empty()) values.bind_text(name);
            bind_fields(values, record, fields);
        } catch (const std::invalid_argument& e) {
            db_.reject("cannot append " + what + ": " + e.what());
        }
    }

    // Reads the runs whose ids `selection` (a query of one column, with its parameters)
    // gives, with their cells and metrics, in one snapshot: three queries, whatever the
    // number of runs. The columns read are those of the schema version as opened: a field
    // added later keeps its default.
    std::vector<stored_run> read_runs(const std::string& selection, const parameters& params) const {
        const auto run_fields = fields_in(context_fields(), version_);
        const auto cell_columns = fields_in(cell_fields(), version_);
        std::vector<stored_run> result;
        transaction reading(db_, read_snapshot, "cannot read runs");
        const result_handle runs = db_.query(
            "cannot read runs",
            "SELECT id, " + column_list(run_fields) + " FROM runs WHERE id IN (" + selection + ") ORDER BY id", params);
        std::map<std::int64_t, std::size_t> run_at;  // run id -> index in result
        for (int row = 0; row < PQntuples(runs.get()); ++row) {
            if (row % rows_between_stop_checks == 0) db_.throw_if_stopped_while("cannot read runs");
            row_reader reader(runs.get(), row);
            stored_run& stored = result.emplace_back();
            db_.read("cannot read runs", [&] {
                stored.id = reader.read_int();
                read_fields(reader, stored.run.context, run_fields);
                return 0;
            });
            run_at[stored.id] = result.size() - 1;
        }
        const result_handle cells = db_.query("cannot read cells",
                                              "SELECT run_id, id, " + column_list(cell_columns) +
                                                  " FROM cells WHERE run_id IN (" + selection + ") ORDER BY id",
                                              params);
        std::map<std::int64_t, std::pair<std::size_t, std::size_t>> cell_at;  // cell id -> run, cell in result
        for (int row = 0; row < PQntuples(cells.get()); ++row) {
            if (row % rows_between_stop_checks == 0) db_.throw_if_stopped_while("cannot read cells");
            row_reader reader(cells.get(), row);
            db_.read("cannot read cells", [&] {
                const std::int64_t run_id = reader.read_int();
                const std::int64_t cell_id = reader.read_int();
                const auto owner = run_at.find(run_id);
                if (owner == run_at.end()) throw std::invalid_argument("a cell of no run read");
                auto& run_cells = result[owner->second].run.cells;
                cell_result& cell = run_cells.emplace_back();
                read_fields(reader, cell, cell_columns);
                cell_at[cell_id] = {owner->second, run_cells.size() - 1};
                return 0;
            });
        }
        if (version_ >= 2) {
            const result_handle metrics =
                db_.query("cannot read metrics",
                          "SELECT m.cell_id, m.name, m.value FROM metrics m JOIN cells c ON c.id = m.cell_id"
                          " WHERE c.run_id IN (" +
                              selection + ") ORDER BY m.id",
                          params);
            for (int row = 0; row < PQntuples(metrics.get()); ++row) {
                if (row % rows_between_stop_checks == 0) db_.throw_if_stopped_while("cannot read metrics");
                row_reader reader(metrics.get(), row);
                db_.read("cannot read metrics", [&] {
                    const auto cell = cell_at.find(reader.read_int());
                    if (cell == cell_at.end()) throw std::invalid_argument("a metric of no cell read");
                    std::string name = reader.read_text();
                    const auto [run_index, cell_index] = cell->second;
                    result[run_index].run.cells[cell_index].metrics.emplace_back(std::move(name), reader.read_real());
                    return 0;
                });
            }
        }
        reading.commit();
        return result;
    }

    database db_;
    int version_ = schema_version;  // of the database, as opened
};

}  // namespace

std::unique_ptr<backend> open_postgres(const std::string& uri, history_access access, const std::atomic<int>* stop) {
    return std::make_unique<postgres_history>(uri, access, stop);
}

void check_postgres_appendable(const std::string& uri, const std::atomic<int>* stop) {
    const database db(uri, true, stop);
    (void)history_version_snapshot(db);
}

}  // namespace contend::lab::history_detail
