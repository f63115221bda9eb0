// The inputs of `contend compare`: each format read from a golden file, every refusal of
// inputs.hpp from a file (golden/compare/bad/) or inline, and a replay of deterministic
// mutations of every golden file that may only ever end in input_error (the GCC-buildable
// twin of fuzz/compare_inputs_fuzz.cpp).
#include "analyze/inputs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "store/interrupted.hpp"

namespace lab = contend::lab;
using kind = lab::input_error_kind;

namespace contend::lab {
// Failures print the kind's name, not its bytes.
void PrintTo(input_error_kind k, std::ostream* os) { *os << to_string(k); }
}  // namespace contend::lab

namespace {

const std::string golden_dir = CONTEND_LAB_GOLDEN_DIR "/compare";

std::string golden(const std::string& name) { return golden_dir + "/" + name; }

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const lab::benchmark_series& series(const lab::comparison_input& in, const std::string& name) {
    for (const auto& s : in.benchmarks)
        if (s.name == name) return s;
    ADD_FAILURE() << in.source << " has no benchmark '" << name << "'";
    static const lab::benchmark_series none;
    return none;
}

std::vector<std::string> names(const lab::comparison_input& in) {
    std::vector<std::string> n;
    for (const auto& s : in.benchmarks) n.push_back(s.name);
    return n;
}

// The input_error that `read` throws; a failure when it throws nothing or something else.
std::optional<lab::input_error> error_of(const std::function<void()>& read) {
    try {
        read();
    } catch (const lab::input_error& e) {
        return e;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not an input_error: " << e.what();
        return std::nullopt;
    }
    ADD_FAILURE() << "accepted";
    return std::nullopt;
}

std::optional<lab::input_error> error_of_text(const std::string& text, const std::string& source = "inline.json") {
    return error_of([&] { lab::parse_comparison_input(text, source); });
}

// A Google Benchmark file of the given rows.
std::string gb_file(const std::string& rows) {
    return R"({"context": {"date": "2026-11-29", "num_cpus": 2}, "benchmarks": [)" + rows + "]}";
}

std::string iteration(const std::string& name, int index, const std::string& time, const std::string& unit = "ns") {
    return R"({"name": ")" + name + R"(", "run_name": ")" + name +
           R"(", "run_type": "iteration", "repetitions": 3, "repetition_index": )" + std::to_string(index) +
           R"(, "real_time": )" + time + R"(, "cpu_time": 1, "time_unit": ")" + unit + R"("})";
}

}  // namespace

// --- The formats -------------------------------------------------------------------------------

// lab_counter.json: `contend bench --suite counter --quick --workers 1 --no-history --json`,
// trimmed to three cells, the first marked timed out by hand so that a skipped cell is read.
TEST(CompareInputs, ReadsTheLabJsonOfARealRun) {
    const auto in = lab::read_comparison_input(golden("lab_counter.json"));
    EXPECT_EQ(in.source, golden("lab_counter.json"));
    EXPECT_EQ(in.format, "contend-lab");
    EXPECT_EQ(in.label, "compare-fixture");
    EXPECT_FALSE(in.date.empty());
    EXPECT_FALSE(in.cpu_model.empty());
    EXPECT_NE(in.version.find("0.1.0"), std::string::npos) << in.version;
    EXPECT_EQ(names(in), (std::vector<std::string>{"counter/std_mutex/workers:1", "counter/contend_mutex/workers:1"}));
    for (const auto& s : in.benchmarks) {
        EXPECT_EQ(s.samples_ns.size(), 3u) << s.name;
        EXPECT_EQ(s.note, "") << s.name;
        std::vector<double> sorted = s.samples_ns;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_DOUBLE_EQ(s.median_ns, sorted[1]) << s.name;
        for (double v : s.samples_ns) EXPECT_TRUE(v > 0 && std::isfinite(v)) << s.name;
    }
    EXPECT_DOUBLE_EQ(series(in, "counter/std_mutex/workers:1").samples_ns.front(), 11.675424575805664);
    ASSERT_EQ(in.skipped.size(), 1u);
    EXPECT_EQ(in.skipped[0].name, "counter/ticket_lock/workers:1");
    EXPECT_EQ(in.skipped[0].reason, "timed_out: no repetition finished within 10 s");
}

