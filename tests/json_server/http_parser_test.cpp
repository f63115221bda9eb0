// server/http.hpp: the request parser and the responses.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "http.hpp"

namespace {

using json_server::parse_request;
using json_server::parse_status;

constexpr std::size_t limit = 8192;

// What the server does with a byte stream: buffer what came, parse every complete request
// at the front, keep the rest. Returns the requests (targets and keep-alive) in order, and
// the first error, if any.
struct parsed_stream {
    std::vector<std::pair<std::string, bool>> requests;
    parse_status error = parse_status::incomplete;  // incomplete: none
};

parsed_stream feed(const std::vector<std::string_view>& chunks) {
    parsed_stream out;
    std::string buffered;
    for (auto chunk : chunks) {
        buffered += chunk;
        for (;;) {
            const auto r = parse_request(buffered, limit);
            if (r.status == parse_status::incomplete) break;
            if (r.status != parse_status::complete) {
                out.error = r.status;
                return out;
            }
            out.requests.emplace_back(std::string(r.request.target), r.request.keep_alive);
            buffered.erase(0, r.consumed);
        }
    }
    return out;
}

constexpr std::string_view two_requests =
    "GET /json HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n"
    "GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

TEST(JsonServerHttpParser, EverySplitOfTwoPipelinedRequestsYieldsTheSameTwoRequests) {
    const std::vector<std::pair<std::string, bool>> expected{{"/json", true}, {"/plaintext", false}};
    const auto whole = feed({two_requests});
    ASSERT_EQ(whole.error, parse_status::incomplete);
    ASSERT_EQ(whole.requests, expected);
    for (std::size_t cut = 1; cut < two_requests.size(); ++cut) {
        const auto split = feed({two_requests.substr(0, cut), two_requests.substr(cut)});
        EXPECT_EQ(split.error, parse_status::incomplete) << "cut at " << cut;
        EXPECT_EQ(split.requests, expected) << "cut at " << cut;
    }
    // And one byte at a time: every boundary at once.
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < two_requests.size(); ++i) bytes.push_back(two_requests.substr(i, 1));
    EXPECT_EQ(feed(bytes).requests, expected);
}

TEST(JsonServerHttpParser, ConsumedIsExactlyTheFirstRequest) {
    const auto r = parse_request(two_requests, limit);
    ASSERT_EQ(r.status, parse_status::complete);
    EXPECT_EQ(two_requests.substr(0, r.consumed), "GET /json HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n");
    EXPECT_EQ(r.request.target, "/json");
    EXPECT_EQ(r.request.version_minor, 1);
}

TEST(JsonServerHttpParser, MalformedRequestLinesAreBadRequests) {
    for (std::string_view line : {
             "GARBAGE\r\n\r\n", "GET\r\nHost: x\r\n\r\n", "GET /json\r\nHost: x\r\n\r\n",
             "GET  /json HTTP/1.1\r\nHost: x\r\n\r\n",  // two spaces: an empty target
             "GET json HTTP/1.1\r\nHost: x\r\n\r\n",  // not origin-form
             "GET /json HTTP/1.1 extra\r\nHost: x\r\n\r\n", "GET /json http/1.1\r\nHost: x\r\n\r\n",
             "GET /json HTTP/1.10\r\nHost: x\r\n\r\n",  // one digit a side
             "GET /json HTTP/1\r\nHost: x\r\n\r\n", "GET /json HTTP/1.x\r\nHost: x\r\n\r\n",
             "POST /json HTTP/1.1 \r\nHost: x\r\n\r\n",  // a trailing space
             "G(T /json HTTP/1.1\r\nHost: x\r\n\r\n",  // not a token
             "GET /json HTTP/1.1\nHost: x\r\n\r\n",  // bare LF
             "\r\nGET /json HTTP/1.1\r\nHost: x\r\n\r\n",  // a leading empty line
         }) {
        EXPECT_EQ(parse_request(line, limit).status, parse_status::bad_request) << line;
    }
}

