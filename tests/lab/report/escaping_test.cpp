// The page is built from text anyone can write (results files): names cannot break out of
// their elements, the page's script never parses text as markup, and what is inlined (the
// chart library, the page's own files) cannot end its element.
#include "report_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "pages/assets.hpp"
#include "pages/report.hpp"

using namespace contend_test::report;

TEST(Report, NamesCannotBreakOutOfTheirElements) {
    const std::string page = lab::render_report({{"<origin>" + hostile, hostile_run()}}, fake_library);
    expect_escaped(page);
    EXPECT_EQ(page.find("<origin>"), std::string::npos);
}

// The script puts names into the page as text: it has no way to parse text as markup or run it.
TEST(Report, ThePagesScriptNeverTurnsTextIntoMarkupOrCode) {
    const std::string script(lab::assets::render_js.text);
    ASSERT_FALSE(script.empty());
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                             "setTimeout('", "DOMParser", "createContextualFragment"})
        EXPECT_EQ(script.find(sink), std::string::npos) << sink;
    EXPECT_NE(script.find("textContent"), std::string::npos);
    EXPECT_NE(script.find("decodeURIComponent"), std::string::npos) << "the fragment is decoded, nothing more";
}

TEST(Report, TheLibraryIsInlinedWithoutItsSourceMapAndRefusedIfItCouldCloseItsElement) {
    const std::string page = lab::render_report(
        {{"f", fixture()}}, "window.Chart = function () {};\n//# sourceMappingURL=chart.umd.js.map\n");
    EXPECT_NE(page.find("window.Chart = function () {};"), std::string::npos);
    EXPECT_EQ(page.find("sourceMappingURL"), std::string::npos);
    EXPECT_NE(page.find("Chart.js (MIT"), std::string::npos) << "no version banner: the name alone";
    EXPECT_THROW(lab::render_report({{"f", fixture()}}, "var s = '</SCRIPT>';"), std::runtime_error);
    EXPECT_THROW(lab::render_report({{"f", fixture()}}, "var s = '<!--';"), std::runtime_error);
}

// The embedding (lab/pages/embed_assets.cmake) is byte for byte: each compiled-in file equals
// the file it was read from. A failure after editing lab/pages/assets/ without building
// means the binary is stale.
TEST(Report, ThePagesFilesAreCompiledInByteForByteAndInlinedInOrder) {
    namespace assets = lab::assets;
    for (const auto* file : {&assets::error_trap_js, &assets::render_js, &assets::style_css}) {
        const std::string path(file->path);
        ASSERT_TRUE(fs::exists(path)) << path;
        EXPECT_FALSE(file->text.empty()) << path;
        EXPECT_EQ(file->text, read_file(path)) << path << " differs from what was compiled in: build again";
    }
    if (!assets::chart_js.text.empty()) {
        EXPECT_EQ(assets::chart_js.text, read_file(std::string(assets::chart_js.path)));
    }
    EXPECT_EQ(lab::chart_library_bundle(), assets::chart_js.text);
    EXPECT_EQ(lab::chart_library_path(), assets::chart_js.path);

    const std::string page = lab::render_report({{"f", fixture()}}, fake_library);
    const std::size_t style = page.find(assets::style_css.text);
    const std::size_t trap = page.find(assets::error_trap_js.text);
    const std::size_t library = page.find(fake_library);
    const std::size_t drawing = page.find(assets::render_js.text);
    ASSERT_NE(style, std::string::npos);
    EXPECT_LT(style, page.find("</head>"));
    ASSERT_NE(trap, std::string::npos);
    EXPECT_EQ(page.find("<script"), page.rfind("<script", trap)) << "the error trap is the first script";
    EXPECT_LT(trap, library);
    ASSERT_NE(drawing, std::string::npos);
    EXPECT_LT(library, drawing);
    EXPECT_EQ(page.find("<script", drawing), std::string::npos) << "the drawing is the last script";
}

TEST(Report, TextThatCouldEndItsElementIsNotInlined) {
    EXPECT_EQ(lab::inlinable("var a = b < c;", "script", "x"), "var a = b < c;");
    EXPECT_EQ(lab::inlinable("var s = '</style>';", "script", "x"), "var s = '</style>';")
        << "ends a style, not a script";
    EXPECT_THROW(lab::inlinable("var s = '</script>';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("var s = '</ScRiPt ';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("var s = '<!--';", "script", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("a::after { content: '</STYLE>'; }", "style", "x"), std::runtime_error);
    EXPECT_THROW(lab::inlinable("/* <!-- */", "style", "x"), std::runtime_error);
    try {
        lab::inlinable("// see </script>\n", "script", "lab/pages/assets/render.js");
        ADD_FAILURE() << "not refused";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "lab/pages/assets/render.js contains \"</script\" or \"<!--\" and cannot be inlined as is");
    }
}

TEST(Report, TheSamePageForTheSameInput) {
    const lab::run_result run = fixture();
    EXPECT_EQ(lab::render_report({{"f", run}}, fake_library), lab::render_report({{"f", run}}, fake_library));
}
