// The event loop: a chain of pool items that wait in epoll_wait in turn (loop.cpp).
#pragma once

#include "connection.hpp"

namespace json_server {

// One turn of the loop; posts the next unless the server has stopped (then it sets
// core::stopped).
void poll_item(server::core& c);

// After the loop has stopped: stops every transport and closes what is still open.
void force_close_all(server::core& c);

}  // namespace json_server