// Well-formed but not served: RFC 9110 15.6.2 (501) and 15.6.6 (505), known from the
// request-line alone.
TEST(JsonServerHttpParser, OtherMethodsAre501AndOtherMajorVersions505) {
    for (std::string_view request : {"POST /json HTTP/1.1\r\nHost: x\r\n\r\n", "DELETE /json HTTP/1.1\r\n",
                                     "get /json HTTP/1.1\r\nHost: x\r\n\r\n",  // methods are case-sensitive
                                     "BREW /pot HTTP/1.0\r\n"})
        EXPECT_EQ(parse_request(request, limit).status, parse_status::method_not_implemented) << request;
    for (std::string_view request : {"GET /json HTTP/2.0\r\nHost: x\r\n\r\n", "GET /json HTTP/0.9\r\n",
                                     "POST /json HTTP/3.0\r\n"})  // the version is checked first
        EXPECT_EQ(parse_request(request, limit).status, parse_status::version_not_supported) << request;
    EXPECT_EQ(json_server::error_status(parse_status::method_not_implemented),
              json_server::http_status::not_implemented);
    EXPECT_EQ(json_server::error_status(parse_status::version_not_supported),
              json_server::http_status::version_not_supported);
    EXPECT_EQ(json_server::error_status(parse_status::headers_too_large), json_server::http_status::headers_too_large);
    EXPECT_EQ(json_server::error_status(parse_status::bad_request), json_server::http_status::bad_request);
}

TEST(JsonServerHttpParser, HeadIsServedAndALaterMinorVersionIsHttp11) {
    const auto head = parse_request("HEAD /json HTTP/1.1\r\nHost: x\r\n\r\n", limit);
    ASSERT_EQ(head.status, parse_status::complete);
    EXPECT_TRUE(head.request.head);
    EXPECT_FALSE(parse_request("GET /json HTTP/1.1\r\nHost: x\r\n\r\n", limit).request.head);
    const auto later = parse_request("GET /json HTTP/1.7\r\nHost: x\r\n\r\n", limit);
    ASSERT_EQ(later.status, parse_status::complete);
    EXPECT_EQ(later.request.version_minor, 1);
}

TEST(JsonServerHttpParser, MalformedRequestLineIsReportedBeforeTheHeadersEnd) {
    EXPECT_EQ(parse_request("BREW /pot HTCPCP/1.0\r\nHost: x\r\n", limit).status, parse_status::bad_request);
    EXPECT_EQ(parse_request("GET /json HTTP/1.1 x\r\nHost: x\r\n", limit).status, parse_status::bad_request);
}