TEST(CompareInputs, ReadsGoogleBenchmarkWithRepetitions) {
    const auto in = lab::read_comparison_input(golden("gb_repetitions.json"));
    EXPECT_EQ(in.format, "google-benchmark");
    EXPECT_EQ(in.label, "base-3f5e681");
    EXPECT_EQ(in.cpu_model, "AMD EPYC 7B13");
    EXPECT_EQ(in.date, "2026-11-29T10:00:00+00:00");
    EXPECT_EQ(in.version, "");
    // The aggregates (and BM_Sort's BigO and RMS) make no series of their own.
    EXPECT_EQ(names(in), (std::vector<std::string>{"BM_Lock/threads:2", "BM_Queue/4096"}));
    const auto& lock = series(in, "BM_Lock/threads:2");
    EXPECT_EQ(lock.samples_ns, (std::vector<double>{12.5, 12.0, 13.0}));
    EXPECT_DOUBLE_EQ(lock.median_ns, 12.5);
    EXPECT_EQ(lock.note, "");
    const auto& queue = series(in, "BM_Queue/4096");
    EXPECT_EQ(queue.samples_ns, (std::vector<double>{2250.0, 2500.0, 2000.0})) << "us read as ns";
    EXPECT_DOUBLE_EQ(queue.median_ns, 2250.0);
    EXPECT_TRUE(in.skipped.empty());
}

TEST(CompareInputs, ReadsGoogleBenchmarkAggregatesOnly) {
    const auto in = lab::read_comparison_input(golden("gb_aggregates_only.json"));
    EXPECT_EQ(in.format, "google-benchmark");
    EXPECT_EQ(names(in), (std::vector<std::string>{"BM_Lock/threads:2", "BM_Sleep"}));
    const auto& lock = series(in, "BM_Lock/threads:2");
    EXPECT_TRUE(lock.samples_ns.empty());
    EXPECT_DOUBLE_EQ(lock.median_ns, 13.25) << "the median aggregate, not the mean";
    EXPECT_EQ(lock.note, "aggregates only: median");
    const auto& sleep = series(in, "BM_Sleep");
    EXPECT_TRUE(sleep.samples_ns.empty());
    EXPECT_DOUBLE_EQ(sleep.median_ns, 1.5e6) << "1.5 ms";
    EXPECT_EQ(sleep.note, "aggregates only: mean used (no median)");
}

TEST(CompareInputs, ReadsGoogleBenchmarkWithoutRepetitions) {
    const auto in = lab::read_comparison_input(golden("gb_single.json"));
    EXPECT_EQ(names(in), (std::vector<std::string>{"BM_Pipe/64", "BM_Pipe/65536", "BM_Fork"}));
    EXPECT_EQ(series(in, "BM_Pipe/64").samples_ns, std::vector<double>{350.5});
    EXPECT_EQ(series(in, "BM_Pipe/65536").samples_ns, std::vector<double>{750000.0}) << "ms read as ns";
    EXPECT_EQ(series(in, "BM_Fork").samples_ns, std::vector<double>{2e6}) << "s read as ns";
    EXPECT_DOUBLE_EQ(series(in, "BM_Fork").median_ns, 2e6);
}

// Before Google Benchmark 1.5 rows had no run_type, repetitions were rows of one name and
// aggregates were rows named "<name>_mean".
TEST(CompareInputs, ReadsGoogleBenchmarkFilesOlderThanRunType) {
    const auto in = lab::read_comparison_input(golden("gb_legacy.json"));
    EXPECT_EQ(names(in), std::vector<std::string>{"BM_Old"});
    EXPECT_EQ(series(in, "BM_Old").samples_ns, (std::vector<double>{10.0, 14.0}));
    EXPECT_DOUBLE_EQ(series(in, "BM_Old").median_ns, 12.0);
}

TEST(CompareInputs, AnEmptyListOfBenchmarksIsNoError) {
    const auto in = lab::parse_comparison_input(gb_file(""), "empty.json");
    EXPECT_TRUE(in.benchmarks.empty());
    EXPECT_EQ(in.source, "empty.json");
}

TEST(CompareInputs, BenchmarksInInterleavedOrderAreGroupedByRunName) {
    // --benchmark_enable_random_interleaving mixes the repetitions of benchmarks.
    const auto in = lab::parse_comparison_input(
        gb_file(iteration("B", 0, "2") + "," + iteration("A", 0, "1") + "," + iteration("B", 1, "4")), "mixed.json");
    EXPECT_EQ(names(in), (std::vector<std::string>{"B", "A"}));
    EXPECT_EQ(series(in, "B").samples_ns, (std::vector<double>{2.0, 4.0}));
    EXPECT_DOUBLE_EQ(series(in, "B").median_ns, 3.0);
}

