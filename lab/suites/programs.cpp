// The programs suite: unmodified programs that threads fight over locks in, each run under
// every lock `contend run --lock` offers (glibc's own among them, through the same library),
// so that a user sees on their machine which lock serves which program, as LiTL's study did
// for 28 locks and 40 programs (docs/references.md). Rows:
// programs/<lock>/program:<name>/workers:N, N = the program's threads (by default 2 and 4x
// the CPUs). The figure is the program's own: the wall time of a fixed job, as ns per unit
// of it (a lock, an event, a MiB, an item, a database operation); per_second is the same as a
// rate.
//
// A repetition is one run of the job with the interposition library preloaded (what `contend
// run` does). Before a cell's first repetition the same job runs once plainly, without the
// library: what it prints that must not depend on the lock (sysbench's event count, a
// checksum of the data a round trip gave back, db_bench's operations and keys found) must be
// the same in every run under the lock, and, where the suite knows the answer (a sort's
// output, a round trip's, a count it asked for), be that answer. A run that fails, prints
// something else, or misses the deadline makes the cell invalid with its reason
// (program_failed, wrong_output, timed_out); a plain run that fails makes it plain_run_failed.
// A program that is not installed makes its cells "skipped", with the Debian package to
// install (scripts/setup.sh installs them all).
//
// The rows run in rounds (measure/rounds.hpp), as the server suite's do: each round runs one
// repetition of every row, so the locks compared sample the same stretches of the machine's
// time. Each round's cell process makes its input afresh (deterministic: the same bytes).
#include "suites/programs_suite.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "measure/harness.hpp"
#include "measure/placement.hpp"
#include "os/child_process.hpp"
#include "os/interpose_library.hpp"
#include "os/temp_folder.hpp"
#include "results/statistics.hpp"
#include "text/fnv1a.hpp"
#include "text/utf8.hpp"

namespace contend::lab {

std::string sysbench_outcome(std::string_view output) {
    static const std::regex events(R"(total number of events:\s+(\d+))");
    const std::string text(output);
    std::smatch m;
    return std::regex_search(text, m, events) ? "events " + m[1].str() : "";
}

std::string db_bench_outcome(std::string_view output) {
    // A benchmark's line: "readrandom   :       4.016 micros/op 447079 ops/sec 0.224 seconds
    // 100000 operations;   42.7 MB/s (43209 of 50000 found)". Progress lines end in '\r'.
    static const std::regex line(R"(^([a-z_]+)\s*:.*?(\d+) operations;[^(\n]*(\(\d+ of \d+ found\))?)");
    std::string text(output);
    std::replace(text.begin(), text.end(), '\r', '\n');
    std::string out;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string one = text.substr(at, end - at);
        std::smatch m;
        if (std::regex_search(one, m, line)) {
            out += m[1].str() + " " + m[2].str() + " operations";
            if (m[3].matched) out += " " + m[3].str();
            out += "\n";
        }
        at = end + 1;
    }
    return out;
}

