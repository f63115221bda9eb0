// `contend report` on fixed input: the page's sections, the charts' axes, lines and
// baselines, and the table's columns and flags. Whether the page draws in a browser is
// report_browser_test.sh's job.
#include "report_support.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "pages/report.hpp"
#include "results/results.hpp"

using namespace contend_test::report;

TEST(Report, OneChartSectionPerSuiteWithItsTable) {
    const std::string page = lab::render_report({{"fixture.json", fixture()}}, fake_library);
    EXPECT_EQ(count(page, "<section class=\"suite\""), 2u);
    // Per suite: the controls the script fills, the main chart, CPU ns/op and fairness (both
    // suites of the fixture measured it).
    EXPECT_EQ(count(page, "<canvas "), 6u);
    for (const char* id : {"chart-0", "chart-0-cpu", "chart-0-share", "chart-1", "chart-1-cpu", "chart-1-share"})
        EXPECT_NE(page.find("<canvas id=\"" + std::string(id) + "\""), std::string::npos) << id;
    EXPECT_EQ(count(page, "<div class=\"controls\" id=\"chart-"), 2u);
    EXPECT_NE(page.find("data-suite=\"counter\""), std::string::npos);
    EXPECT_NE(page.find("data-suite=\"hold\""), std::string::npos);
    EXPECT_NE(page.find("data-charts-expected=\"2\""), std::string::npos);
    EXPECT_NE(page.find("data-side-charts-expected=\"4\""), std::string::npos);
    // What the script records, zero or empty until it has drawn (report.hpp).
    for (const char* attribute :
         {"data-charts-rendered=\"0\"", "data-side-charts-rendered=\"0\"", "data-points-plotted=\"0\"",
          "data-ratio-points-plotted=\"0\"", "data-baseline=\"\"", "data-shown=\"\"", "data-errors=\"0\""})
        EXPECT_NE(page.find(attribute), std::string::npos) << attribute;
    const json data = page_data(page);
    ASSERT_EQ(data["charts"].size(), 2u);
    EXPECT_EQ(data["charts"][0]["canvas"], "chart-0");
    EXPECT_EQ(data["charts"][0]["cpu_canvas"], "chart-0-cpu");
    EXPECT_EQ(data["charts"][0]["share_canvas"], "chart-0-share");
    EXPECT_EQ(data["charts"][1]["canvas"], "chart-1");
    // One table row per cell (28 in the fixture), a header row per suite table, and the
    // rows of the run's context: each context field with a heading, the co-tenant, the suites.
    EXPECT_NE(page.find("<tr><th>co-tenant</th><td>none</td></tr>"), std::string::npos);
    std::size_t context_rows = 2;
    for (const auto& f : lab::context_fields()) context_rows += f.heading.empty() ? 0 : 1;
    EXPECT_EQ(count(page, "<tr"), 28u + 2u + context_rows);
    // The machine the run came from.
    for (const char* field : {"AMD EPYC", "0-1", "GCC 12.2.0", "futex", "timer slack, ns", "50000", "fixture"})
        EXPECT_NE(page.find(field), std::string::npos) << field;
    EXPECT_NE(page.find("Chart.js v9.8.7"), std::string::npos) << "the footer names the library";
    EXPECT_NE(page.find("animation: false"), std::string::npos);
    EXPECT_NE(page.find("type: 'logarithmic'"), std::string::npos);
}

TEST(Report, ChartsOfSeveralWorkerCountsPutWorkersOnTheXAxis) {
    const lab::run_result run = fixture();
    const lab::chart_axis axis = lab::choose_x_axis(cells_of(run, "counter"));
    EXPECT_EQ(axis.key, "workers");
    EXPECT_EQ(axis.values, (std::vector<std::string>{"1", "2", "4", "16"}));

    const json counter = chart_of(page_data(lab::render_report({{"f", run}}, fake_library)), "counter");
    EXPECT_EQ(counter["x_title"], "workers");
    EXPECT_EQ(counter["series"].size(), 4u) << "one line per contender";
    const json& mutex = series_of(counter, "contend_mutex");
    ASSERT_EQ(mutex["y"].size(), 4u);
    for (const auto& y : mutex["y"]) EXPECT_TRUE(y.is_number());
}

TEST(Report, WorkerCountsSortNumerically) {
    lab::run_result run;
    for (int w : {16, 1, 4}) run.cells.push_back(cell("counter", "a", w, 5));
    EXPECT_EQ(lab::choose_x_axis(cells_of(run, "counter")).values, (std::vector<std::string>{"1", "4", "16"}));
}