// --- Refusals, one file each ---------------------------------------------------------------------

struct bad_file {
    const char* file;
    kind expected;
    const char* benchmark;  // "" when no benchmark is concerned
    const char* says;  // a part of the problem
};

TEST(CompareInputs, EachBadFileIsRefusedNamingTheFileAndTheBenchmark) {
    const bad_file cases[] = {
        {"truncated.json", kind::malformed_json, "", "not JSON"},
        {"not_object.json", kind::bad_shape, "", "not a JSON object"},
        {"no_benchmarks.json", kind::bad_shape, "", "no 'benchmarks' array"},
        {"missing_name.json", kind::missing_field, "benchmarks[1]", "lacks 'name'"},
        {"missing_real_time.json", kind::missing_field, "BM_B", "lacks 'real_time'"},
        {"missing_time_unit.json", kind::missing_field, "BM_B", "lacks 'time_unit'"},
        {"null_time.json", kind::not_a_number, "BM_A", "real_time is null"},
        {"infinite_time.json", kind::not_finite, "BM_Huge", "too large to be finite"},
        {"negative_time.json", kind::not_positive, "BM_Neg", "-2.5 is not positive"},
        {"zero_time.json", kind::not_positive, "BM_Zero", "0 is not positive"},
        {"unknown_unit.json", kind::unknown_unit, "BM_Pico", "'ps'"},
        {"mixed_units.json", kind::mixed_units, "BM_A", "'ns' and 'us'"},
        {"duplicate_repetition.json", kind::duplicate, "BM_A", "repetition_index 1 appears twice"},
        {"duplicate_median.json", kind::duplicate, "BM_A", "two 'median' aggregates"},
        {"error_row.json", kind::benchmark_error, "BM_Broken", "socket refused"},
        {"lab_duplicate.json", kind::duplicate, "counter/std_mutex/workers:1", "appears twice"},
        {"lab_null_sample.json", kind::not_a_number, "counter/std_mutex/workers:1", "sample 2 is null"},
        {"lab_missing_real_time.json", kind::missing_field, "counter/contend_mutex/workers:1", "lacks 'real_time'"},
    };
    for (const auto& c : cases) {
        const std::string path = golden("bad/") + c.file;
        SCOPED_TRACE(path);
        const auto e = error_of([&] { lab::read_comparison_input(path); });
        ASSERT_TRUE(e);
        EXPECT_EQ(lab::to_string(e->kind()), lab::to_string(c.expected)) << e->what();
        EXPECT_EQ(e->source(), path);
        EXPECT_EQ(e->benchmark(), c.benchmark) << e->what();
        EXPECT_NE(e->problem().find(c.says), std::string::npos) << e->what();
        const std::string what = e->what();
        EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
        if (*c.benchmark) {
            EXPECT_NE(what.find(std::string("benchmark '") + c.benchmark + "'"), std::string::npos);
        }
    }
}

TEST(CompareInputs, EveryBadFileIsInTheTable) {
    // A file added to golden/compare/bad/ without a row above would only be replayed.
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(golden("bad"))) files += entry.is_regular_file();
    EXPECT_EQ(files, 18u);
}

// --- Refusals, inline -------------------------------------------------------------------------------

TEST(CompareInputs, UnreadableFilesAreInputErrors) {
    const auto missing = error_of([] { lab::read_comparison_input(golden("no_such_file.json")); });
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->kind(), kind::unreadable);
    EXPECT_NE(std::string(missing->what()).find("no_such_file.json"), std::string::npos);
    const auto directory = error_of([] { lab::read_comparison_input(golden_dir); });
    ASSERT_TRUE(directory);
    EXPECT_EQ(directory->kind(), kind::unreadable);
    EXPECT_EQ(error_of_text("")->kind(), kind::malformed_json);
}

TEST(CompareInputs, ANumberBeyondADoubleIsNotFinite) {
    EXPECT_EQ(error_of_text(gb_file(iteration("A", 0, "1e999")))->kind(), kind::not_finite);
}