TEST(JsonServerHttpParser, BadHeadersAndBodiesAreBadRequests) {
    for (std::string_view request : {
             "GET /json HTTP/1.1\r\nHost x\r\n\r\n",  // no colon
             "GET /json HTTP/1.1\r\nHost : x\r\n\r\n",  // space before the colon
             "GET /json HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",  // obs-fold
             "GET /json HTTP/1.1\r\nHost: x\ry\r\n\r\n",  // bare CR in a value
             "GET /json HTTP/1.1\r\n\r\n",  // HTTP/1.1 without Host
             "GET /json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
             "GET /json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
             "GET /json HTTP/1.1\r\nHost: x\r\nContent-Length: five\r\n\r\n",
             "GET /json HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n",
             "GET /json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
             "GET /json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         }) {
        EXPECT_EQ(parse_request(request, limit).status, parse_status::bad_request) << request;
    }
}

TEST(JsonServerHttpParser, AZeroContentLengthAndHttp10AreAccepted) {
    const auto zero = parse_request("GET /json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", limit);
    EXPECT_EQ(zero.status, parse_status::complete);
    const auto old = parse_request("GET /json HTTP/1.0\r\n\r\n", limit);
    ASSERT_EQ(old.status, parse_status::complete);
    EXPECT_FALSE(old.request.keep_alive);
    const auto old_kept = parse_request("GET /json HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", limit);
    ASSERT_EQ(old_kept.status, parse_status::complete);
    EXPECT_TRUE(old_kept.request.keep_alive);
    const auto closing = parse_request("GET /json HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n", limit);
    ASSERT_EQ(closing.status, parse_status::complete);
    EXPECT_FALSE(closing.request.keep_alive);
}

TEST(JsonServerHttpParser, HeadersOverTheLimitAreTooLarge) {
    std::string big = "GET /json HTTP/1.1\r\nHost: x\r\nX-Filler: ";
    big.append(limit, 'a');
    big += "\r\n\r\n";
    EXPECT_EQ(parse_request(big, limit).status, parse_status::headers_too_large);
    // Known as soon as the limit's worth has arrived without an end of the headers.
    EXPECT_EQ(parse_request(std::string_view(big).substr(0, limit), limit).status, parse_status::headers_too_large);
    EXPECT_EQ(parse_request(std::string_view(big).substr(0, limit - 1), limit).status, parse_status::incomplete);
}

// RFC 9112 3: a request-target longer than the server will parse is 414, not 431 (a 100 KB
// target got 431). A long header line after a normal request line stays 431 (above); a
// request-line whose method alone fills the limit is not a long target, so 431 too.
TEST(JsonServerHttpParser, ATargetThatRunsPastTheLimitIsUriTooLong) {
    std::string long_line = "GET /" + std::string(100 * 1024, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(parse_request(long_line, limit).status, parse_status::uri_too_long);
    EXPECT_EQ(parse_request(std::string_view(long_line).substr(0, limit), limit).status, parse_status::uri_too_long);
    EXPECT_EQ(parse_request(std::string_view(long_line).substr(0, limit - 1), limit).status, parse_status::incomplete);
    EXPECT_EQ(json_server::error_status(parse_status::uri_too_long), json_server::http_status::uri_too_long);
    const std::string long_method = std::string(limit, 'G');
    EXPECT_EQ(parse_request(long_method, limit).status, parse_status::headers_too_large);
    const std::string no_method = " /" + std::string(limit, 'a');
    EXPECT_EQ(parse_request(no_method, limit).status, parse_status::headers_too_large);
}

// RFC 9112 3.2.2: a server MUST accept the absolute-form; the target is its path.
TEST(JsonServerHttpParser, AbsoluteFormTargetsAreAcceptedAsTheirPath) {
    for (auto [request, path] : {std::pair{"GET http://x/json HTTP/1.1\r\nHost: x\r\n\r\n", "/json"},
                                 {"GET HTTP://example.com:8080/plaintext HTTP/1.1\r\nHost: x\r\n\r\n", "/plaintext"},
                                 {"GET https://x/json?a=1 HTTP/1.1\r\nHost: x\r\n\r\n", "/json?a=1"},
                                 {"GET http://x HTTP/1.1\r\nHost: x\r\n\r\n", "/"},
                                 {"GET http://x?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", "/"}}) {
        const auto r = parse_request(request, limit);
        ASSERT_EQ(r.status, parse_status::complete) << request;
        EXPECT_EQ(r.request.target, path) << request;
    }
    for (const char* bad :
         {"GET ftp://x/json HTTP/1.1\r\nHost: x\r\n\r\n", "GET http:///json HTTP/1.1\r\nHost: x\r\n\r\n",
          "GET http://u@x/json HTTP/1.1\r\nHost: x\r\n\r\n", "GET x/json HTTP/1.1\r\nHost: x\r\n\r\n"})
        EXPECT_EQ(parse_request(bad, limit).status, parse_status::bad_request) << bad;
}

TEST(JsonServerHttpParser, HeadersExactlyAtTheLimitAreAccepted) {
    std::string request = "GET /json HTTP/1.1\r\nHost: x\r\nX-Filler: ";
    const std::size_t tail = 4;  // "\r\n\r\n"
    request.append(limit - request.size() - tail, 'a');
    request += "\r\n\r\n";
    ASSERT_EQ(request.size(), limit);
    const auto r = parse_request(request, limit);
    EXPECT_EQ(r.status, parse_status::complete);
    EXPECT_EQ(r.consumed, limit);
}

json_server::http_request request_for(std::string_view target, bool keep_alive = true, int version_minor = 1) {
    json_server::http_request r;
    r.target = target;
    r.keep_alive = keep_alive;
    r.version_minor = version_minor;
    return r;
}

TEST(JsonServerHttpResponses, JsonAndPlaintextCarryTheRequiredHeadersAndLengths) {
    std::string out;
    EXPECT_EQ(json_server::append_response(out, request_for("/json")), json_server::http_status::ok);
    EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
    EXPECT_NE(out.find("\r\nServer: contend\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nDate: "), std::string::npos);
    EXPECT_NE(out.find("\r\nContent-Type: application/json\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nContent-Length: 27\r\n\r\n{\"message\":\"Hello, World!\"}"), std::string::npos);
    EXPECT_EQ(out.find("Connection: close"), std::string::npos);

    out.clear();
    EXPECT_EQ(json_server::append_response(out, request_for("/plaintext", false)), json_server::http_status::ok);
    EXPECT_NE(out.find("\r\nContent-Type: text/plain\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nContent-Length: 13\r\n"), std::string::npos);
    EXPECT_TRUE(out.ends_with("\r\n\r\nHello, World!"));

    out.clear();
    EXPECT_EQ(json_server::append_response(out, request_for("/missing")), json_server::http_status::not_found);
    EXPECT_EQ(out.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
    EXPECT_NE(out.find("\r\nContent-Length: 0\r\n\r\n"), std::string::npos);
}

TEST(JsonServerHttpResponses, HeadGetsTheHeadOfGetWithoutTheBody) {
    for (const char* target : {"/json", "/plaintext"}) {
        std::string get, head;
        json_server::append_response(get, request_for(target));
        auto r = request_for(target);
        r.head = true;
        EXPECT_EQ(json_server::append_response(head, r), json_server::http_status::ok);
        const auto end_of_head = get.find("\r\n\r\n") + 4;
        EXPECT_EQ(head, get.substr(0, end_of_head)) << target;  // Content-Length included
        EXPECT_GT(get.size(), end_of_head) << target;
    }
}

TEST(JsonServerHttpResponses, ErrorResponsesCloseAndNameTheirStatus) {
    for (auto [status, line] : {std::pair{json_server::http_status::bad_request, "HTTP/1.1 400 Bad Request\r\n"},
                                {json_server::http_status::uri_too_long, "HTTP/1.1 414 URI Too Long\r\n"},
                                {json_server::http_status::headers_too_large, "HTTP/1.1 431 "},
                                {json_server::http_status::not_implemented, "HTTP/1.1 501 Not Implemented\r\n"},
                                {json_server::http_status::version_not_supported, "HTTP/1.1 505 "}}) {
        std::string out;
        json_server::append_error_response(out, status);
        EXPECT_EQ(out.rfind(line, 0), 0u) << out;
        EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
        EXPECT_NE(out.find("\r\nContent-Length: 0\r\n"), std::string::npos) << out;
    }
}

TEST(JsonServerHttpResponses, Http10KeepAliveIsConfirmedAndHttp11KeepAliveIsImplied) {
    std::string out;
    json_server::append_response(out, request_for("/json", true, 0));
    EXPECT_NE(out.find("\r\nConnection: keep-alive\r\n"), std::string::npos) << out;
    out.clear();
    json_server::append_response(out, request_for("/json", true, 1));
    EXPECT_EQ(out.find("Connection:"), std::string::npos) << out;
    out.clear();
    json_server::append_response(out, request_for("/json", false, 0));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
}

TEST(JsonServerHttpResponses, DateIsAnImfFixdate) {
    const auto date = json_server::http_date();
    ASSERT_EQ(date.size(), 29u);  // "Sun, 06 Nov 1994 08:49:37 GMT"
    EXPECT_EQ(date.substr(3, 2), ", ");
    EXPECT_EQ(date.substr(25), " GMT");
}

TEST(JsonServerHttpResponses, JsonStringsAreEscaped) {
    std::string out;
    json_server::append_json_message(out, "a\"b\\c\n");
    EXPECT_EQ(out, "{\"message\":\"a\\\"b\\\\c\\u000a\"}");
}

}  // namespace
