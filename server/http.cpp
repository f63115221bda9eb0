// The request grammar follows RFC 9112 (request-line, field-line) and RFC 9110 (token,
// field-value); where the RFC lets a server choose, this one rejects: obs-fold, bare LF,
// whitespace before the colon, and leading empty lines are all 400.
#include "http.hpp"

#include <time.h>

#include <cstdio>

namespace json_server {
namespace {

constexpr std::string_view crlf = "\r\n";

// RFC 9110 5.6.2: tchar.
bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

// RFC 9110 5.5: field-vchar, SP, HTAB and obs-text; no CR, LF or other controls.
bool is_field_value(std::string_view s) {
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u == '\t' || u == ' ') continue;
        if (u < 0x21 || u == 0x7f) return false;
    }
    return true;
}

bool is_visible_ascii(std::string_view s) {
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x21 || u >= 0x7f) return false;
    }
    return true;
}

// The target is kept as a view: any visible ASCII, starting with '/' (origin-form).
bool is_origin_target(std::string_view s) { return !s.empty() && s.front() == '/' && is_visible_ascii(s); }

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

// absolute-form (RFC 9112 3.2.2), which a server MUST accept: "http" or "https" (any case),
// "://", a non-empty authority without userinfo, then a path (and query) or nothing. The
// origin-form part is returned, or an empty view when `s` is not absolute-form. An empty
// path is "/"; its query, if any, is dropped (the view cannot hold "/?q", and no route
// here takes a query: "/" and "/?q" are both 404).
std::string_view origin_of_absolute_target(std::string_view s) {
    const auto colon = s.find("://");
    if (colon == std::string_view::npos) return {};
    const auto scheme = s.substr(0, colon);
    if (!iequals(scheme, "http") && !iequals(scheme, "https")) return {};
    const auto rest = s.substr(colon + 3);
    const auto path_at = rest.find_first_of("/?");
    const auto authority = rest.substr(0, path_at);
    if (authority.empty() || authority.find('@') != std::string_view::npos || !is_visible_ascii(authority)) return {};
    if (path_at == std::string_view::npos) return "/";
    const auto path = rest.substr(path_at);
    if (!is_visible_ascii(path)) return {};
    return path.front() == '?' ? "/" : path;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Connection is a comma-separated list of options (RFC 9110 7.6.1).
void apply_connection_options(std::string_view value, bool& saw_close, bool& saw_keep_alive) {
    while (!value.empty()) {
        const auto comma = value.find(',');
        const auto option = trim_ows(value.substr(0, comma));
        if (iequals(option, "close")) saw_close = true;
        if (iequals(option, "keep-alive")) saw_keep_alive = true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
}

parse_result fail(parse_status status) { return {status, 0, {}}; }

// The request-line alone: method SP request-target SP HTTP-version.
parse_status parse_request_line(std::string_view line, http_request& request) {
    const auto sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) return parse_status::bad_request;
    const auto sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) return parse_status::bad_request;
    const auto method = line.substr(0, sp1);
    auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const auto version = line.substr(sp2 + 1);
    if (!is_token(method)) return parse_status::bad_request;
    if (!is_origin_target(target)) {
        target = origin_of_absolute_target(target);
        if (target.empty()) return parse_status::bad_request;
    }
    // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3), checked before the method so
    // that a request this server cannot even read the framing of gets 505, not 501.
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !is_digit(version[5]) || version[6] != '.' ||
        !is_digit(version[7]))
        return parse_status::bad_request;
    if (version[5] != '1') return parse_status::version_not_supported;
    // A later 1.x minor is answered as 1.1, the highest this server speaks (RFC 9110 6.2).
    request.version_minor = version[7] == '0' ? 0 : 1;
    if (method == "HEAD") request.head = true;
    else if (method != "GET") return parse_status::method_not_implemented;
    request.target = target;
    return parse_status::complete;
}

}  // namespace

