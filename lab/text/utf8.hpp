// UTF-8 as the lab's inputs and outputs need it: a label checked, any bytes made safe for a
// message or a page. Bytes come from files, the history and the command line, and may be
// anything; what leaves the lab is valid UTF-8 that cannot cut or reverse a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace contend::lab {

// One character decoded at text[i]: its code point and length in bytes; length 0 when the
// bytes there are not UTF-8 (a stray continuation byte, an overlong form, a surrogate, past
// U+10FFFF, a sequence cut short).
struct utf8_char {
    std::uint32_t code;
    std::size_t length;
};
utf8_char decode_utf8(std::string_view text, std::size_t i);

// Whether `text` is valid UTF-8 without control characters: what a label must be to travel
// through JSON, CSV, SQLite, HTML and a terminal unchanged and unambiguous. Refused: the C0
// controls (TAB included: it splits a column), DEL, the C1 controls U+0080..U+009F (U+0085 is
// a line break to some readers), the bidirectional marks, embeddings, overrides and isolates
// U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069 (an unterminated U+202E reverses the
// rest of a line), and the line and paragraph separators U+2028, U+2029.
bool is_printable_utf8(std::string_view text);

// `text` made safe and short for a message: control bytes, DEL and bytes that are not UTF-8
// as \xNN, C1 controls and bidirectional controls as \u{NNNN}, so that a NUL neither cuts the
// message nor a U+202E reverses it; past `max_bytes` of the result it is cut (at a character)
// and "... (N bytes)" says how long it was. std::string::npos: never cut.
std::string message_text(std::string_view text, std::size_t max_bytes = 200);

// The end of a program's output for a message: its last `max_bytes` bytes ("..." before
// them when it was longer), line breaks as spaces, made safe by message_text (a program's
// control bytes and bidirectional marks must not reach a terminal or a page as they are).
std::string output_tail(std::string_view text, std::size_t max_bytes = 400);

// `text` with every byte that does not start a UTF-8 character replaced by U+FFFD, one per
// byte: what a page declared as UTF-8 can carry of a history row that may hold any bytes.
std::string valid_utf8(std::string_view text);

}  // namespace contend::lab