TEST(Report, AChartOfOneWorkerCountPutsTheMostVariedParameterOnTheXAxis) {
    const lab::run_result run = fixture();
    const lab::chart_axis axis = lab::choose_x_axis(cells_of(run, "hold"));
    EXPECT_EQ(axis.key, "cs_us");
    EXPECT_EQ(axis.values, (std::vector<std::string>{"0", "1", "20", "200"}));
    const json hold = chart_of(page_data(lab::render_report({{"f", run}}, fake_library)), "hold");
    EXPECT_EQ(hold["x_title"], "cs_us");
    EXPECT_EQ(hold["labels"], json({"0", "1", "20", "200"}));
    EXPECT_EQ(hold["series"].size(), 3u) << "one line per contender, cs_us being the axis";
    EXPECT_EQ(hold["title"], "hold, 2 workers");

    // Two parameters: the one with more values is the axis, the other splits the lines.
    lab::run_result two;
    for (const char* size : {"64", "128", "256"})
        for (const char* mode : {"fast", "slow"})
            two.cells.push_back(cell("s", "a", 4, 3, {{"mode", mode}, {"size", size}}));
    const lab::chart_axis by_size = lab::choose_x_axis(cells_of(two, "s"));
    EXPECT_EQ(by_size.key, "size");
    EXPECT_EQ(by_size.values, (std::vector<std::string>{"64", "128", "256"}));
    const json chart = page_data(lab::render_report({{"f", two}}, fake_library))["charts"][0];
    EXPECT_EQ(chart["series"].size(), 2u);
    EXPECT_EQ(chart["series"][0]["label"], "a mode=fast");
    EXPECT_EQ(chart["series"][0]["contender"], "a") << "a ratio pairs a line with the baseline's of its variant";
    EXPECT_EQ(chart["series"][0]["variant"], "mode=fast");

    // One worker count and no parameter: workers, with one point.
    lab::run_result single;
    single.cells.push_back(cell("counter", "a", 4, 5));
    EXPECT_EQ(lab::choose_x_axis(cells_of(single, "counter")).key, "workers");
}

TEST(Report, InvalidCellsAreInTheTableButNotInTheCharts) {
    const std::string page = lab::render_report({{"f", fixture()}}, fake_library);
    const json data = page_data(page);
    const json& ck = series_of(chart_of(data, "counter"), "ck_ticket");
    EXPECT_TRUE(ck["y"][0].is_number());
    EXPECT_TRUE(ck["y"][2].is_null()) << "timed out at 4 workers";
    EXPECT_TRUE(ck["y"][3].is_null()) << "timed out at 16 workers";
    const json& ticket = series_of(chart_of(data, "hold"), "ticket_lock");
    EXPECT_TRUE(ticket["y"][2].is_number());
    EXPECT_TRUE(ticket["y"][3].is_null()) << "timed out at cs_us 200, though it has figures";
    EXPECT_EQ(count(page, "<span class=\"bad\">timed_out</span>"), 3u);
    EXPECT_NE(page.find("no repetition finished within 27 s"), std::string::npos) << "the reason is shown";
    EXPECT_NE(page.find("oversubscribed</span>"), std::string::npos);
    EXPECT_NE(page.find("14 of 16 cells valid"), std::string::npos);
    EXPECT_NE(page.find("11 of 12 cells valid"), std::string::npos);
}

TEST(Report, EachLineCarriesItsCpuTimeAndFairnessWithGapsWhereThereAreNone) {
    const json counter = chart_of(page_data(lab::render_report({{"f", fixture()}}, fake_library)), "counter");
    EXPECT_EQ(counter["contenders"], json({"ttas_lock", "std_mutex", "contend_mutex", "ck_ticket"}))
        << "in order of first appearance: the order of the toggles";
    const json& mutex = series_of(counter, "contend_mutex");
    ASSERT_EQ(mutex["cpu"].size(), 4u);
    for (const auto& cpu : mutex["cpu"]) EXPECT_TRUE(cpu.is_number());
    EXPECT_TRUE(mutex["min_share"][0].is_null()) << "one worker: no fairness measured";
    EXPECT_NEAR(mutex["min_share"][1].get<double>(), 0.6352, 1e-4);
    EXPECT_EQ(mutex["min_share"][2], 0.0) << "a starved worker is a figure, not a gap";
    const json& ck = series_of(counter, "ck_ticket");
    EXPECT_TRUE(ck["cpu"][2].is_null()) << "an invalid cell has no point in any chart";
    EXPECT_TRUE(ck["min_share"][2].is_null());
}