namespace {

namespace fs = std::filesystem;

// One job: steps run one after the other, each of which must exit 0.
struct job {
    std::vector<std::vector<std::string>> steps;
    std::vector<std::string> environment;  // "NAME=value" added to every step's
    // Standard error on the output pipe too (text programs, whose messages say why a run
    // failed); off for steps whose output is data that is checksummed.
    bool errors_in_output = true;
    double units = 0;  // the job's work, in the contender's operation
    // What must be the same in every run, read from the last step's output; "" with `why`
    // set when the output is not what the program must print.
    std::function<std::string(const std::string& output, std::string& why)> outcome;
    // The outcome the suite knows to be right, or "" when only the plain run says.
    std::string known_outcome;
    // A server the steps talk to (memcached): started first, with the run's environment (so
    // under the lock), while the steps, its load client, run plainly; stopped after them. It
    // writes its TCP port to the file that MEMCACHED_PORT_FILENAME names ("TCP INET: N"),
    // which replaces "{port}" in the steps' arguments. Its CPU time is the run's too.
    std::vector<std::string> server;
    std::string port_file;  // where the server writes its port (under the cell's folder)
};

struct program_kind {
    std::string name;
    std::string description;
    std::string executable;  // looked up in PATH
    std::string package;  // the Debian package that has it
    std::string unit;  // what one unit of the job is: the row's operation
    // The job at `threads` (quick: a smaller one), its input written under `dir`.
    std::function<job(int threads, bool quick, const fs::path& dir)> make;
    // A second program the job runs (a load client), and its package; "" for none.
    std::string client_executable = {}, client_package = {};
};

// A scratch folder under $TMPDIR (or /tmp), removed with everything in it at the end.
// `bytes` of text lines (six words and a number each, xorshift64 from a fixed seed: the same
// file every time), written to `file`. Returns the lines, for the sort's known answer.
std::string write_text(const fs::path& file, std::size_t bytes) {
    static const char* const words[] = {"lock",   "wait", "park", "spin",  "futex", "queue", "reader", "writer",
                                        "thread", "pool", "pipe", "mutex", "cond",  "event", "latch",  "barrier"};
    std::string text;
    text.reserve(bytes + 128);
    std::uint64_t x = 0x9E3779B97F4A7C15ull;
    while (text.size() < bytes) {
        for (int w = 0; w < 6; ++w) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text += words[x & 15];
            text += ' ';
        }
        text += std::to_string(x >> 32);
        text += '\n';
    }
    std::ofstream out(file, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write the input " + file.string() + " (a full disk?)");
    return text;
}

std::string checksum_text(std::uint64_t h) {
    char s[32];
    std::snprintf(s, sizeof s, "fnv1a %016llx", static_cast<unsigned long long>(h));
    return s;
}

// The sort's answer: the lines in byte order (LC_ALL=C), checksummed.
std::string sorted_checksum(const std::string& text) {
    std::vector<std::string_view> lines;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = text.find('\n', at);
        lines.emplace_back(text.data() + at, end - at + 1);
        at = end + 1;
    }
    std::sort(lines.begin(), lines.end());
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const auto l : lines) h = fnv1a(l, h);
    return checksum_text(h);
}

std::string checksum_outcome(const std::string& output, std::string& why) {
    if (output.empty()) why = "it printed nothing";
    return output.empty() ? "" : checksum_text(fnv1a(output));
}

// The Python program: `threads` threads, half producers and half consumers, share a
// queue.Queue of 64 slots (a lock and three conditions inside) and report their sums under a
// threading.Condition that the main thread waits on. Prints "items N sum S".
constexpr const char* python_queue_program = R"(import sys, threading, queue
threads, items = int(sys.argv[1]), int(sys.argv[2])
producers = max(1, threads // 2)
consumers = max(1, threads - producers)
q = queue.Queue(maxsize=64)
cond = threading.Condition()
totals = {"items": 0, "sum": 0, "done": 0}
def produce(first):
    for i in range(first, items, producers):
        q.put(i)
def consume():
    n = s = 0
    while True:
        i = q.get()
        if i < 0:
            break
        n += 1
        s += i
    with cond:
        totals["items"] += n
        totals["sum"] += s
        totals["done"] += 1
        cond.notify_all()
ps = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
cs = [threading.Thread(target=consume) for _ in range(consumers)]
for t in ps + cs:
    t.start()
for t in ps:
    t.join()
for _ in cs:
    q.put(-1)
with cond:
    if not cond.wait_for(lambda: totals["done"] == consumers, timeout=600):
        sys.exit("the consumers did not finish")
for t in cs:
    t.join()
print("items %d sum %d" % (totals["items"], totals["sum"]))
)";

