// The files the page of `contend report` is made of, compiled into the binary so that the
// page needs nothing from the network. lab/pages/embed_assets.cmake generates their
// definitions (see lab/CMakeLists.txt); report.cpp inlines them. Internal to the lab.
#pragma once

#include <string_view>

namespace contend::lab::assets {

// A file as the build read it. Constant-initialized: usable from any static initializer.
struct embedded_file {
    std::string_view path;  // where the build read it (or looked for it)
    std::string_view text;  // its bytes, exactly; empty when an optional file was missing
};

// The page's own script and style, lab/pages/assets/*, embedded at build time: editing one
// takes effect on the next `cmake --build`. The comments in them explain them.
extern const embedded_file error_trap_js;  // assets/error_trap.js, the page's first script
extern const embedded_file render_js;  // assets/render.js, draws the charts
extern const embedded_file style_css;  // assets/style.css
// The pages of `contend history --html` and `contend compare --html` (pages/html_page.hpp):
// they share error_trap.js and have their own script and style.
extern const embedded_file history_js;  // assets/history.js, draws their charts
extern const embedded_file history_css;  // assets/history.css

// Chart.js's UMD bundle (the CONTEND_CHART_JS cache variable; scripts/setup.sh installs it),
// embedded at configure time (see lab/CMakeLists.txt for why). Optional: `text` is empty when
// the bundle was missing.
extern const embedded_file chart_js;

}  // namespace contend::lab::assets
