#include "store/history_schema.hpp"

#include <string_view>

namespace contend::lab::history_detail {
namespace {

// A field's SQL type and default, which follow its C++ type.
template <class T>
std::string schema_column_type(const sql_dialect& d, const T& default_value) {
    if constexpr (std::is_same_v<T, double>) {
        return d.real_type;
    } else if constexpr (std::is_same_v<T, std::string>) {
        // The value is one of results.hpp's own defaults ("complete", "op"), never user input.
        std::string quoted = "'";
        for (const char ch : default_value) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
        return std::string(d.text_type) + " NOT NULL DEFAULT " + quoted + "'";
    } else if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, param_list>) {
        return std::string(d.text_type) + " NOT NULL DEFAULT ''";
    } else if constexpr (std::is_same_v<T, bool>) {
        return std::string(d.bool_type) + " NOT NULL DEFAULT " + (default_value ? d.true_literal : d.false_literal);
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
        return std::string(d.int32_type) + " NOT NULL DEFAULT " + std::to_string(default_value);
    } else {
        return std::string(d.int64_type) + " NOT NULL DEFAULT " +
               std::to_string(static_cast<std::int64_t>(default_value));
    }
}

template <class Record>
std::string schema_column(const sql_dialect& d, const field<Record>& f) {
    static const Record defaults{};
    return std::string(f.name) + " " +
           visit_field(f, defaults, [&](const auto& v) { return schema_column_type(d, v); });
}

// The metrics table, created with the schema or by the migration to version 2.
std::string metrics_table_sql(const sql_dialect& d) {
    return std::string("CREATE TABLE metrics (") + (d.metrics_keyed ? std::string(d.key_column) + ", " : "") +
           "cell_id " + d.int64_type + " NOT NULL REFERENCES cells(id), name " + d.text_type + " NOT NULL, value " +
           d.real_type + ", UNIQUE (cell_id, name));\n";
}

constexpr std::string_view metrics_index_sql = "CREATE INDEX metrics_by_cell ON metrics(cell_id);\n";

}  // namespace

std::string schema_tables_sql(const sql_dialect& d) {
    std::string sql = std::string("CREATE TABLE runs (") + d.key_column;
    for (const auto& f : context_fields()) sql += ", " + schema_column(d, f);
    sql += std::string(");\nCREATE TABLE cells (") + d.key_column + ", run_id " + d.int64_type +
           " NOT NULL REFERENCES runs(id), name " + d.text_type + " NOT NULL";
    for (const auto& f : cell_fields()) sql += ", " + schema_column(d, f);
    sql += ");\n" + metrics_table_sql(d);
    sql +=
        "CREATE INDEX cells_by_name ON cells(name);\n"
        "CREATE INDEX cells_by_run ON cells(run_id);\n";
    sql += metrics_index_sql;
    return sql;
}

std::string migration_sql(const sql_dialect& d, int found) {
    std::string sql;
    for (const auto& f : context_fields())
        if (f.since_schema > found) sql += "ALTER TABLE runs ADD COLUMN " + schema_column(d, f) + ";\n";
    for (const auto& f : cell_fields())
        if (f.since_schema > found) sql += "ALTER TABLE cells ADD COLUMN " + schema_column(d, f) + ";\n";
    if (found < 2) sql += metrics_table_sql(d) + std::string(metrics_index_sql);
    return sql;
}

std::string placeholders(const sql_dialect& d, int from, std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) {
        if (i) out += ", ";
        // Appended piece by piece: GCC 12 warned (-Wrestrict, a false positive of its own)
        // about "$" + std::to_string(...) inlined here.
        if (!d.numbered_parameters) {
            out += '?';
            continue;
        }
        out += '$';
        out += std::to_string(from + static_cast<int>(i));
    }
    return out;
}

std::string insert_run_sql(const sql_dialect& d) {
    const auto fields = fields_in(context_fields(), schema_version);
    return "INSERT INTO runs (" + column_list(fields) + ") VALUES (" + placeholders(d, 1, fields.size()) + ")" +
           d.returning_id;
}

std::string insert_cell_sql(const sql_dialect& d) {
    const auto fields = fields_in(cell_fields(), schema_version);
    return "INSERT INTO cells (run_id, name, " + column_list(fields) + ") VALUES (" +
           placeholders(d, 1, fields.size() + 2) + ")" + d.returning_id;
}

std::string insert_metric_sql(const sql_dialect& d) {
    return "INSERT INTO metrics (cell_id, name, value) VALUES (" + placeholders(d, 1, 3) + ")";
}

std::string newer_version_message(std::int64_t version) {
    return "schema version " + std::to_string(version) + " is newer than this lab knows (" +
           std::to_string(schema_version) + ")";
}

}  // namespace contend::lab::history_detail
