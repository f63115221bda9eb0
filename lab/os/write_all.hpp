// The lab's one loop that writes a whole buffer to a descriptor (or a socket): write(2) may write less than
// asked (a pipe, a socket, a signal in the middle) and may fail with EINTR before writing
// anything; every caller that means "all of it" goes through here.
#pragma once

#include <string_view>

namespace contend::lab {

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of
// the write that failed (EPIPE: no reader, when SIGPIPE is ignored or blocked). With
// `stop_on_eintr` (may be null), an EINTR for which it returns true ends the loop with EINTR:
// a stop signal can then interrupt a write that would block for good (a FIFO nobody reads).
// Async-signal-safe when `stop_on_eintr` is (only write(2) is called): a signal handler and a
// child between fork and exec may use it.
int write_all(int fd, std::string_view bytes, bool (*stop_on_eintr)() = nullptr) noexcept;

// The same for a connected socket, with send(MSG_NOSIGNAL): a peer that is gone makes it
// return EPIPE without raising SIGPIPE, whatever this process does with that signal.
int send_all(int socket, std::string_view bytes) noexcept;

}  // namespace contend::lab
