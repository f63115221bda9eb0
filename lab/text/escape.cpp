#include "text/escape.hpp"

namespace contend::lab {
namespace {

// The entity of a character HTML gives meaning to, or nullptr. Quotes only where the text
// may sit in an attribute value.
const char* entity(char ch, bool quotes) {
    switch (ch) {
        case '&':
            return "&amp;";
        case '<':
            return "&lt;";
        case '>':
            return "&gt;";
        case '"':
            return quotes ? "&quot;" : nullptr;
        case '\'':
            return quotes ? "&#39;" : nullptr;
        default:
            return nullptr;
    }
}

}  // namespace

std::string escape_html(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        if (const char* e = entity(ch, true)) out += e;
        else out += ch;
    }
    return out;
}

std::string escape_markdown(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        if (const char* e = entity(ch, false)) {
            out += e;
        } else if (ch == '\n' || ch == '\r') {
            out += ' ';  // a newline would end a table row
        } else if (std::string_view("\\`*_[]|~").find(ch) != std::string_view::npos) {
            out += '\\';
            out += ch;
        } else {
            out += ch;
        }
    }
    return out;
}

}  // namespace contend::lab
