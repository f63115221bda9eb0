#include "text/utf8.hpp"

#include <cstdio>

namespace contend::lab {
namespace {

// The C0 and C1 controls and DEL; the bidirectional marks, embeddings, overrides and isolates
// (U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069), which reorder what a line shows;
// the line and paragraph separators U+2028 and U+2029, which break a line for some readers.
bool is_control(std::uint32_t code) {
    return code < 0x20 || code == 0x7f || (code >= 0x80 && code <= 0x9f) || code == 0x061C || code == 0x200E ||
           code == 0x200F || code == 0x2028 || code == 0x2029 || (code >= 0x202A && code <= 0x202E) ||
           (code >= 0x2066 && code <= 0x2069);
}

}  // namespace

utf8_char decode_utf8(std::string_view text, std::size_t i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) return {c, 1};
    std::size_t extra = 0;
    std::uint32_t code = 0;
    if ((c & 0xE0) == 0xC0) {
        extra = 1;
        code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        extra = 2;
        code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        extra = 3;
        code = c & 0x07;
    } else {
        return {0, 0};
    }
    if (i + extra >= text.size()) return {0, 0};
    for (std::size_t k = 1; k <= extra; ++k) {
        const auto cc = static_cast<unsigned char>(text[i + k]);
        if ((cc & 0xC0) != 0x80) return {0, 0};
        code = (code << 6) | (cc & 0x3F);
    }
    static constexpr std::uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (code < least[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
    return {code, extra + 1};
}

bool is_printable_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const utf8_char ch = decode_utf8(text, i);
        if (ch.length == 0 || is_control(ch.code)) return false;
        i += ch.length;
    }
    return true;
}

std::string message_text(std::string_view text, std::size_t max_bytes) {
    std::string out;
    char escape[16];
    std::size_t i = 0;
    for (; i < text.size();) {
        const utf8_char ch = decode_utf8(text, i);
        std::string_view piece = text.substr(i, ch.length);
        if (ch.length == 0 || ch.code < 0x20 || ch.code == 0x7f) {
            std::snprintf(escape, sizeof escape, "\\x%02X", static_cast<unsigned char>(text[i]));
            piece = escape;
        } else if (is_control(ch.code)) {
            std::snprintf(escape, sizeof escape, "\\u{%04X}", static_cast<unsigned>(ch.code));
            piece = escape;
        }
        if (max_bytes != std::string::npos && out.size() + piece.size() > max_bytes) break;
        out += piece;
        i += ch.length == 0 ? 1 : ch.length;
    }
    if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
    return out;
}

std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const utf8_char ch = decode_utf8(text, i);
        if (ch.length == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(text.substr(i, ch.length));
            i += ch.length;
        }
    }
    return out;
}

std::string output_tail(std::string_view text, std::size_t max_bytes) {
    const bool cut = text.size() > max_bytes;
    std::string tail(cut ? text.substr(text.size() - max_bytes) : text);
    for (char& c : tail)
        if (c == '\n' || c == '\r') c = ' ';
    return (cut ? "..." : "") + message_text(tail, std::string::npos);
}

}  // namespace contend::lab