TEST(Report, TheDefaultBaselineIsStdMutexElseTheFirstContenderElseNone) {
    const json data = page_data(lab::render_report({{"f", fixture()}}, fake_library));
    EXPECT_EQ(chart_of(data, "counter")["default_baseline"], "std_mutex") << "std_mutex is second there";
    EXPECT_EQ(chart_of(data, "hold")["default_baseline"], "std_mutex");

    lab::run_result without;
    for (const char* name : {"b", "a"}) without.cells.push_back(cell("s", name, 2, 5));
    EXPECT_EQ(page_data(lab::render_report({{"f", without}}, fake_library))["charts"][0]["default_baseline"], "b");

    lab::run_result alone;
    for (int w : {1, 2}) alone.cells.push_back(cell("s", "std_mutex", w, 5));
    EXPECT_EQ(page_data(lab::render_report({{"f", alone}}, fake_library))["charts"][0]["default_baseline"], "")
        << "nothing to compare with: absolute ns/op";
}

TEST(Report, ASuiteWithoutFairnessFiguresSaysSoInsteadOfAnEmptyChart) {
    lab::run_result run;
    for (int w : {1, 2}) run.cells.push_back(cell("pool", "a", w, 5));  // min_share: not measured
    auto measured = cell("counter", "a", 2, 5);
    measured.has_fairness = true;
    measured.min_share = 0.5;
    run.cells.push_back(measured);
    const std::string page = lab::render_report({{"f", run}}, fake_library);
    EXPECT_EQ(count(page, "No fairness figures"), 1u);
    EXPECT_EQ(count(page, "<canvas id=\"chart-1-share\""), 1u) << "the counter suite's fairness chart";
    EXPECT_EQ(page.find("<canvas id=\"chart-0-share\""), std::string::npos) << "none for the pool suite";
    EXPECT_NE(page.find("data-side-charts-expected=\"3\""), std::string::npos);
    const json data = page_data(page);
    EXPECT_TRUE(chart_of(data, "pool")["share_canvas"].is_null());
    EXPECT_EQ(chart_of(data, "counter")["share_canvas"], "chart-1-share");
}

TEST(Report, AWorkloadsMetricsGetAColumnEachWithNoCodeForThem) {
    lab::run_result run;
    auto a = cell("pool", "contend", 4, 120.0, {{"queue", "local"}});
    a.metrics = {{"items_per_ms", 8333.25}};
    auto b = cell("pool", "tbb", 4, 150.0, {{"queue", "local"}});  // no such metric: a blank
    run.cells = {a, b};
    const std::string page = lab::render_report({{"f", run}}, fake_library);
    EXPECT_NE(page.find("<th>items_per_ms</th>"), std::string::npos);
    EXPECT_NE(page.find(">8333<"), std::string::npos) << "its value, formatted as every figure is";
    for (const char* heading : {"<th>median ns/op</th>", "<th>p25</th>", "<th>min share</th>", "<th>status</th>"})
        EXPECT_NE(page.find(heading), std::string::npos) << heading << ": the field table's headings";
}

TEST(Report, TheRunsCotenantAndAModalCellAreShown) {
    lab::run_result run;
    run.context.busy_loops = 2;
    run.context.busy_nice = 19;
    run.context.one_cpu = 0;
    run.cells.push_back(cell("pipe", "contend", 2, 500, {{"chunk", "4096"}}));
    auto ring = cell("pipe", "mutex_ring", 2, 3900, {{"chunk", "4096"}});
    ring.ns_per_op = {512, 4096, 530, 4200, 3900};
    ring.modal = true;
    run.cells.push_back(ring);
    const std::string page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_NE(page.find("<tr><th>co-tenant</th><td>2 busy loops at nice 19, on CPU 0</td></tr>"), std::string::npos);
    EXPECT_EQ(count(page, "class=\"flag modal\""), 1u) << "the modal cell only";
    EXPECT_NE(page.find("title=\"the repetitions fall into separate modes: 2 repetitions near 521 ns, 3 near 4096 "
                        "ns; the median is not one figure\">modal</span>"),
              std::string::npos);
}

TEST(Report, AFairnessNotMeasuredSaysSoWithItsReason) {
    lab::run_result run;
    auto measured = cell("counter", "std_mutex", 2, 20);
    measured.has_fairness = true;
    measured.min_share = 0.9;
    measured.max_share = 1.1;
    run.cells.push_back(measured);
    auto short_one = cell("counter", "std_mutex", 64, 40);
    short_one.has_fairness = true;
    short_one.fairness_reason = "the shares were read 37.5 ms into a repetition <too early>";
    run.cells.push_back(short_one);
    std::string page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_EQ(count(page, ">not measured</span>"), 2u) << "its min and its max share";
    EXPECT_NE(page.find("title=\"the shares were read 37.5 ms into a repetition &lt;too early&gt;\""),
              std::string::npos)
        << "the reason, escaped";
    EXPECT_TRUE(series_of(chart_of(page_data(page), "counter"), "std_mutex")["min_share"][1].is_null());

    run.cells.erase(run.cells.begin());  // nothing measured at all
    page = lab::render_report({{"run.json", run}}, fake_library);
    EXPECT_NE(page.find("too short for the scheduler to run every worker"), std::string::npos);
}