std::string python_outcome(const std::string& output, std::string& why) {
    static const std::regex done(R"(items (\d+) sum (\d+))");
    std::smatch m;
    if (!std::regex_search(output, m, done)) {
        why = "no \"items N sum S\" line";
        return "";
    }
    return m[0].str();
}

std::string db_outcome(const std::string& output, std::string& why) {
    std::string o = db_bench_outcome(output);
    if (o.empty()) why = "no benchmark line (\"NAME : ... N operations;\")";
    return o;
}

std::string events_outcome(const std::string& output, std::string& why) {
    std::string o = sysbench_outcome(output);
    if (o.empty()) why = "no \"total number of events\" line";
    return o;
}

// memaslap's counts: the gets and sets it made must be the ones asked for, and every value it
// read back and verified must be the one it stored.
std::string memaslap_outcome(const std::string& output, std::string& why) {
    const auto figure = [&](const char* name) -> std::optional<long long> {
        const std::regex line(std::string("(^|\n)") + name + R"(: (\d+))");
        std::smatch m;
        if (!std::regex_search(output, m, line)) return std::nullopt;
        return std::stoll(m[2].str());
    };
    const auto gets = figure("cmd_get"), sets = figure("cmd_set"), failed = figure("verify_failed");
    if (!gets || !sets || !failed) {
        why = "no \"cmd_get\", \"cmd_set\" and \"verify_failed\" lines";
        return "";
    }
    if (*failed != 0) {
        why = std::to_string(*failed) + " values read back were not the ones stored (verify_failed)";
        return "";
    }
    return "gets " + std::to_string(*gets) + " sets " + std::to_string(*sets);
}

std::string str(double v) { return std::to_string(static_cast<long long>(v)); }

// A compressor's round trip: compress `data` to a file beside it, then decompress that to
// the standard output, which must give `data` back.
job round_trip(const std::vector<std::string>& compress, const std::vector<std::string>& decompress,
               const std::string& data, std::size_t bytes) {
    job j;
    j.steps = {compress, decompress};
    j.errors_in_output = false;
    j.units = static_cast<double>(bytes) / (1 << 20);
    j.outcome = checksum_outcome;
    j.known_outcome = checksum_text(fnv1a(data));
    return j;
}

