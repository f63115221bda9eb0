// history_store: picks the backend by the form of the path (a URI is a PostgreSQL database,
// anything else an SQLite file) and hands every call to it. The backends are
// history_sqlite.cpp and history_postgres.cpp (history_backend.hpp).
#include "store/history.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "store/history_backend.hpp"

namespace contend::lab {

namespace {

char lower(char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; }

bool starts_with_any_case(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (lower(text[i]) != prefix[i]) return false;
    return true;
}

// The scheme of a path written as a URI, "scheme:..." (RFC 3986: a letter, then letters,
// digits, '+', '-' or '.'), in lower case; "" when the path does not start with one. A path
// whose first ':' comes after a '/' has no scheme ("dir/a:b").
std::string scheme_of(std::string_view path) {
    const std::size_t colon = path.find(':');
    if (colon == 0 || colon == std::string_view::npos) return {};
    std::string scheme;
    for (std::size_t i = 0; i < colon; ++i) {
        const char ch = lower(path[i]);
        const bool letter = ch >= 'a' && ch <= 'z';
        if (!letter && (i == 0 || !((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.'))) return {};
        scheme += ch;
    }
    return scheme;
}

// A PostgreSQL scheme misspelt or a typo away from one: "postgresql:/h/db", "postgressql://",
// "pgsql://". Taken as a file path, such a --db would create folders named after the URI.
bool postgres_like(const std::string& scheme) {
    return scheme.starts_with("postgres") || scheme == "pg" || scheme == "pgsql" || scheme == "psql";
}

// Whether `path` reads as a URI, so that its user information may hold a password: a
// PostgreSQL URI, anything refused as a near-miss of one, or another "scheme:/..." form.
bool uri_like(std::string_view path) {
    const std::string scheme = scheme_of(path);
    if (scheme.empty()) return false;
    return postgres_like(scheme) || path.substr(scheme.size() + 1).starts_with("/");
}

// `text` with %XX escapes decoded where they are well formed, as libpq decodes a URI.
std::string percent_decoded(std::string_view text);

// Whether the query parameter `item` ("key=value") carries a secret: libpq's password and
// sslpassword (the key of a client certificate's key), their keys in any case and as
// percent-escapes (libpq decodes a key before it looks it up). Returns the value's offset in
// `item`, or npos.
std::size_t secret_value_at(std::string_view item) {
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) return std::string_view::npos;
    std::string key = percent_decoded(item.substr(0, equals));
    for (char& ch : key) ch = lower(ch);
    return key == "password" || key == "sslpassword" ? equals + 1 : std::string_view::npos;
}

// Each value that may be a secret in the URI-like `uri`, as written there: the user
// information's password and every password or sslpassword parameter of the query.
// Over-inclusive where the URI is malformed: a secret shown is worse than a word masked.
std::vector<std::string> passwords_in(std::string_view uri) {
    std::vector<std::string> found;
    if (!uri_like(uri)) return found;
    const std::size_t scheme_end = uri.find(':') + 1;
    std::size_t authority = scheme_end;
    while (authority < uri.size() && uri[authority] == '/') ++authority;
    // libpq ends the user information at the first '@' before any '/'; a raw '@' or '?' in
    // the password moves that end, so both the first and the last '@' before the path count.
    const std::size_t path_start = std::min(uri.find('/', authority), uri.size());
    const std::size_t colon =
        authority < uri.size() && uri[authority] == '[' ? std::string_view::npos : uri.find(':', authority);
    const std::size_t first_at = uri.find('@', authority);
    const std::size_t last_at = path_start == authority ? std::string_view::npos : uri.rfind('@', path_start - 1);
    for (const std::size_t at : {first_at, last_at})
        if (at != std::string_view::npos && at >= authority && at < path_start && colon < at)
            found.emplace_back(uri.substr(colon + 1, at - colon - 1));
    // A raw '/' in the password ends libpq's user information early: "u:pa/ss@h" reads as the
    // host u and the port "pa", which its error message then quotes. A "port" that is not a
    // number, with an '@' after the '/', is taken for the start of a password.
    const std::size_t later_at = uri.find('@', path_start);
    if (colon < path_start && later_at != std::string_view::npos) {
        const std::string_view port = uri.substr(colon + 1, path_start - colon - 1);
        if (port.find_first_not_of("0123456789") != std::string_view::npos) {
            found.emplace_back(port);
            found.emplace_back(uri.substr(colon + 1, later_at - colon - 1));
        }
    }
    const std::size_t query = uri.find('?');
    if (query != std::string_view::npos) {
        std::size_t param = query + 1;
        while (param < uri.size()) {
            const std::size_t end = std::min(uri.find('&', param), uri.size());
            const std::string_view item = uri.substr(param, end - param);
            if (const std::size_t value = secret_value_at(item); value != std::string_view::npos)
                found.emplace_back(item.substr(value));
            param = end + 1;
        }
    }
    return found;
}

// The tail of a password that holds a raw '@': libpq ends the password at its first '@' and
// reads the rest, up to the last '@' before the path, as the start of the host name, which
// its messages then quote ("could not translate host name "ss@h""). "" when there is none.
std::string password_tail_in(std::string_view uri) {
    if (!uri_like(uri)) return {};
    std::size_t authority = uri.find(':') + 1;
    while (authority < uri.size() && uri[authority] == '/') ++authority;
    const std::size_t path_start = std::min(uri.find('/', authority), uri.size());
    const std::size_t first_at = uri.find('@', authority);
    if (first_at == std::string_view::npos || first_at >= path_start) return {};
    const std::size_t last_at = uri.rfind('@', path_start - 1);
    return last_at > first_at ? std::string(uri.substr(first_at + 1, last_at - first_at - 1)) : std::string();
}

std::string percent_decoded(std::string_view text) {
    auto hex = [](char ch) {
        if (ch >= '0' && ch <= '9') return ch - '0';
        if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
        return -1;
    };
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
            out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

void replace_all(std::string& text, std::string_view what, std::string_view with) {
    if (what.empty()) return;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
        text.replace(at, what.size(), with);
}

constexpr std::string_view masked = "***";

}  // namespace

bool history_store::is_database_uri(std::string_view path) {
    // libpq's two URI schemes, in any case (a scheme is case-insensitive, RFC 3986 3.1). A
    // file of that name can still be given as ./postgres://...
    return starts_with_any_case(path, "postgresql://") || starts_with_any_case(path, "postgres://");
}

std::vector<std::string> history_store::files_of(const std::string& path) {
    if (is_database_uri(path) || path.empty()) return {};
    std::vector<std::string> bases = {path};
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
        const std::filesystem::path target = std::filesystem::canonical(path, ec);
        if (!ec) bases.push_back(target.string());
    }
    std::vector<std::string> files;
    for (const std::string& base : bases)
        for (const char* suffix : {"", "-journal", "-wal", "-shm"}) files.push_back(base + suffix);
    return files;
}

std::string history_store::printable(std::string_view path) {
    if (!uri_like(path)) return std::string(path);
    std::string out(path);
    // [scheme]://[user[:password]@][host][:port][/dbname][?param=value&...]: every form of
    // passwords_in, longest first, so that a shorter one inside a longer one cannot leave
    // part of it.
    std::vector<std::string> secrets = passwords_in(path);
    std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    const std::size_t authority = out.find(':') + 1;
    const std::size_t query = out.find('?');
    // The user information: ":secret@" after the authority starts, up to the query.
    for (const std::string& secret : secrets) {
        if (secret.empty()) continue;
        const std::string userinfo = ":" + secret + "@";
        const std::size_t at = out.find(userinfo, authority);
        if (at != std::string::npos && at < std::min(query, out.size())) out.replace(at + 1, secret.size(), masked);
    }
    // ...?password=secret&sslpassword=secret&...: every value of a parameter that carries a
    // secret (secret_value_at).
    const std::size_t masked_query = out.find('?');
    if (masked_query != std::string::npos) {
        std::size_t param = masked_query + 1;
        while (param < out.size()) {
            const std::size_t end = std::min(out.find('&', param), out.size());
            if (const std::size_t at = secret_value_at(std::string_view(out).substr(param, end - param));
                at != std::string_view::npos) {
                const std::size_t value = param + at;
                out.replace(value, end - value, masked);
                param = value + masked.size() + 1;
            } else {
                param = end + 1;
            }
        }
    }
    return out;
}

std::string history_detail::without_passwords(std::string_view message, std::string_view uri) {
    std::string out(message);
    // The URI quoted whole (libpq does, for a malformed one), then each password alone, as
    // written and as decoded. A quoted one is masked whatever its length; a bare one only
    // from 4 characters, below which masking would garble the words around it.
    replace_all(out, uri, history_store::printable(uri));
    std::vector<std::string> secrets;
    for (const std::string& secret : passwords_in(uri)) {
        secrets.push_back(secret);
        secrets.push_back(percent_decoded(secret));
    }
    std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const std::string& secret : secrets) {
        if (secret.empty()) continue;
        replace_all(out, "\"" + secret + "\"", "\"***\"");
        if (secret.size() >= 4) replace_all(out, secret, masked);
    }
    // The tail of a password cut at a raw '@', where libpq quotes it as the host name's start.
    if (const std::string tail = password_tail_in(uri); !tail.empty()) {
        replace_all(out, tail + "@", "***@");
        replace_all(out, percent_decoded(tail) + "@", "***@");
    }
    return out;
}

std::string history_detail::libpq_form(std::string_view uri) {
    // libpq recognises its schemes in lower case only; the rest is libpq's to read.
    std::string out(uri);
    for (std::size_t i = 0; i < out.size() && out[i] != ':'; ++i) out[i] = lower(out[i]);
    return out;
}

void history_store::check_location(std::string_view path) {
    const auto refuse = [&](const std::string& why) {
        throw std::invalid_argument("'" + printable(path) + "': " + why);
    };
    if (path.empty())
        throw std::invalid_argument(
            "an empty path names no history (SQLite would keep it in a temporary file, deleted at once): give a "
            "file path or a postgresql:// URI");
    if (path == ":memory:") refuse("SQLite's in-memory database keeps nothing after the command: give a file path");
    const std::string scheme = scheme_of(path);
    if (scheme.empty() || is_database_uri(path)) return;
    const std::string escape = "; for a file of this name, write ./" + printable(path);
    if (scheme == "file")
        refuse(
            "an SQLite URI filename (file:...), which may name an in-memory or temporary database: give a "
            "plain file path" +
            escape);
    if (postgres_like(scheme))
        refuse("not a PostgreSQL URI: write postgresql://[user[:password]@]host[:port]/dbname (or postgres://)" +
               escape);
    if (path.substr(scheme.size() + 1).starts_with("/"))
        refuse("a URI of scheme '" + scheme +
               "', which contend does not read: a history is an SQLite file path or a postgresql:// URI" + escape);
}

namespace {

// check_location's refusal as the history's other failures are reported: a runtime_error
// (history.hpp), which the CLI reports as an unusable --db.
const std::string& checked(const std::string& path) {
    try {
        history_store::check_location(path);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("history: ") + e.what());
    }
    return path;
}

}  // namespace

history_store::history_store(const std::string& path, history_access access, const std::atomic<int>* stop)
    : db_(is_database_uri(checked(path)) ? history_detail::open_postgres(path, access, stop)
                                         : history_detail::open_sqlite(path, access, stop)) {}

history_store::~history_store() = default;

void history_store::check_appendable(const std::string& path, const std::atomic<int>* stop) {
    if (is_database_uri(checked(path))) history_detail::check_postgres_appendable(path, stop);
    else history_detail::check_sqlite_appendable(path, stop);
}

std::int64_t history_store::append(const run_result& run, const std::atomic<int>* stop) {
    return db_->append(run, stop);
}

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
