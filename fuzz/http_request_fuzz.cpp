// libFuzzer target for the server's HTTP request parser (server/http.hpp), the one parser
// that reads bytes from the network. Any bytes, under any header limit, must give a status,
// never a crash; and what the parser promises must hold, or the target traps:
// - a complete request was consumed from the front (0 < consumed <= the input), its target
//   starts with '/' and is either inside the input or the absolute-form's "/";
// - the parser is stateless: the same bytes give the same result, and every proper prefix of
//   a complete request is incomplete (a request split across reads is parsed as one);
// - every failure has an error response, and every response is written without a crash.
// The first byte chooses the header limit (16 to 4,111 bytes), so that the limit's edges are
// reached by short inputs. Seeds: fuzz/corpus/http (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http.hpp"

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

bool same(const json_server::parse_result& a, const json_server::parse_result& b) {
    return a.status == b.status && a.consumed == b.consumed && a.request == b.request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using json_server::parse_status;
    if (size == 0) return 0;
    const std::size_t limit = 16 + std::size_t{data[0]} * 16;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto r = json_server::parse_request(input, limit);
    require(same(r, json_server::parse_request(input, limit)));
    std::string out;
    if (r.status == parse_status::complete) {
        require(r.consumed > 0 && r.consumed <= input.size());
        const auto t = r.request.target;
        require(!t.empty() && t.front() == '/');
        require(t == "/" || (t.data() >= input.data() && t.data() + t.size() <= input.data() + r.consumed));
        require(r.request.version_minor == 0 || r.request.version_minor == 1);
        for (std::size_t k = 0; k < r.consumed; ++k) {
            require(json_server::parse_request(input.substr(0, k), limit).status == parse_status::incomplete);
        }
        json_server::append_response(out, r.request);
    } else if (r.status != parse_status::incomplete) {
        const auto status = json_server::error_status(r.status);
        require(static_cast<int>(status) >= 400);
        json_server::append_error_response(out, status);
    }
    require(r.status == parse_status::incomplete || !out.empty());
    return 0;
}
