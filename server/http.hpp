// The HTTP/1.1 side of contend_json_server: a request parser over contiguous bytes and
// the responses of the two TechEmpower tests it serves (see docs/references.md,
// techempower-test-requirements, and rfc9112-http11).
//
// The parser is stateless: it is handed every byte buffered since the end of the previous
// request and either finds one complete request at the front or says why not. Being
// stateless is what makes pipelining and arbitrary splits of the byte stream trivially
// correct (a request is parsed the same whether its bytes came in one read or ninety);
// the price is a rescan of a partial request's bytes when more arrive, bounded by the
// header limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace json_server {

enum class parse_status : std::uint8_t {
    complete,  // one request at the front, `consumed` bytes long
    incomplete,  // a valid prefix: wait for more bytes
    bad_request,  // 400: malformed line or header, a body
    headers_too_large,  // 431: no end of the header block within the limit
    uri_too_long,  // 414: the request-target alone runs past the limit (RFC 9112 3)
    method_not_implemented,  // 501: a well-formed method other than GET and HEAD
    version_not_supported,  // 505: a well-formed HTTP-version of a major version other than 1
};

struct http_request {
    std::string_view target;  // points into the parsed buffer
    int version_minor = 1;  // HTTP/1.<minor>, 0 or 1 (a higher minor is answered as 1.1)
    bool head = false;  // HEAD: the response's head alone, as GET would have it
    bool keep_alive = true;  // false: answer, then close (Connection: close, or HTTP/1.0 without keep-alive)
    friend bool operator==(const http_request&, const http_request&) = default;
};

struct parse_result {
    parse_status status = parse_status::incomplete;
    std::size_t consumed = 0;  // for complete: the request's length in bytes
    http_request request;  // for complete
};

// The request-line and headers, CRLFs included, may take at most max_header_bytes; beyond
// that the answer is headers_too_large, or uri_too_long when the limit is reached inside the
// request-target. The target may be in origin-form ("/json") or absolute-form
// ("http://host/json", which RFC 9112 3.2.2 says a server MUST accept): `target` is then
// the path and query, "/" for an empty path. GET and HEAD are served (the two methods RFC 9110
// 9.1 requires of every general-purpose server); any other well-formed method is
// method_not_implemented, and an HTTP-version of another major version
// version_not_supported. A request may carry no body: Transfer-Encoding, or a
// Content-Length other than 0, is a bad request (the server would otherwise have to read
// and skip a body it has no use for). A request-line that fails is reported as soon as its
// CRLF arrives, without waiting for the headers.
parse_result parse_request(std::string_view input, std::size_t max_header_bytes);

enum class http_status : std::uint16_t {
    ok = 200,
    bad_request = 400,
    not_found = 404,
    uri_too_long = 414,
    headers_too_large = 431,
    not_implemented = 501,
    version_not_supported = 505,
};

// The error response for a parse that failed (anything but complete and incomplete).
http_status error_status(parse_status failure);

// The response to a parsed request (200 for /json and /plaintext, 404 otherwise), or to one
// that could not be parsed (the error response, which closes). Appended to `out` with the
// Server and Date headers and its Content-Length, and a Connection header when persistence
// is not the default: "close" when the request ends the connection, "keep-alive" for an
// HTTP/1.0 request that asked to keep it (a 1.0 client otherwise assumes a close).
http_status append_response(std::string& out, const http_request& request);
void append_error_response(std::string& out, http_status status);

// The body of /json: {"message":"Hello, World!"}, serialized for each request as the
// TechEmpower JSON test requires (no cached body), with JSON string escaping.
void append_json_message(std::string& out, std::string_view message);

// "Sun, 06 Nov 1994 08:49:37 GMT" for now, formatted at most once a second per thread.
std::string_view http_date();

}  // namespace json_server