parse_result parse_request(std::string_view input, std::size_t max_header_bytes) {
    // Only the first max_header_bytes can hold a request that is not too large.
    const std::string_view window = input.substr(0, max_header_bytes);
    const bool window_full = input.size() >= max_header_bytes;
    const auto incomplete_or_too_large = [&] {
        return window_full ? fail(parse_status::headers_too_large) : fail(parse_status::incomplete);
    };

    const auto line_end = window.find(crlf);
    if (line_end == std::string_view::npos) {
        // A bare LF already makes the line malformed, whatever follows.
        if (window.find('\n') != std::string_view::npos) return fail(parse_status::bad_request);
        // The limit reached inside the request-target (after the method's space, before the
        // next): 414, as RFC 9112 3 asks of a target longer than the server will parse.
        const auto sp1 = window.find(' ');
        if (window_full && sp1 != std::string_view::npos && sp1 > 0 &&
            window.find(' ', sp1 + 1) == std::string_view::npos)
            return fail(parse_status::uri_too_long);
        return incomplete_or_too_large();
    }
    http_request request;
    if (const auto line = parse_request_line(window.substr(0, line_end), request); line != parse_status::complete)
        return fail(line);

    bool saw_close = false, saw_keep_alive = false;
    int hosts = 0;
    bool saw_content_length = false;
    std::size_t pos = line_end + crlf.size();
    for (;;) {
        const auto end = window.find(crlf, pos);
        if (end == std::string_view::npos) {
            if (window.find('\n', pos) != std::string_view::npos) return fail(parse_status::bad_request);
            return incomplete_or_too_large();
        }
        const auto line = window.substr(pos, end - pos);
        pos = end + crlf.size();
        if (line.empty()) break;  // the end of the header block
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) return fail(parse_status::bad_request);
        const auto name = line.substr(0, colon);  // a token, so obs-fold and "Name :" fail here
        const auto raw_value = line.substr(colon + 1);
        if (!is_token(name) || !is_field_value(raw_value)) return fail(parse_status::bad_request);
        const auto value = trim_ows(raw_value);
        if (iequals(name, "host")) {
            ++hosts;
        } else if (iequals(name, "connection")) {
            apply_connection_options(value, saw_close, saw_keep_alive);
        } else if (iequals(name, "transfer-encoding")) {
            return fail(parse_status::bad_request);  // a body, which GET here may not have
        } else if (iequals(name, "content-length")) {
            // Digits only, and zero: any other length announces a body (RFC 9112 6.3).
            if (saw_content_length || value.empty()) return fail(parse_status::bad_request);
            for (char c : value)
                if (c != '0') return fail(parse_status::bad_request);
            saw_content_length = true;
        }
    }
    // RFC 9112 3.2: an HTTP/1.1 request without exactly one Host is answered 400.
    if (request.version_minor == 1 && hosts != 1) return fail(parse_status::bad_request);
    if (hosts > 1) return fail(parse_status::bad_request);
    request.keep_alive = request.version_minor == 1 ? !saw_close : (saw_keep_alive && !saw_close);
    return {parse_status::complete, pos, request};
}

std::string_view http_date() {
    // Each thread formats the date when the second changes and reuses it otherwise: no
    // shared state between the workers, and a coarse clock read (a few ns, no syscall via
    // the vDSO) per response instead of a gmtime+strftime.
    thread_local time_t cached_second = -1;
    thread_local char text[32];
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec != cached_second) {
        tm parts{};
        gmtime_r(&now.tv_sec, &parts);
        // The C locale's names are the ones RFC 9110 5.6.7 (IMF-fixdate) requires.
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &parts);
        cached_second = now.tv_sec;
    }
    return text;
}

void append_json_message(std::string& out, std::string_view message) {
    out += "{\"message\":\"";
    for (char c : message) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
            out += escaped;
        } else {
            out += c;
        }
    }
    out += "\"}";
}

namespace {

enum class connection_header : std::uint8_t { none, keep_alive, close };

void append_head(std::string& out, std::string_view status_line, std::string_view content_type, std::size_t length,
                 connection_header connection) {
    out += status_line;
    out += "\r\nServer: contend\r\nDate: ";
    out += http_date();
    if (!content_type.empty()) {
        out += "\r\nContent-Type: ";
        out += content_type;
    }
    out += "\r\nContent-Length: ";
    out += std::to_string(length);
    if (connection == connection_header::close) out += "\r\nConnection: close";
    if (connection == connection_header::keep_alive) out += "\r\nConnection: keep-alive";
    out += "\r\n\r\n";
}

}  // namespace

http_status append_response(std::string& out, const http_request& request) {
    const auto connection = !request.keep_alive          ? connection_header::close
                            : request.version_minor == 0 ? connection_header::keep_alive
                                                         : connection_header::none;
    const auto target = request.target;
    // HEAD gets GET's head, Content-Length included, and no body (RFC 9110 9.3.2).
    if (target == "/json") {
        // Serialized before the head, which needs its length.
        thread_local std::string body;
        body.clear();
        append_json_message(body, "Hello, World!");
        append_head(out, "HTTP/1.1 200 OK", "application/json", body.size(), connection);
        if (!request.head) out += body;
        return http_status::ok;
    }
    if (target == "/plaintext") {
        constexpr std::string_view body = "Hello, World!";
        append_head(out, "HTTP/1.1 200 OK", "text/plain", body.size(), connection);
        if (!request.head) out += body;
        return http_status::ok;
    }
    append_head(out, "HTTP/1.1 404 Not Found", "", 0, connection);
    return http_status::not_found;
}

http_status error_status(parse_status failure) {
    switch (failure) {
        case parse_status::headers_too_large:
            return http_status::headers_too_large;
        case parse_status::uri_too_long:
            return http_status::uri_too_long;
        case parse_status::method_not_implemented:
            return http_status::not_implemented;
        case parse_status::version_not_supported:
            return http_status::version_not_supported;
        default:
            return http_status::bad_request;
    }
}

void append_error_response(std::string& out, http_status status) {
    std::string_view line = "HTTP/1.1 400 Bad Request";
    if (status == http_status::uri_too_long) line = "HTTP/1.1 414 URI Too Long";
    if (status == http_status::headers_too_large) line = "HTTP/1.1 431 Request Header Fields Too Large";
    if (status == http_status::not_implemented) line = "HTTP/1.1 501 Not Implemented";
    if (status == http_status::version_not_supported) line = "HTTP/1.1 505 HTTP Version Not Supported";
    append_head(out, line, "", 0, connection_header::close);
}

}  // namespace json_server
