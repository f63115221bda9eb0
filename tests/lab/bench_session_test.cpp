// run/bench_session: a bench run's defaults, the checks made before the first cell, and each
// output written on its own. The CLI's tests run the same code end to end; these call it.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "run/bench_session.hpp"
#include "store/output_file.hpp"
#include "temp_dir.hpp"

namespace {

using contend::lab::bench_request;
using contend::lab::bench_session;

class BenchSession : public contend_test::temp_dir_test {
protected:
    bench_request request() const {
        bench_request r;
        r.options.suite = "selftest";
        r.json_path = path("run.json");
        r.db_path = path("history.db");
        return r;
    }
};

TEST_F(BenchSession, TheShortQuickAndFullRunsHaveTheirDefaults) {
    const bench_session plain(request());
    EXPECT_EQ(plain.options().harness.min_time_s, 0.05);
    EXPECT_EQ(plain.options().harness.deadline_s, bench_session::default_deadline_s);
    EXPECT_EQ(plain.options().harness.min_repetitions, bench_session::default_min_repetitions);
    EXPECT_FALSE(plain.options().run_after_timeout);

    bench_request quick = request();
    quick.quick = true;
    const bench_session q(quick);
    EXPECT_EQ(q.options().harness.min_time_s, 0.005);
    EXPECT_EQ(q.options().harness.repetitions, 3);
    EXPECT_EQ(q.options().workers, (std::vector<std::int32_t>{1, 2}));

    bench_request full = request();
    full.full = true;
    full.deadline_s = 7;  // given: kept, whatever the run
    const bench_session f(full);
    EXPECT_EQ(f.options().harness.deadline_s, 7);
    EXPECT_EQ(f.options().harness.min_repetitions, f.options().harness.repetitions);
    EXPECT_TRUE(f.options().run_after_timeout);
}

TEST_F(BenchSession, EveryRefusalComesBeforeAnythingIsMeasuredOrWritten) {
    bench_request on_history = request();
    on_history.csv_path = on_history.db_path;  // an output on the history
    EXPECT_THROW(bench_session{on_history}, contend::lab::output_error);

    bench_request nice_alone = request();
    nice_alone.busy_nice = 5;  // the nice level of busy loops that are not asked for
    EXPECT_THROW(bench_session{nice_alone}, std::invalid_argument);

    bench_request no_suite = request();
    no_suite.options.suite = "no-such-suite";
    EXPECT_THROW(bench_session{no_suite}, std::invalid_argument);

    bench_request db_on_stdout = request();
    db_on_stdout.db_path = "-";
    EXPECT_THROW(bench_session{db_on_stdout}, std::invalid_argument);

    // Refused, and nothing was created: not the history, not an output.
    EXPECT_TRUE(std::filesystem::is_empty(path("")));
}

TEST_F(BenchSession, AnOutputThatCannotBeWrittenCostsNoneOfTheOthers) {
    contend::lab::run_result run;
    run.context.run_status = "complete";
    run.cells.emplace_back();
    // The CSV's path becomes a folder after the checks: that write fails, the JSON and the
    // history are still written, and each says so.
    bench_request late = request();
    late.csv_path = path("run.csv");
    const bench_session late_session(late);
    std::filesystem::create_directories(path("run.csv/taken"));
    const auto written = late_session.write(run);
    EXPECT_EQ(written.failed.size(), 1u);
    ASSERT_EQ(written.wrote.size(), 2u);
    EXPECT_NE(written.wrote[0].find("--json: JSON"), std::string::npos) << written.wrote[0];
    EXPECT_NE(written.wrote[1].find("--db: history run"), std::string::npos) << written.wrote[1];
    EXPECT_TRUE(std::filesystem::exists(path("run.json")));
    EXPECT_NE(late_session.summary(run, written).find("Wrote:"), std::string::npos);
}

}  // namespace
