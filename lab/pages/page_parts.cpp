// The shared parts of the lab's pages (page_parts.hpp).
#include "pages/page_parts.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "pages/assets.hpp"

namespace contend::lab {
namespace {

bool contains_case_insensitive(std::string_view haystack, std::string_view needle) {
    return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           }) != haystack.end();
}

}  // namespace

std::string script_safe_json(const nlohmann::json& j) {
    const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        switch (ch) {
            case '<':
                out += "\\u003c";
                break;
            case '>':
                out += "\\u003e";
                break;
            case '&':
                out += "\\u0026";
                break;
            default:
                out += ch;
        }
    }
    return out;
}

std::string_view inlinable(std::string_view text, std::string_view element, std::string_view what) {
    const std::string end_tag = "</" + std::string(element);
    if (contains_case_insensitive(text, end_tag) || text.find("<!--") != std::string_view::npos)
        throw std::runtime_error(std::string(what) + " contains \"" + end_tag +
                                 "\" or \"<!--\" and cannot be inlined as is");
    return text;
}

std::string_view inlinable_chart_library(std::string_view code) {
    const std::size_t map = code.rfind("//# sourceMappingURL=");
    if (map != std::string_view::npos && (map == 0 || code[map - 1] == '\n')) {
        const std::size_t line_end = code.find('\n', map);
        if (line_end == std::string_view::npos || code.find_first_not_of(" \t\r\n", line_end) == std::string_view::npos)
            code = code.substr(0, map);
    }
    return inlinable(code, "script", "the charting library's code");
}

std::string chart_library_name(std::string_view code) {
    const std::string_view head = code.substr(0, 300);
    const std::size_t at = head.find("Chart.js v");
    if (at == std::string_view::npos) return "Chart.js";
    std::size_t end = at + 10;
    while (end < head.size() &&
           (std::isalnum(static_cast<unsigned char>(head[end])) || head[end] == '.' || head[end] == '-'))
        ++end;
    return std::string(head.substr(at, end - at));
}

std::string_view chart_library_bundle() { return assets::chart_js.text; }
std::string_view chart_library_path() { return assets::chart_js.path; }

}  // namespace contend::lab