TEST(CompareInputs, ShapesThatAreNotResultsAreRefused) {
    EXPECT_EQ(error_of_text(R"({"benchmarks": {}})")->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(R"({"benchmarks": [7]})")->benchmark(), "benchmarks[0]");
    EXPECT_EQ(error_of_text(R"({"context": [], "benchmarks": []})")->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(R"({"context": {"label": 3}, "benchmarks": []})")->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(gb_file(R"({"name": 5, "real_time": 1, "time_unit": "ns"})"))->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(gb_file(R"({"name": "", "real_time": 1, "time_unit": "ns"})"))->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(gb_file(iteration("A", 0, "\"12\"")))->kind(), kind::bad_shape);
    const auto run_type =
        error_of_text(gb_file(R"({"name": "A", "run_type": "warmup", "real_time": 1, "time_unit": "ns"})"));
    EXPECT_EQ(run_type->kind(), kind::bad_shape);
    EXPECT_EQ(run_type->benchmark(), "A");
    const auto index =
        error_of_text(gb_file(R"({"name": "A", "repetition_index": -1, "real_time": 1, "time_unit": "ns"})"));
    EXPECT_EQ(index->kind(), kind::bad_shape);
}

TEST(CompareInputs, AConversionToNsThatOverflowsIsNotFinite) {
    const auto e = error_of_text(gb_file(iteration("A", 0, "1e305", "s")));
    EXPECT_EQ(e->kind(), kind::not_finite);
    EXPECT_EQ(e->benchmark(), "A");
}

TEST(CompareInputs, APlainRowTwiceIsADuplicate) {
    const std::string row = R"({"name": "A", "real_time": 1, "time_unit": "ns"})";
    const auto e = error_of_text(gb_file(row + "," + row));
    EXPECT_EQ(e->kind(), kind::duplicate);
    EXPECT_EQ(e->benchmark(), "A");
}

TEST(CompareInputs, AnErrorRowWithoutAMessageStillNamesTheBenchmark) {
    const auto e = error_of_text(gb_file(R"({"name": "A/threads:2", "error_occurred": true})"));
    EXPECT_EQ(e->kind(), kind::benchmark_error);
    EXPECT_EQ(e->benchmark(), "A/threads:2");
}

TEST(CompareInputs, ALabRowMustBeTheLabsOwn) {
    const std::string text = slurp(golden("lab_counter.json"));
    const auto replaced = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        const auto at = t.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        if (at != std::string::npos) t.replace(at, from.size(), to);
        return t;
    };
    const auto e =
        error_of_text(replaced(R"("name": "counter/std_mutex/workers:1")", R"("name": "counter/std_mutex/workers:9")"),
                      "renamed.json");
    EXPECT_EQ(e->kind(), kind::bad_shape);
    EXPECT_EQ(e->benchmark(), "counter/std_mutex/workers:9");
    const std::string in_us = replaced(R"("time_unit": "ns")", R"("time_unit": "us")");
    EXPECT_EQ(error_of_text(in_us)->kind(), kind::bad_shape);
}

// compare reads a lab row by its samples, history import and report by its real_time (and
// p25, p75): a row whose figures disagree with its samples would say "same" in one and "50x"
// in the other. Such a file was not written by the lab; it is refused, naming the row.
TEST(CompareInputs, ALabRowWhoseRealTimeIsNotTheMedianOfItsSamplesIsRefused) {
    const std::string text = slurp(golden("lab_counter.json"));
    const std::string from = R"("real_time": 19.405778884887695)";
    ASSERT_NE(text.find(from), std::string::npos);
    std::string edited = text;
    edited.replace(edited.find(from), from.size(), R"("real_time": 970.28)");
    const auto e = error_of_text(edited, "edited.json");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->benchmark(), "counter/std_mutex/workers:1");
    EXPECT_NE(e->problem().find("real_time 970.28 is not the median of its samples (19.4058"), std::string::npos)
        << e->what();
    EXPECT_EQ(std::string(e->what()).rfind("edited.json: ", 0), 0u) << e->what();
    std::string p25 = text;
    const std::string p25_from = R"("p25": 15.54060173034668)";
    ASSERT_NE(p25.find(p25_from), std::string::npos);
    p25.replace(p25.find(p25_from), p25_from.size(), R"("p25": 1.5)");
    EXPECT_NE(error_of_text(p25)->problem().find("p25 1.5 is not"), std::string::npos);
    // The lab's own figures round-trip through JSON exactly; a last-digit difference is kept.
    std::string close = text;
    close.replace(close.find(from), from.size(), R"("real_time": 19.405778884887699)");
    EXPECT_NO_THROW(lab::parse_comparison_input(close, "close.json"));
}