std::vector<program_kind> program_kinds() {
    std::vector<program_kind> p;
    p.push_back({"sysbench_mutex",
                 "sysbench's mutex test: every thread locks one shared mutex, no work between (4 million locks, "
                 "1 million with --quick)",
                 "sysbench", "sysbench", "lock", [](int threads, bool quick, const fs::path&) {
                     const double total = quick ? 1e6 : 4e6;
                     const double each = std::floor(total / threads);
                     job j;
                     j.steps = {{"sysbench", "mutex", "--threads=" + std::to_string(threads), "--mutex-num=1",
                                 "--mutex-locks=" + str(each), "--mutex-loops=0", "run"}};
                     j.units = each * threads;
                     j.outcome = events_outcome;
                     j.known_outcome = "events " + std::to_string(threads);  // one event per thread
                     return j;
                 }});
    p.push_back({"sysbench_threads",
                 "sysbench's threads test: threads take 4 mutexes in turn and yield 100 times an event (2,000 "
                 "events, 500 with --quick)",
                 "sysbench", "sysbench", "event", [](int threads, bool quick, const fs::path&) {
                     const int events = quick ? 500 : 2000;
                     job j;
                     j.steps = {{"sysbench", "threads", "--threads=" + std::to_string(threads), "--thread-yields=100",
                                 "--thread-locks=4", "--events=" + std::to_string(events), "--time=0", "run"}};
                     j.units = events;
                     j.outcome = events_outcome;
                     j.known_outcome = "events " + std::to_string(events);
                     return j;
                 }});
    p.push_back(
        {"sort", "GNU sort --parallel of a text file (16 MiB, 4 with --quick), LC_ALL=C", "sort", "coreutils", "MiB",
         [](int threads, bool quick, const fs::path& dir) {
             const std::size_t bytes = std::size_t{quick ? 4u : 16u} << 20;
             const std::string text = write_text(dir / "data", bytes);
             job j;
             j.steps = {{"sort", "--parallel=" + std::to_string(threads), "-S", "64M", (dir / "data").string()}};
             j.environment = {"LC_ALL=C"};
             j.errors_in_output = false;
             j.units = static_cast<double>(text.size()) / (1 << 20);
             j.outcome = checksum_outcome;
             j.known_outcome = sorted_checksum(text);
             return j;
         }});
    p.push_back({"xz", "xz -T round trip: -1 in 256 KiB blocks, then -d (8 MiB of text, 2 with --quick)", "xz",
                 "xz-utils", "MiB", [](int threads, bool quick, const fs::path& dir) {
                     const std::size_t bytes = std::size_t{quick ? 2u : 8u} << 20;
                     const std::string data = (dir / "data").string();
                     const std::string text = write_text(data, bytes);
                     const std::string t = "-T" + std::to_string(threads);
                     return round_trip({"xz", t, "-1", "--block-size=262144", "-k", "-f", data},
                                       {"xz", "-d", t, "-c", data + ".xz"}, text, text.size());
                 }});
    p.push_back({"pigz", "pigz -p round trip: compress, then -d (16 MiB of text, 4 with --quick)", "pigz", "pigz",
                 "MiB", [](int threads, bool quick, const fs::path& dir) {
                     const std::size_t bytes = std::size_t{quick ? 4u : 16u} << 20;
                     const std::string data = (dir / "data").string();
                     const std::string text = write_text(data, bytes);
                     const std::string t = std::to_string(threads);
                     return round_trip({"pigz", "-p", t, "-k", "-f", data}, {"pigz", "-d", "-p", t, "-c", data + ".gz"},
                                       text, text.size());
                 }});
    p.push_back(
        {"python_queue",
         "a Python program of ours: producer and consumer threads share a queue.Queue and report under a "
         "threading.Condition (200,000 items, 20,000 with --quick)",
         "python3", "python3", "item", [](int threads, bool quick, const fs::path&) {
             const long long items = quick ? 20000 : 200000;
             job j;
             j.steps = {{"python3", "-c", python_queue_program, std::to_string(threads), std::to_string(items)}};
             j.units = static_cast<double>(items);
             j.outcome = python_outcome;
             j.known_outcome = "items " + std::to_string(items) + " sum " + std::to_string(items * (items - 1) / 2);
             return j;
         }});
    // memcached (its worker threads the program's threads) under the lock, loaded over
    // 127.0.0.1 by memaslap from libmemcached-tools (Debian's memcaslap), run plainly: 2
    // client threads, 32 connections, 90 % gets, a tenth of the values verified. The job is a
    // fixed count of operations; its time runs from the server being ready to the client's end.
    p.push_back({"memcached",
                 "memcached under the lock, loaded over 127.0.0.1 by memaslap (2 threads, 32 connections, 90 % gets): "
                 "50,000 operations (8,000 with --quick)",
                 "memcached", "memcached", "operation",
                 [](int threads, bool quick, const fs::path& dir) {
                     // About 1 s on the 2-vCPU VM at 8 threads, as the other jobs, well within a
                     // run's deadline (200,000 took 4 s and missed the default 3 s).
                     const long long operations = quick ? 8000 : 50000;
                     job j;
                     j.port_file = (dir / "memcached.port").string();
                     j.server = {"memcached", "-l", "127.0.0.1", "-p", "-1", "-U", "0", "-t", std::to_string(threads),
                                 "-m",        "64", "-c",        "256"};
                     // As root it refuses to start unless told which user to run as.
                     if (geteuid() == 0) j.server.insert(j.server.end(), {"-u", "root"});
                     j.steps = {{"memcaslap", "-s", "127.0.0.1:{port}", "-T", "2", "-c", "32", "-x",
                                 std::to_string(operations), "-v", "0.1"}};
                     j.units = static_cast<double>(operations);
                     j.outcome = memaslap_outcome;
                     return j;
                 },
                 "memcaslap", "libmemcached-tools"});
    // RocksDB's db_bench, a fresh database each run, no compression, fixed seed: the keys
    // found are the same in every run at one thread count. Its --num and --reads are each
    // thread's, so the job's totals are split over the threads (whole keys a thread): the job
    // stays the same size at every thread count. A job that finds no keys (no read) knows its
    // answer, each benchmark's operations; one that reads learns the keys found from its plain run.
    const auto db_bench = [](const std::string& benchmarks, double keys, double reads, int passes_over_keys) {
        return [=](int threads, bool quick, const fs::path& dir) {
            const double scale = quick ? 0.25 : 1;
            const double num = std::floor(keys * scale / threads), each_reads = std::floor(reads * scale / threads);
            job j;
            j.steps = {{"db_bench", "--benchmarks=" + benchmarks, "--num=" + str(num), "--reads=" + str(each_reads),
                        "--threads=" + std::to_string(threads), "--seed=42", "--db=" + (dir / "db").string(),
                        "--compression_type=none"}};
            j.units = (num * passes_over_keys + each_reads) * threads;
            j.outcome = db_outcome;
            std::istringstream names(benchmarks);
            for (std::string name; reads == 0 && std::getline(names, name, ',');)
                j.known_outcome += name + " " + str(num * threads) + " operations\n";
            return j;
        };
    };
    p.push_back({"db_bench_read",
                 "RocksDB db_bench, read-mostly: fillrandom of 40,000 keys, then readrandom of 160,000 (a quarter "
                 "with --quick), split over the threads",
                 "db_bench", "rocksdb-tools", "operation", db_bench("fillrandom,readrandom", 40000, 160000, 1)});
    p.push_back({"db_bench_write",
                 "RocksDB db_bench, write-heavy: fillrandom of 40,000 keys, then overwrite of as many (a quarter with "
                 "--quick), split over the threads",
                 "db_bench", "rocksdb-tools", "operation", db_bench("fillrandom,overwrite", 40000, 0, 2)});
    return p;
}

