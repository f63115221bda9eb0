// contend: the command-line front of the lab. Each subcommand's file declares its options
// and calls the lab library (run_suite, bench_session and program_session, the results
// model and its writers, the history, the comparisons, the pages), which the tests call
// directly; this file picks the subcommand and turns what it throws into the exit status of
// the one table.
#include <csignal>
#include <cstdio>
#include <new>
#include <stdexcept>

#include "analyze/inputs.hpp"
#include "cli/cli.hpp"
#include "results/version.hpp"
#include "run/cell_runner.hpp"
#include "store/interrupted.hpp"
#include "store/output_file.hpp"

namespace cli = contend::lab::cli;
namespace lab = contend::lab;

namespace {

// What the command threw, as its exit status, the message on standard error.
int status_of_exception(const std::string& command, int other_failure) {
    try {
        throw;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return cli::exit_usage;
    } catch (const lab::input_error& e) {
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return cli::exit_usage;
    } catch (const lab::output_write_error& e) {
        // The paths were checked before anything ran: the write itself failed.
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return cli::exit_output_failed;
    } catch (const lab::output_error& e) {
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return cli::exit_usage;
    } catch (const lab::interrupted& e) {
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return 128 + e.signal();
    } catch (const std::bad_alloc&) {
        // Before std::exception: "std::bad_alloc" says nothing a person can act on, and exit 1
        // is compare's "regression". Outputs are written whole to a temporary file and renamed,
        // so none is left half written.
        std::fprintf(stderr,
                     "contend %s: out of memory: the inputs (or the history) need more memory than this process may "
                     "use (see ulimit -v); stopped, no output half written\n",
                     command.c_str());
        return cli::exit_out_of_memory;
    } catch (const std::exception& e) {
        // Every command but import only reads, and what it could not read is its input (exit
        // 2); never 1, compare's "regression".
        std::fprintf(stderr, "contend %s: %s\n", command.c_str(), e.what());
        return other_failure;
    }
}

}  // namespace

int main(int argc, char** argv) {
    // The hidden child mode of cell_runner.hpp: settings arrive on standard input.
    if (argc == 2 && std::string(argv[1]) == "__cell") return lab::cell_child_main();

    CLI::App app{"contend: the contention lab. Measures locks, atomics and their wait policies on this machine."};
    app.require_subcommand(1);
    app.set_version_flag("--version", "contend " + lab::version_text(), "Print the version and git commit, then exit");
    app.footer(cli::exit_status_table);
    const cli::command bench = cli::add_bench(app);
    std::vector<cli::command> commands = {bench, cli::add_disasm(app), cli::add_report(app), cli::add_compare(app),
                                          cli::add_run(app)};
    for (auto& c : cli::add_history(app)) commands.push_back(std::move(c));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0 (4 when what they printed could not be written: a
        // full disk, a closed pipe); any other parse error is bad usage, exit 2 for every
        // subcommand (CLI11's own codes, 105-110, would mean nothing to a script).
        std::signal(SIGPIPE, SIG_IGN);  // a closed pipe is then a write error, not a kill
        if (app.exit(e) != 0) return cli::exit_usage;
        return cli::standard_output_checked(e.get_name() == "CallForVersion" ? "--version" : "--help", 0);
    }
    cli::install_stop_handlers();
    // Every command but bench, which writes what it measured, stops without writing.
    if (!bench.app->parsed()) lab::stop_outputs_on(&cli::stop_signal);
    const std::string name = app.get_subcommands().front()->get_name();
    cli::install_out_of_memory_handler(name);
    int code = 0;
    for (const auto& c : commands) {
        if (!c.app->parsed()) continue;
        try {
            code = c.run();
        } catch (...) {
            code = status_of_exception(name, c.other_failure);
        }
        break;
    }
    return cli::standard_output_checked(name, code);
}