// nlohmann::json keeps the last of two equal keys: {"benchmarks": [...], "benchmarks": []}
// compared 0 benchmarks and exited 0.
TEST(CompareInputs, AKeyTwiceInOneObjectIsRefusedAsADuplicate) {
    const std::string rows = iteration("BM_A", 0, "10");
    const auto top = error_of_text(R"({"benchmarks": [)" + rows + R"(], "benchmarks": []})", "twice.json");
    ASSERT_TRUE(top);
    EXPECT_EQ(top->kind(), kind::duplicate);
    EXPECT_NE(top->problem().find("the key 'benchmarks' appears twice"), std::string::npos) << top->what();
    const auto in_row =
        error_of_text(gb_file(R"({"name": "BM_A", "real_time": 10, "real_time": 99, "time_unit": "ns"})"));
    ASSERT_TRUE(in_row);
    EXPECT_EQ(in_row->kind(), kind::duplicate);
    EXPECT_NE(in_row->problem().find("'real_time'"), std::string::npos) << in_row->what();
    // The same key in two objects, or nested under itself, is no duplicate.
    EXPECT_NO_THROW(lab::parse_comparison_input(gb_file(iteration("BM_A", 0, "10") + "," + iteration("BM_A", 1, "11")),
                                                "fine.json"));
    EXPECT_NO_THROW(lab::parse_comparison_input(R"({"context": {"context": {}}, "benchmarks": []})", "nested.json"));
}

TEST(CompareInputs, AGoogleBenchmarkThreadsFieldMustMatchTheNamesThreadsPart) {
    const auto row = [](const std::string& name, const std::string& threads) {
        return R"({"name": ")" + name + R"(", "run_name": ")" + name +
               R"(", "run_type": "iteration", "repetition_index": 0, "threads": )" + threads +
               R"(, "real_time": 10, "time_unit": "ns"})";
    };
    EXPECT_NO_THROW(lab::parse_comparison_input(gb_file(row("BM_Lock/threads:4", "4")), "ok.json"));
    EXPECT_NO_THROW(lab::parse_comparison_input(gb_file(row("BM_Lock", "1")), "ok.json"));
    const auto e = error_of_text(gb_file(row("BM_Lock/threads:2", "4")), "edited.json");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind(), kind::bad_shape);
    EXPECT_EQ(e->benchmark(), "BM_Lock/threads:2");
    EXPECT_NE(e->problem().find("'threads' is 4 but the name says /threads:2"), std::string::npos) << e->what();
    EXPECT_EQ(error_of_text(gb_file(row("BM_Lock", "8")))->kind(), kind::bad_shape);
    EXPECT_EQ(error_of_text(gb_file(row("BM_Lock/threads:2", "0")))->kind(), kind::bad_shape);
}

TEST(CompareInputs, ALabRowsModalFlagIsKeptAndAFileOfBeforeItReadsAsNotModal) {
    const std::string text = slurp(golden("lab_counter.json"));  // written before the flag
    for (const auto& s : lab::parse_comparison_input(text, "old.json").benchmarks) EXPECT_FALSE(s.flagged_modal);
    std::string flagged = text;
    const std::string row = R"("name": "counter/std_mutex/workers:1")";
    flagged.replace(flagged.find(row), row.size(), row + R"(, "modal": true)");
    EXPECT_TRUE(series(lab::parse_comparison_input(flagged, "new.json"), "counter/std_mutex/workers:1").flagged_modal);
    std::string bad = text;
    bad.replace(bad.find(row), row.size(), row + R"(, "modal": 1)");
    EXPECT_EQ(error_of_text(bad)->kind(), kind::bad_shape) << "a flag is true or false";
}

