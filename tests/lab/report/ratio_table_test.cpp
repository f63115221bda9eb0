// The report's ratio table (pages/ratio_table.hpp): each lock's rate against the baseline's,
// the best of a row marked, colours outside the neutral band, invalid cells by their status,
// a row without a valid baseline, and names escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "pages/ratio_table.hpp"

namespace lab = contend::lab;

namespace {

lab::cell_result program_cell(const std::string& lock, const std::string& program, double median,
                              const std::string& status = "ok") {
    lab::cell_result c;
    c.suite = "programs";
    c.contender = lock;
    c.params = {{"program", program}};
    c.workers = 2;
    c.status = status;
    c.median_ns = median;
    c.p25_ns = median * 0.96;
    c.p75_ns = median * 1.04;
    return c;
}

}  // namespace

TEST(RatioTable, TheBaselinesRateOverEachLocksWithHalfTheQuartileRangeAsItsSpread) {
    const auto base = program_cell("glibc", "sort", 100);
    const auto fast = program_cell("contend_mutex", "sort", 50);
    const auto r = lab::ratio_to(fast, base);
    EXPECT_DOUBLE_EQ(r.ratio, 2.0);
    EXPECT_NEAR(r.spread, 0.04, 1e-12);
    EXPECT_TRUE(std::isnan(lab::ratio_to(program_cell("ttas_lock", "sort", 0, "timed_out"), base).ratio));
    EXPECT_TRUE(std::isnan(lab::ratio_to(fast, program_cell("glibc", "sort", 0, "program_failed")).ratio));
}

TEST(RatioTable, MarksTheBestColoursOutsideTheBandAndShowsInvalidCellsByStatus) {
    const std::vector<lab::cell_result> cells{
        program_cell("contend_mutex", "sort", 50),  // before the baseline: the baseline still comes first
        program_cell("glibc", "sort", 100),
        program_cell("ttas_lock", "sort", 110),
        program_cell("ticket_lock", "sort", 101),
        program_cell("<b>lock</b>", "sort", 0, "timed_out"),
        program_cell("glibc", "xz", 0, "program_failed"),
        program_cell("contend_mutex", "xz", 80),
    };
    std::vector<const lab::cell_result*> ptrs;
    for (const auto& c : cells) ptrs.push_back(&c);
    const std::string html = lab::ratio_table_html(ptrs, "glibc");
    ASSERT_FALSE(html.empty());
    EXPECT_LT(html.find("<th>glibc</th>"), html.find("<th>contend_mutex</th>"));
    EXPECT_NE(html.find("<td class=\"num faster best\">★ 2.00 <span class=\"spread\">±4 %</span></td>"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<td class=\"num slower\">0.91"), std::string::npos) << html;
    EXPECT_NE(html.find("<td class=\"num\">0.99"), std::string::npos) << html;  // within 3 %: not coloured
    EXPECT_NE(html.find(">timed_out</td>"), std::string::npos) << html;
    EXPECT_EQ(html.find("<b>lock</b>"), std::string::npos) << "a name reached the page as markup";
    EXPECT_NE(html.find("&lt;b&gt;lock&lt;/b&gt;"), std::string::npos);
    // The xz row: its baseline failed, so its other cells have nothing to be compared with.
    EXPECT_NE(html.find(">program_failed</td>"), std::string::npos) << html;
    EXPECT_NE(html.find(">n/a</td>"), std::string::npos) << html;
}

TEST(RatioTable, IsEmptyWithoutACellOfTheBaseline) {
    const auto c = program_cell("contend_mutex", "sort", 50);
    EXPECT_EQ(lab::ratio_table_html({&c}, "glibc"), "");
}
