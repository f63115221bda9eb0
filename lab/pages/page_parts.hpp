// What every self-contained page of the lab is made of: escaped text, JSON a <script> element
// can carry, code inlined as an element's body, and Chart.js as compiled in. Shared by the
// page of `contend report` (report.cpp) and the pages of `contend compare --html` and
// `contend history --html`. Internal to the lab (namespace contend::lab).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace contend::lab {

// JSON that may sit inside <script type="application/json">: '<', '>' and '&' occur in
// JSON only inside strings, where \u003c and friends mean the same characters, so no text
// can close the element or open a comment. Bytes that are not UTF-8 (a history row may hold
// any) become U+FFFD rather than failing the page.
std::string script_safe_json(const nlohmann::json& j);

// `text` as the body of an HTML <script> or <style> element (`element`: "script" or "style"),
// returned as is. Throws std::runtime_error, naming `what`, when it holds "</script" or
// "</style" respectively (in any case: that would end the element early) or "<!--" (which
// in a script starts an escaped state that can swallow the element's end).
std::string_view inlinable(std::string_view text, std::string_view element, std::string_view what);

// Chart.js's bundle as the body of a <script> element: its trailing source-map comment
// dropped (the map is not shipped, and a browser with developer tools open would go looking
// for it), then checked by inlinable.
std::string_view inlinable_chart_library(std::string_view code);

// "Chart.js v4.6.1", from the bundle's licence banner; "Chart.js" when it has none.
std::string chart_library_name(std::string_view code);

// Chart.js as compiled into this binary (lab/CMakeLists.txt embeds the bundle when the
// build is configured), or empty when the bundle was missing then; chart_library_path() is
// where the build looked for it.
std::string_view chart_library_bundle();
std::string_view chart_library_path();

}  // namespace contend::lab