// Issue item 14: a results file of hundreds of MB was read and parsed to its end (tens of
// seconds) before the first stop signal was looked at. Now the parse looks at it as it goes:
// with a signal given, neither format is read, from text or from its file.
TEST(CompareInputs, AStopSignalEndsTheParseOfEitherFormat) {
    std::atomic<int> stop{SIGINT};
    for (const std::string name : {"gb_repetitions.json", "lab_counter.json"}) {
        SCOPED_TRACE(name);
        const std::string text = slurp(golden(name));
        EXPECT_NO_THROW(lab::parse_comparison_input(text, name));
        for (const auto& read :
             std::vector<std::function<void()>>{[&] { lab::parse_comparison_input(text, name, &stop); },
                                                [&] { lab::read_comparison_input(golden(name), &stop); }}) {
            try {
                read();
                ADD_FAILURE() << "read to the end despite the signal";
            } catch (const lab::interrupted& e) {
                EXPECT_EQ(e.signal(), SIGINT);
                EXPECT_NE(std::string(e.what()).find("nothing was stored or written"), std::string::npos) << e.what();
            }
        }
    }
}

TEST(CompareInputs, InputErrorSaysWhereAndWhat) {
    const lab::input_error with(kind::duplicate, "a.json", "BM_A", "appears twice");
    EXPECT_STREQ(with.what(), "a.json: benchmark 'BM_A': appears twice");
    const lab::input_error without("b.json", "", "no such label");
    EXPECT_STREQ(without.what(), "b.json: no such label");
    EXPECT_EQ(without.kind(), kind::other);
}

// --- Replay: mutations of every golden file end in a result or an input_error, nothing else ---

namespace {

// xorshift64: a fixed, portable stream of choices, so a failure replays exactly.
struct choices {
    std::uint64_t state;
    std::uint64_t next() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    }
    std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

// Bytes that change JSON's structure or a number's meaning more often than random ones do.
constexpr char telling_bytes[] = "{}[]\",:-+.0159eEnNtf\\ \x00\xff";

// Accepted input must give what inputs.hpp promises: finite positive times, named series.
void expect_sound(const lab::comparison_input& in, const std::string& what) {
    for (const auto& s : in.benchmarks) {
        EXPECT_FALSE(s.name.empty()) << what;
        EXPECT_TRUE(std::isfinite(s.median_ns) && s.median_ns > 0) << what << ": " << s.name;
        for (double v : s.samples_ns) EXPECT_TRUE(std::isfinite(v) && v > 0) << what << ": " << s.name;
    }
}

void replay(const std::string& text, const std::string& what) {
    try {
        expect_sound(lab::parse_comparison_input(text, "replay.json"), what);
    } catch (const lab::input_error&) {
    } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": not an input_error: " << e.what();
    } catch (...) {
        ADD_FAILURE() << what << ": not an input_error, not even a std::exception";
    }
}

}  // namespace

TEST(CompareInputs, MutationsOfEveryGoldenFileEndInAResultOrAnInputError) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(golden_dir))
        if (entry.is_regular_file()) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 20u);
    constexpr int truncations = 100, flips = 250, splices = 50;
    for (const auto& path : files) {
        const std::string text = slurp(path);
        ASSERT_FALSE(text.empty()) << path;
        replay(text, path);
        choices pick{0x9e3779b97f4a7c15ull ^ text.size()};
        for (int i = 0; i < truncations; ++i) {
            const std::size_t cut = text.size() * i / truncations;
            replay(text.substr(0, cut), path + " cut at " + std::to_string(cut));
        }
        for (int i = 0; i < flips; ++i) {
            std::string m = text;
            const int bytes = 1 + static_cast<int>(pick.below(3));
            std::string where;
            for (int b = 0; b < bytes; ++b) {
                const std::size_t at = pick.below(m.size());
                m[at] = pick.below(2) ? telling_bytes[pick.below(sizeof telling_bytes - 1)]
                                      : static_cast<char>(m[at] ^ (1u << pick.below(8)));
                where += ' ';  // not " " + ...: GCC 12 warns of a false overlap there (-Wrestrict)
                where += std::to_string(at);
            }
            replay(m, path + " bytes changed at" + where);
        }
        // A piece of the file copied over another: rows and keys repeated, nesting broken.
        for (int i = 0; i < splices; ++i) {
            const std::size_t from = pick.below(text.size()), to = pick.below(text.size());
            const std::size_t length = 1 + pick.below(std::min<std::size_t>(200, text.size() - from));
            std::string m = text;
            m.insert(to, text.substr(from, length));
            replay(m, path + " splice " + std::to_string(from) + "+" + std::to_string(length) + " at " +
                          std::to_string(to));
        }
    }
}
