// The HTTP side of a connection: reads requests from its `in` pipe, writes the answers to
// its `out` pipe, never touching the socket (connection.hpp says who touches what).
#pragma once

#include <memory>
#include <optional>

#include "connection.hpp"

namespace json_server {

// One pool item: reads and answers until a read or flush must wait, or the connection ends.
// `first`: a read already made for it.
void parser_run(const std::shared_ptr<connection>& c, std::optional<contend::read_result> first);

// After a flush of answers: go on reading, wait, or end the connection.
enum class parser_next { read_more, waiting, finished };
parser_next after_flush(connection& c, const contend::flush_result& r);
void resume(const std::shared_ptr<connection>& c, parser_next next);

}  // namespace json_server
