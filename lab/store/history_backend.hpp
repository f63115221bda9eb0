// The storage behind history_store (history.hpp): one interface, one implementation per
// database, the choice made in one place (history.cpp, by the form of --db). Internal to the
// history; nothing outside lab/store/history*.cpp includes this.
//
//   history_sqlite.cpp    a file, through SQLite's C API
//   history_postgres.cpp  a PostgreSQL database named by a libpq URI, through libpq
//   history_schema.hpp    what the two share but for dialect: the tables, the statements'
//                         column lists, each field's SQL value
//
// Both store the same schema, generated from the field tables of results.hpp: tables runs,
// cells and metrics whose columns are the fields' names, a field's column present from the
// schema version in its since_schema. Both keep the contract history.hpp states (atomic
// appends, growing ids, one snapshot per read, refusals that write nothing).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/results.hpp"
#include "store/history.hpp"

namespace contend::lab::history_detail {

// Version 1: the runs and cells tables. Version 2: the fields whose since_schema is 2
// (results.hpp) and the metrics table. Version 3: the run's co-tenant. Version 4: a cell's
// modal flag. Version 5: why a cell's fairness was not measured. Version 6: a profiled run's
// locks (cells.lock_profile). Version 7: what other processes took of a cell's CPUs. A
// history of an older version is migrated when it is opened for writing, and read as it is
// otherwise.
inline constexpr int schema_version = 7;

// One open history. Every failure is a std::runtime_error naming the operation, the
// database's own message and where the history is (a URI with its password masked).
class backend {
public:
    virtual ~backend() = default;

    // The schema version as opened (a read-only history may be older than the code).
    virtual int version() const = 0;
    // history_store::append; throws on a read-only history.
    virtual std::int64_t append(const run_result& run, const std::atomic<int>* stop) = 0;
    // The newest `limit` runs (all when 0), oldest first, each with its id.
    virtual std::vector<stored_run> newest_runs(std::size_t limit) const = 0;
    virtual std::optional<stored_run> run(std::int64_t id) const = 0;
    virtual std::size_t run_count() const = 0;
};

// `stop` (may be null) ends a wait for a lock or a long read: the call throws interrupted.
std::unique_ptr<backend> open_sqlite(const std::string& path, history_access access, const std::atomic<int>* stop);
void check_sqlite_appendable(const std::string& path, const std::atomic<int>* stop);

// `uri` as libpq reads it: its scheme in lower case (libpq knows "postgresql://" only so).
std::string libpq_form(std::string_view uri);

// A message of libpq's or the server's, about `uri`, with every password `uri` may hold
// masked: the URI quoted whole, and each password alone, as written or percent-decoded.
std::string without_passwords(std::string_view message, std::string_view uri);

// `stop` (may be null) cancels a statement under way (a long read, a wait for a lock): the
// call throws interrupted.
std::unique_ptr<backend> open_postgres(const std::string& uri, history_access access, const std::atomic<int>* stop);
void check_postgres_appendable(const std::string& uri, const std::atomic<int>* stop);

// The fields a history of schema `version` has columns for.
template <class Record>
std::vector<const field<Record>*> fields_in(std::span<const field<Record>> fields, int version) {
    std::vector<const field<Record>*> out;
    for (const auto& f : fields)
        if (f.since_schema <= version) out.push_back(&f);
    return out;
}

// "a, b, c": the fields' column names, for a SELECT or an INSERT.
template <class Record>
std::string column_list(const std::vector<const field<Record>*>& fields) {
    std::string out;
    for (const auto* f : fields) out.append(out.empty() ? "" : ", ").append(f->name);
    return out;
}

// An object of a database's C library, handed to `release` (its close, finish or clear) when
// the handle goes.
template <auto release>
struct released_by {
    template <class T>
    void operator()(T* object) const noexcept {
        release(object);
    }
};
template <class T, auto release>
using c_handle = std::unique_ptr<T, released_by<release>>;

// A transaction that rolls back unless committed, so that any throw between begin and commit
// leaves the history as it was. `Database` (each backend's connection) has
// exec(begin_sql, what), which throws, and roll_back(), which ends a transaction under way.
template <class Database>
class transaction {
public:
    transaction(const Database& db, const char* begin_sql, std::string_view what) : db_(db), what_(what) {
        db_.exec(begin_sql, what_);
    }

    ~transaction() {
        if (!committed_) db_.roll_back();
    }

    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;

    void commit() {
        db_.exec("COMMIT", what_);
        committed_ = true;
    }

private:
    const Database& db_;
    std::string what_;
    bool committed_ = false;
};

// Whether `columns` (a table's, as the database lists them) hold every field of `version`.
template <class Record>
bool has_columns(const std::vector<std::string>& columns, std::span<const field<Record>> fields, int version) {
    for (const auto* f : fields_in(fields, version)) {
        bool found = false;
        for (const auto& c : columns) found = found || c == f->name;
        if (!found) return false;
    }
    return true;
}

}  // namespace contend::lab::history_detail
