// The history's schema and values, written once for both databases (history_backend.hpp):
// the tables' definitions, the statements' column lists, and how each field's C++ type
// travels as an SQL value and back. What the two spell differently is an sql_dialect; what
// is each database's own (its connection, statements and transactions, where it keeps the
// schema version, its errors) stays in its backend. Internal to lab/store/history_*.cpp.
//
// Values: a double is a REAL (NULL stands for NaN: SQLite cannot store one, and an AVG over
// a column is not poisoned by a NaN), an unsigned 64-bit count is stored as its bit pattern
// in a 64-bit integer, samples and parameters in their text forms (format_samples,
// format_params), a flag as the database's flag type (SQLite: 0 or 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "results/results.hpp"
#include "store/history_backend.hpp"

namespace contend::lab::history_detail {

// How one database spells what the schema needs (sqlite_sql and postgres_sql below give the
// members in this order).
struct sql_dialect {
    // Column types.
    const char* int64_type;
    const char* int32_type;
    const char* real_type;
    const char* text_type;
    const char* bool_type;
    const char* true_literal;  // a flag's default, as SQL text
    const char* false_literal;
    // The id column of runs and cells: an integer key that only grows.
    const char* key_column;
    // Whether a metrics row has an id of its own (key_column), which keeps the order in which
    // a cell's metrics were given; SQLite's implicit rowid does that without one.
    bool metrics_keyed;
    // Parameters numbered ($1, $2...) or not (?).
    bool numbered_parameters;
    // What an INSERT of a run or a cell ends with ("" or " RETURNING id").
    const char* returning_id;
};

// The two dialects, a row each. SQLite cannot store a NaN and turns it into NULL, so a NULL
// REAL reads back as NaN; PostgreSQL stores a NaN as NULL too, so that a figure not measured
// is SQL NULL in both.
// clang-format off
inline constexpr sql_dialect sqlite_sql{"INTEGER", "INTEGER", "REAL", "TEXT", "INTEGER", "1", "0",
                                        "id INTEGER PRIMARY KEY", false, false, ""};
inline constexpr sql_dialect postgres_sql{"bigint", "integer", "double precision", "text", "boolean", "true", "false",
                                          "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", true, true,
                                          " RETURNING id"};
// clang-format on

// The tables and indexes of the current schema: runs, cells, metrics. The index on run_id
// keeps reading a run's cells from scanning every cell ever stored; the one on name serves
// the history of one row. Where the schema version is kept is the backend's.
std::string schema_tables_sql(const sql_dialect& d);

// What brings a history of schema version `found` (1 or later) to the current one: each
// version adds columns (with their defaults) and tables; nothing is rewritten. The new
// version number is the backend's to store.
std::string migration_sql(const sql_dialect& d, int found);

// `count` parameters, the first numbered `from`: "?, ?" or "$3, $4".
std::string placeholders(const sql_dialect& d, int from, std::size_t count);

// The INSERTs of an append, with every column of the current schema: a run (its context
// fields), a cell (run_id, name, then its fields) and a metric (cell_id, name, value).
std::string insert_run_sql(const sql_dialect& d);
std::string insert_cell_sql(const sql_dialect& d);
std::string insert_metric_sql(const sql_dialect& d);

// "schema version N is newer than this lab knows (M)".
std::string newer_version_message(std::int64_t version);

// Whether a database's tables are those of a history of schema `version`: runs and cells
// with every column of that version, and from version 2 a metrics table. `columns_of(table)`
// gives a table's columns, empty when there is no such table.
template <class ColumnsOf>
bool has_history_tables(int version, ColumnsOf&& columns_of) {
    return version >= 1 && has_columns(columns_of("runs"), context_fields(), version) &&
           has_columns(columns_of("cells"), cell_fields(), version) && (version < 2 || !columns_of("metrics").empty());
}

// Binds one field's value, by its C++ type, as the next parameter of `sink`, which has
// bind_text(std::string_view), bind_int(std::int64_t), bind_real(double) and bind_bool(bool).
// Throws std::invalid_argument for a value the history cannot hold (format_params's).
template <class Sink, class T>
void bind_value(Sink& sink, const T& value) {
    if constexpr (std::is_same_v<T, double>) {
        sink.bind_real(value);
    } else if constexpr (std::is_same_v<T, std::string>) {
        sink.bind_text(value);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        sink.bind_text(format_samples(value));
    } else if constexpr (std::is_same_v<T, param_list>) {
        sink.bind_text(format_params(value));
    } else if constexpr (std::is_same_v<T, bool>) {
        sink.bind_bool(value);
    } else {
        sink.bind_int(static_cast<std::int64_t>(value));
    }
}

// Reads one field's value, by its C++ type, from the next column of `row`, which has
// read_text(), read_int(), read_real() and read_bool(). Throws std::invalid_argument for a
// stored value that is malformed.
template <class Row, class T>
void read_value(Row& row, T& value) {
    if constexpr (std::is_same_v<T, double>) {
        value = row.read_real();
    } else if constexpr (std::is_same_v<T, std::string>) {
        value = row.read_text();
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        value = parse_samples(row.read_text());
    } else if constexpr (std::is_same_v<T, param_list>) {
        value = parse_params(row.read_text());
    } else if constexpr (std::is_same_v<T, bool>) {
        value = row.read_bool();
    } else {
        value = static_cast<T>(row.read_int());
    }
}

// bind_value and read_value for `fields` of `record`, in order.
template <class Sink, class Record>
void bind_fields(Sink& sink, const Record& record, const std::vector<const field<Record>*>& fields) {
    for (const auto* f : fields) visit_field(*f, record, [&](const auto& v) { bind_value(sink, v); });
}

template <class Row, class Record>
void read_fields(Row& row, Record& record, const std::vector<const field<Record>*>& fields) {
    for (const auto* f : fields) visit_field(*f, record, [&](auto& v) { read_value(row, v); });
}

}  // namespace contend::lab::history_detail
