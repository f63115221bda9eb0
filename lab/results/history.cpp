// history_store: picks the backend by the form of the path (a URI is a PostgreSQL database,
// anything else an SQLite file) and hands every call to it. The backends are
// history_sqlite.cpp and history_postgres.cpp (history_backend.hpp).
#include "results/history.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "results/history_backend.hpp"

namespace contend::lab {

bool history_store::is_database_uri(std::string_view path) {
    // libpq's two URI schemes. A file of that name can still be given as ./postgres://...
    return path.starts_with("postgresql://") || path.starts_with("postgres://");
}

std::string history_store::printable(std::string_view path) {
    if (!is_database_uri(path)) return std::string(path);
    constexpr std::string_view masked = "***";
    std::string out(path);
    // postgresql://[user[:password]@][host][:port][/dbname][?param=value&...]: the user
    // information ends at an '@' before the path or the query. libpq takes the first '@';
    // masking up to the last one hides more when a password holds a raw '@'.
    const std::size_t authority = out.find("://") + 3;
    const std::size_t authority_end = std::min(out.find_first_of("/?", authority), out.size());
    const std::size_t at = out.rfind('@', authority_end == 0 ? 0 : authority_end - 1);
    if (at != std::string::npos && at >= authority) {
        const std::size_t colon = out.find(':', authority);
        if (colon < at) out.replace(colon + 1, at - colon - 1, masked);
    }
    // ...?password=secret&...: every value of a "password" parameter.
    const std::size_t query = out.find('?');
    if (query != std::string::npos) {
        std::size_t at_param = query + 1;
        while (at_param < out.size()) {
            const std::size_t end = std::min(out.find('&', at_param), out.size());
            const std::string_view param = std::string_view(out).substr(at_param, end - at_param);
            if (param.starts_with("password=")) {
                const std::size_t value = at_param + std::string_view("password=").size();
                out.replace(value, end - value, masked);
                at_param = value + masked.size() + 1;
            } else {
                at_param = end + 1;
            }
        }
    }
    return out;
}

history_store::history_store(const std::string& path, history_access access)
    : db_(is_database_uri(path) ? history_detail::open_postgres(path, access)
                                : history_detail::open_sqlite(path, access)) {}

history_store::~history_store() = default;

void history_store::check_appendable(const std::string& path) {
    if (is_database_uri(path)) history_detail::check_postgres_appendable(path);
    else history_detail::check_sqlite_appendable(path);
}

std::int64_t history_store::append(const run_result& run) { return db_->append(run); }

std::vector<run_result> history_store::runs(std::size_t limit) const {
    std::vector<run_result> result;
    for (stored_run& stored : stored_runs(limit)) result.push_back(std::move(stored.run));
    return result;
}

std::vector<stored_run> history_store::stored_runs(std::size_t limit) const { return db_->newest_runs(limit); }

std::optional<run_result> history_store::run(std::int64_t id) const {
    auto found = db_->run(id);
    if (!found) return std::nullopt;
    return std::move(found->run);
}

std::size_t history_store::run_count() const { return db_->run_count(); }

int history_store::schema_version_of_file() const { return db_->version(); }

}  // namespace contend::lab
