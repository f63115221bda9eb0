// PostgreSQL URIs: an unreachable server fails without hanging, and no message (from the
// library or any command) ever shows a password, whether the URI is well formed or not.
#include "history_postgres_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_cli.hpp"
#include "store/history.hpp"

namespace contend_test {
namespace {

TEST_F(PostgresHistory, AnUnreachableServerFailsWithoutHangingAndThePasswordIsMasked) {
    // Port 1 on the loopback: nothing listens there. connect_timeout bounds a server that
    // does not answer at all; here the refusal is immediate. The wait below only tells a
    // hang from a failure: it is no measure of speed.
    const std::string secret = "s3cr3t-pass";
    for (const std::string& uri : {"postgresql://contend:" + secret + "@127.0.0.1:1/x?connect_timeout=2",
                                   "postgres://contend@127.0.0.1:1/x?password=" + secret + "&connect_timeout=2"}) {
        SCOPED_TRACE(history_store::printable(uri));
        for (const bool check_only : {false, true}) {
            auto attempt = std::async(std::launch::async, [&]() -> std::string {
                try {
                    if (check_only) history_store::check_appendable(uri);
                    else history_store store(uri);
                } catch (const std::runtime_error& e) {
                    return e.what();
                }
                return "";
            });
            ASSERT_EQ(attempt.wait_for(std::chrono::seconds(60)), std::future_status::ready)
                << "still connecting after 60 s: connect_timeout was not applied";
            const std::string message = attempt.get();
            EXPECT_NE(message, "") << "connected to nothing";
            EXPECT_NE(message.find("cannot connect"), std::string::npos) << message;
            EXPECT_NE(message.find("127.0.0.1"), std::string::npos) << "names the server: " << message;
            EXPECT_EQ(message.find(secret), std::string::npos) << "shows the password: " << message;
            EXPECT_NE(message.find("***"), std::string::npos) << message;
        }
    }
}

TEST(HistoryUri, PrintableMasksEveryPasswordAndNothingElse) {
    EXPECT_EQ(history_store::printable("postgresql://u:pw@h:5432/db"), "postgresql://u:***@h:5432/db");
    EXPECT_EQ(history_store::printable("postgres://u:p@w:d@h/db"), "postgres://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql://u@h:5432/db"), "postgresql://u@h:5432/db");
    EXPECT_EQ(history_store::printable("postgresql://h/db?password=pw&sslmode=require"),
              "postgresql://h/db?password=***&sslmode=require");
    EXPECT_EQ(history_store::printable("postgresql:///db?host=/tmp/s&password=a&password=b"),
              "postgresql:///db?host=/tmp/s&password=***&password=***");
    EXPECT_EQ(history_store::printable("postgresql://h/a@b"), "postgresql://h/a@b") << "an @ in the path";
    EXPECT_EQ(history_store::printable("dir/u:pw@h.db"), "dir/u:pw@h.db") << "a file path is not a URI";
    EXPECT_TRUE(history_store::is_database_uri("postgresql://h/db"));
    EXPECT_TRUE(history_store::is_database_uri("postgres:///db"));
    EXPECT_FALSE(history_store::is_database_uri("./postgresql://h/db"));
    EXPECT_FALSE(history_store::is_database_uri(".contend/history.db"));
}

// libpq quotes what it cannot parse: a password, or the whole URI. No message shows one,
// whether from the library or any command; none of these reaches a server.
TEST(HistoryUri, APasswordInAMalformedPostgresUrlIsNeverPrinted) {
    const std::string secret = "S3cret";
    const std::vector<std::string> uris = {
        "postgresql://bob:" + secret + "%ZZPW@127.0.0.1/contend",  // a bad %-escape in the password
        "postgresql://bob:" + secret + "PW@[::1/contend",  // an unclosed IPv6 address
        "postgresql://bob:" + secret + "PW@[::1]x/contend",  // junk after it
        "postgresql://bob:pa/" + secret + "@127.0.0.1/contend",  // a raw '/' in the password
        "postgresql://bob:" + secret + "@127.0.0.1/contend?password",  // a parameter without '='
        "postgresql://127.0.0.1/contend?password=%ZZ" + secret,  // a bad %-escape in the parameter
        "POSTGRESQL://bob:" + secret + "%ZZPW@127.0.0.1/contend",  // the scheme in capitals
        "postgresql://bob:" + secret + "%ZZ@127.0.0.1/contend?sslmode=x"};
    for (const std::string& uri : uris) {
        SCOPED_TRACE(history_store::printable(uri));
        EXPECT_EQ(history_store::printable(uri).find(secret), std::string::npos);
        for (const bool check_only : {false, true}) {
            std::string message;
            try {
                if (check_only) history_store::check_appendable(uri);
                else history_store store(uri, history_access::read_only);
            } catch (const std::runtime_error& e) {
                message = e.what();
            }
            EXPECT_NE(message, "") << "opened a malformed URI";
            EXPECT_EQ(message.find(secret), std::string::npos) << "shows the password: " << message;
        }
        const std::vector<std::string> commands = {"history list",
                                                   "history import " + shell_quote(__FILE__) + " --label x",
                                                   "compare a b", "report -o /dev/null"};
        for (const std::string& command : commands) {
            const cli_outcome o = run_cli(command + " --db " + shell_quote(uri));
            EXPECT_NE(o.exit_code, 0) << command << ": " << o.output;
            EXPECT_EQ(o.output.find(secret), std::string::npos) << command << " shows the password: " << o.output;
        }
    }
    // The forms where a password is over before a '/' or holds an '@' are masked whole.
    EXPECT_EQ(history_store::printable("postgresql://u:pa/ss@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql://u:pa?ss@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(history_store::printable("postgresql:/u:pw@h/db"), "postgresql:/u:***@h/db");
    EXPECT_EQ(history_store::printable("POSTGRESQL://u:pw@h/db?PASSWORD=x"), "POSTGRESQL://u:***@h/db?PASSWORD=***");
    EXPECT_EQ(history_store::printable("postgresql://[::1]:5432/a@b"), "postgresql://[::1]:5432/a@b");
}

}  // namespace
}  // namespace contend_test