// How one run ended.
struct run_outcome {
    std::string status;  // "" when every step exited 0
    std::string detail;
    std::string output;  // the last step's
    double wall_ns = 0;
    double cpu_ns = 0;
};

std::vector<std::string> own_environment() {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    return env;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// How a server that should still run ended, in words.
std::string ended_text(const child_exit& e) {
    return e.end == child_end::signaled
               ? "was killed by signal " + std::to_string(e.value) + " (" + strsignal(e.value) + ")"
               : "exited with status " + std::to_string(e.value);
}

// The job's server (job::server), started with `environment` and listening: its port, or ""
// with the failure in `r` (it did not start, ended, or wrote no port within `limit_s`).
std::string start_server(const job& j, const std::vector<std::string>& environment, double limit_s,
                         child_process& server, run_outcome& r) {
    const std::string who = j.server.front();
    std::error_code ignored;
    fs::remove(j.port_file, ignored);
    child_spec spec;
    spec.argv = j.server;
    spec.environment = environment;
    spec.environment->push_back("MEMCACHED_PORT_FILENAME=" + j.port_file);
    spec.input = child_stream::null;
    spec.output = child_stream::pipe;
    spec.errors = child_stream::pipe;
    spec.new_process_group = true;
    spec.die_with_parent = true;
    server = child_process::start(spec);
    r.status = "program_failed";
    if (server.start_error() != 0) {
        r.detail = who + " could not be started: " + std::strerror(server.start_error());
        return "";
    }
    static const std::regex listening(R"(TCP INET: (\d+))");
    const auto begun = std::chrono::steady_clock::now();
    std::string said;
    for (;;) {
        std::ifstream in(j.port_file);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::smatch m;
        if (std::regex_search(text, m, listening)) {
            r.status.clear();
            return m[1].str();
        }
        if (const auto e = server.wait_for(0)) {
            server.read_output(said, 0);
            r.detail = who + " " + ended_text(*e) + " before it listened: " + output_tail(said);
            return "";
        }
        if (seconds_since(begun) > limit_s) {
            server.kill_and_wait();
            r.status = "timed_out";
            r.detail = who + " did not listen within " + std::to_string(static_cast<int>(limit_s)) + " s; killed";
            return "";
        }
        // Waits up to 10 ms for output; a server that closed its output returns at once, so
        // the wait is a sleep then.
        if (server.read_output(said, 10) == child_process::read_result::end)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// Reads the listening server's output while the steps run, so that a server that writes
// more than a pipe holds (64 KiB) does not block on it mid-load (and then miss the SIGTERM a
// shell's trap or a handler would take only between writes). Keeps the last 4 KiB, for a
// failure's detail. Stopped, and joined, before the server is waited for or signalled: the
// child_process is not read from two threads at once.
class server_output_drain {
public:
    explicit server_output_drain(child_process& server)
        : thread_([this, &server](std::stop_token stop) {
              while (!stop.stop_requested()) {
                  if (server.read_output(tail_, 50) == child_process::read_result::end) return;
                  if (tail_.size() > 8192) tail_.erase(0, tail_.size() - 4096);
              }
          }) {}
    // The last of what the server wrote; stops the drain first.
    const std::string& stop() {
        thread_.request_stop();
        if (thread_.joinable()) thread_.join();
        return tail_;
    }

private:
    std::string tail_;
    std::jthread thread_;  // last: started once tail_ exists, joined before it goes
};

// Runs the job's steps within `limit_s` in all, with `environment` (none: ours, plainly); a
// job with a server runs the server so and its steps plainly.
run_outcome run_job(const job& j, const std::optional<std::vector<std::string>>& environment, double limit_s) {
    run_outcome r;
    const auto begun = std::chrono::steady_clock::now();
    child_process server;  // killed and reaped by its destructor on every early return
    std::string port;
    std::optional<server_output_drain> drain;  // destroyed (joined) before the server
    if (!j.server.empty()) {
        port = start_server(j, environment ? *environment : own_environment(), std::min(10.0, limit_s), server, r);
        if (port.empty()) return r;
        drain.emplace(server);
    }
    const auto start = std::chrono::steady_clock::now();
    for (auto argv : j.steps) {
        for (auto& a : argv)
            if (const auto at = a.find("{port}"); at != std::string::npos) a.replace(at, 6, port);
        child_spec spec;
        spec.argv = argv;
        std::vector<std::string> env = environment && j.server.empty() ? *environment : own_environment();
        env.insert(env.end(), j.environment.begin(), j.environment.end());
        spec.environment = std::move(env);
        spec.input = child_stream::null;
        spec.output = child_stream::pipe;
        spec.errors = j.errors_in_output ? child_stream::pipe : child_stream::null;
        spec.new_process_group = true;  // a deadline's kill reaches what the program started
        spec.die_with_parent = true;
        spec.output_limit = std::size_t{64} << 20;
        spec.timeout_s = std::max(0.001, limit_s - seconds_since(begun));
        const child_result c = run_child(spec);
        r.cpu_ns += c.cpu_ns;
        r.output = c.output;
        const std::string who = argv.front();
        switch (c.end) {
            case child_end::exited:
                if (c.value == 0) continue;
                r.status = "program_failed";
                r.detail = who + " exited with status " + std::to_string(c.value) +
                           (c.value == 127 ? " (not found)" : "") + ": " + output_tail(c.output);
                return r;
            case child_end::signaled:
                r.status = "program_failed";
                r.detail = who + " was killed by signal " + std::to_string(c.value) + " (" + strsignal(c.value) + ")";
                return r;
            case child_end::timed_out: {
                char detail[200];
                std::snprintf(detail, sizeof detail, "%s did not finish within the deadline (%g s); killed",
                              who.c_str(), limit_s);
                r.status = "timed_out";
                r.detail = detail;
                return r;
            }
            case child_end::too_much_output:
                r.status = "wrong_output";
                r.detail = who + " printed more than 64 MiB";
                return r;
            case child_end::not_started:
                r.status = "program_failed";
                r.detail = who + " could not be started: " + std::strerror(c.value);
                return r;
        }
    }
    r.wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    if (!j.server.empty()) {
        const std::string who = j.server.front();
        const std::string said = drain->stop();
        // A server that ended during the load failed it, whatever the client printed.
        if (const auto e = server.wait_for(0)) {
            r.status = "program_failed";
            r.detail =
                who + " " + ended_text(*e) + " while it was loaded" + (said.empty() ? "" : ": " + output_tail(said));
            return r;
        }
        // Under the lock its shutdown is part of the check: a server that cannot stop under the
        // lock fails the run. Plainly it says nothing of the lock, and memcached takes up to a
        // second to act on SIGTERM (0.7 s measured: it looks at its stop flag on its clock's
        // tick), which was a quarter of the --quick suite's time: killed at once.
        if (!environment) {
            r.cpu_ns += server.kill_and_wait().cpu_ns;
            return r;
        }
        server.signal(SIGTERM);
        const auto e = server.wait_for(5);
        if (!e) {
            r.status = "program_failed";
            r.detail = who + " did not stop within 5 s of SIGTERM; killed";
            return r;
        }
        r.cpu_ns += e->cpu_ns;
    }
    return r;
}

// The outcome of a run's output, checked: "" with `why` set when it is not right.
std::string checked_outcome(const job& j, const std::string& output, std::string& why) {
    const std::string o = j.outcome(output, why);
    if (o.empty()) return "";
    if (!j.known_outcome.empty() && o != j.known_outcome) {
        why = "it printed \"" + o + "\" where the answer is \"" + j.known_outcome + "\"";
        return "";
    }
    return o;
}

cell_result measure_program_cell(const program_kind& p, const std::string& lock, const contender& c,
                                 const std::string& suite_name, std::int32_t workers, const harness_options& o) {
    cell_result cell = new_cell(c, suite_name, workers);
    cell.oversubscribed = workers > static_cast<std::int32_t>(allowed_cpus().size());
    const auto fail = [&](const std::string& status, const std::string& detail) {
        cell.status = status;
        cell.detail = detail;
        return cell;
    };
    if (program_file(p.executable, std::getenv("PATH")).empty())
        return fail("skipped", p.executable + " is not installed: apt-get install " + p.package +
                                   " (scripts/setup.sh installs every program of the suite)");
    if (!p.client_executable.empty() && program_file(p.client_executable, std::getenv("PATH")).empty())
        return fail("skipped", p.client_executable + " is not installed: apt-get install " + p.client_package +
                                   " (scripts/setup.sh installs every program of the suite)");
    std::string library;
    try {
        library = find_interpose_library();
    } catch (const std::exception& e) {
        return fail("program_failed", e.what());
    }
    std::optional<temp_folder> dir;
    job j;
    try {
        dir.emplace("contend-programs-");
        j = p.make(workers, o.min_time_s <= 0.01, dir->path());
    } catch (const std::exception& e) {
        return fail("input_failed", std::string("the program's input could not be made: ") + e.what());
    }

    // The plain run, without the library: the answer every run under the lock must print, and
    // the program's own time. A job whose answer the suite knows needs it in a row's first
    // round only (half of a round's time otherwise), and in a later round only once a run under
    // the lock failed, to tell a program that fails by itself from one the lock broke.
    std::string why, plain_failure, expected;
    double plain_wall_ns = not_measured;
    const auto run_plain = [&] {
        const run_outcome plain = run_job(j, std::nullopt, o.deadline_s);
        if (o.on_repetition) o.on_repetition();  // progress for the cell's parent, as a calibration is
        if (!plain.status.empty()) {
            plain_failure = plain.detail;
            return;
        }
        expected = checked_outcome(j, plain.output, why);
        if (expected.empty()) plain_failure = why;
        else plain_wall_ns = plain.wall_ns;
    };
    const bool plain_first = o.round == 0 || j.known_outcome.empty();
    if (plain_first) run_plain();
    else expected = j.known_outcome;
    if (!plain_failure.empty()) return fail("plain_run_failed", "without contend's library: " + plain_failure);
    const auto failed_under_lock = [&](const std::string& status, const std::string& detail) {
        if (!plain_first) {
            run_plain();
            if (!plain_failure.empty()) return fail("plain_run_failed", "without contend's library: " + plain_failure);
        }
        return fail(status, detail);
    };

    const auto environment = preloaded_environment(library, lock);
    std::vector<double> cpu, seconds;
    double timed_ns = 0;
    for (std::int32_t rep = 0; rep < o.repetitions; ++rep) {
        const run_outcome r = run_job(j, environment, o.deadline_s);
        if (o.on_repetition) o.on_repetition();
        if (!r.status.empty()) return failed_under_lock(r.status, "under " + lock + ": " + r.detail);
        const std::string got = checked_outcome(j, r.output, why);
        if (got.empty()) return failed_under_lock("wrong_output", "under " + lock + ": " + why);
        if (got != expected)
            return failed_under_lock("wrong_output", "under " + lock + " it printed \"" + output_tail(got) +
                                                         "\", the plain run \"" + output_tail(expected) + "\"");
        cell.ns_per_op.push_back(r.wall_ns / j.units);
        cpu.push_back(r.cpu_ns / j.units);
        seconds.push_back(r.wall_ns / 1e9);
        ++cell.repetitions;
        timed_ns += r.wall_ns;
        if (cell.repetitions >= o.min_repetitions && cell.repetitions < o.repetitions &&
            (settled(cell.ns_per_op, o.spread_to_stop) || timed_ns >= o.time_to_stop_s * 1e9))
            break;
    }
    summarize_samples(cell);
    cell.cpu_ns_per_op = median(cpu);
    const double s = median(seconds);
    cell.metrics.emplace_back("seconds", s);
    cell.metrics.emplace_back("per_second", s > 0 ? j.units / s : not_measured);
    cell.metrics.emplace_back("plain_seconds", plain_wall_ns / 1e9);  // NaN where no plain run
    return cell;
}

}  // namespace

suite make_programs_suite() {
    const auto cpus = static_cast<std::int32_t>(allowed_cpus().size());
    suite s{"programs",
            "real programs under each lock of contend run --lock (glibc's through the same library): ns per unit of a "
            "fixed job (a lock, an event, a MiB, an item, a database operation); workers = the program's threads. Each "
            "run's output must match a plain run's; missing programs are skipped (scripts/setup.sh installs them)",
            {},
            {2, 4 * cpus}};
    s.interleave_rounds = true;
    s.every_round = true;
    for (const auto& kind : program_kinds()) {
        for (const auto& lock : interpose_locks()) {
            contender c;
            c.name = lock.name;
            c.description = kind.description + ", under " + lock.description;
            c.params = {{"program", kind.name}};
            c.operation = kind.unit;
            // No make() and no workload_type: the work runs in the program's process.
            c.measure_cell = [kind, name = lock.name](const contender& self, const std::string& suite_name,
                                                      std::int32_t workers, const harness_options& o) {
                return measure_program_cell(kind, name, self, suite_name, workers, o);
            };
            s.contenders.push_back(std::move(c));
        }
    }
    return s;
}

}  // namespace contend::lab
