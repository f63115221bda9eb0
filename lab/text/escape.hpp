// Text made safe for where it goes: an HTML page and a Markdown report. Names and labels come
// from files and the history and may hold anything; neither kind of page may be changed by them.
#pragma once

#include <string>
#include <string_view>

namespace contend::lab {

// `text` as HTML text or a quoted attribute value: & < > " ' become entities.
std::string escape_html(std::string_view text);

// Markdown-safe text for table cells and list items: characters that would format text,
// make a link or split a table row are backslash-escaped, '<', '>', '&' become entities (a
// name must not open an HTML tag in a rendered report), and newlines become spaces.
std::string escape_markdown(std::string_view text);

}  // namespace contend::lab
