// contend_lab_asio_server: the server suite's Boost.Asio peer (suites/server.cpp). It
// answers GET /json and /plaintext like server/, over Boost.Asio instead of
// contend's pipes and thread pool: one io_context run by --threads threads, one acceptor,
// and per connection a chain read -> parse every complete request -> one write -> read.
//
// The request parser and the response bytes are contend_json_http's, the same functions
// contend_json_server calls: the two servers then send identical headers (Server, Date,
// Content-Length, Connection), keep connections alive by the same rules and answer
// pipelined requests in one write, so that the suite compares the I/O and threading of the
// two servers, not their HTTP.
//
// Flags: --port N (0: a free one), --threads N (1 to 1024, default 1), --duration S (0: no
// limit, at most a year; a backstop, so that a server whose parent died stops by itself). A
// value out of range or not a whole number in decimal is refused: exit 2, the flag named. It prints
// "contend_lab_asio_server listening on 127.0.0.1:PORT", and on SIGTERM or SIGINT
// "totals: N requests in S s (R/s)", the line the suite reads from both servers.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http.hpp"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// The same limit as contend_json_server's default --max-header-bytes.
constexpr std::size_t max_header_bytes = 8192;

std::atomic<std::uint64_t> requests_answered{0};

class connection : public std::enable_shared_from_this<connection> {
public:
    explicit connection(tcp::socket socket) : socket_(std::move(socket)) {}

    void read() {
        // Grow the buffer only when what is kept of a partial request fills it.
        if (in_.size() - used_ < 4096) in_.resize(used_ + 4096);
        socket_.async_read_some(asio::buffer(in_.data() + used_, in_.size() - used_),
                                [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                                    if (ec) return;  // closed or reset by the client
                                    self->used_ += n;
                                    self->answer();
                                });
    }

private:
    // Answers every complete request buffered, in order, then writes them all at once.
    void answer() {
        out_.clear();
        bool close = false;
        std::size_t start = 0;
        while (!close) {
            const auto r =
                json_server::parse_request(std::string_view(in_.data() + start, used_ - start), max_header_bytes);
            if (r.status == json_server::parse_status::incomplete) break;
            if (r.status == json_server::parse_status::complete) {
                json_server::append_response(out_, r.request);
                close = !r.request.keep_alive;
                start += r.consumed;
            } else {
                json_server::append_error_response(out_, json_server::error_status(r.status));
                close = true;
            }
            requests_answered.fetch_add(1, std::memory_order_relaxed);
        }
        in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(start));
        used_ -= start;
        if (out_.empty()) {
            read();
            return;
        }
        asio::async_write(socket_, asio::buffer(out_),
                          [self = shared_from_this(), close](boost::system::error_code ec, std::size_t) {
                              if (ec) return;
                              if (close) {
                                  boost::system::error_code ignored;
                                  self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
                                  return;
                              }
                              self->read();
                          });
    }

    tcp::socket socket_;
    std::vector<char> in_;
    std::size_t used_ = 0;
    std::string out_;
};

void accept(tcp::acceptor& acceptor) {
    acceptor.async_accept([&acceptor](boost::system::error_code ec, tcp::socket socket) {
        if (!ec) {
            socket.set_option(tcp::no_delay(true));
            std::make_shared<connection>(std::move(socket))->read();
        }
        // Out of descriptors (EMFILE) would fail every accept at once: retry after a pause.
        if (ec == asio::error::no_descriptors) {
            auto timer = std::make_shared<asio::steady_timer>(acceptor.get_executor(), std::chrono::milliseconds(10));
            timer->async_wait([&acceptor, timer](boost::system::error_code) { accept(acceptor); });
            return;
        }
        if (ec == asio::error::operation_aborted) return;
        accept(acceptor);
    });
}

// --duration's bound, contend_json_server's: a year of seconds.
constexpr unsigned long max_duration_s = 365 * 86'400;

[[noreturn]] void bad_usage(const std::string& what) {
    std::fprintf(stderr,
                 "contend_lab_asio_server: %s\nusage: contend_lab_asio_server [--port N] [--threads N] "
                 "[--duration S]\n",
                 what.c_str());
    std::exit(2);
}

// A whole number in decimal from `min` to `max`, as contend_json_server reads its counts:
// strtoul took "-1" (and " 5", "+5") and wrapped it, so --duration -1 became 2^64 - 1
// seconds, which std::chrono::seconds held as -1: the backstop fired at once.
unsigned long number(std::string_view text, const char* flag, unsigned long min, unsigned long max) {
    unsigned long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || end != text.data() + text.size() || (ec != std::errc{} && ec != std::errc::result_out_of_range))
        bad_usage(std::string(flag) + " needs a whole number in decimal, not '" + std::string(text) + "'");
    if (ec == std::errc::result_out_of_range || v < min || v > max)
        bad_usage(std::string(flag) + " must be " + std::to_string(min) + " to " + std::to_string(max) + ", not '" +
                  std::string(text) + "'");
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned long port = 0, threads = 1, duration_s = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (i + 1 >= argc) bad_usage(std::string(flag) + " needs a value");
        const char* value = argv[++i];
        if (flag == "--port") port = number(value, "--port", 0, 65535);
        else if (flag == "--threads") threads = number(value, "--threads", 1, 1024);
        else if (flag == "--duration") duration_s = number(value, "--duration", 0, max_duration_s);
        else bad_usage("unknown flag " + std::string(flag));
    }

    try {
        asio::io_context io(static_cast<int>(threads));
        tcp::acceptor acceptor(io,
                               tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
        std::printf("contend_lab_asio_server listening on 127.0.0.1:%u (threads %lu)\n",
                    static_cast<unsigned>(acceptor.local_endpoint().port()), threads);
        std::fflush(stdout);

        const auto start = std::chrono::steady_clock::now();
        asio::signal_set signals(io, SIGTERM, SIGINT);
        signals.async_wait([&io](boost::system::error_code, int) { io.stop(); });
        asio::steady_timer backstop(io);
        if (duration_s > 0) {
            backstop.expires_after(std::chrono::seconds(duration_s));
            backstop.async_wait([&io](boost::system::error_code ec) {
                if (!ec) io.stop();
            });
        }
        accept(acceptor);

        std::vector<std::thread> pool;
        for (unsigned long t = 1; t < threads; ++t) pool.emplace_back([&io] { io.run(); });
        io.run();
        for (auto& t : pool) t.join();

        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const auto n = requests_answered.load();
        std::printf("totals: %llu requests in %.2f s (%.0f/s)\n", static_cast<unsigned long long>(n), seconds,
                    seconds > 0 ? static_cast<double>(n) / seconds : 0.0);
        std::fflush(stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contend_lab_asio_server: %s\n", e.what());
        return 1;
    }
    return 0;
}
