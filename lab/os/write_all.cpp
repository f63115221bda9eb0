#include "os/write_all.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace contend::lab {
namespace {

// The loop itself, over write(2) or send(2): `once` writes what it can of the rest.
template <class Once>
int write_whole(std::string_view bytes, bool (*stop_on_eintr)(), Once once) noexcept {
    while (!bytes.empty()) {
        const ssize_t n = once(bytes);
        if (n < 0) {
            if (errno == EINTR && (stop_on_eintr == nullptr || !stop_on_eintr())) continue;
            return errno;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

}  // namespace

int write_all(int fd, std::string_view bytes, bool (*stop_on_eintr)()) noexcept {
    return write_whole(bytes, stop_on_eintr,
                       [fd](std::string_view rest) { return ::write(fd, rest.data(), rest.size()); });
}

int send_all(int socket, std::string_view bytes) noexcept {
    return write_whole(bytes, nullptr, [socket](std::string_view rest) {
        return ::send(socket, rest.data(), rest.size(), MSG_NOSIGNAL);
    });
}

}  // namespace contend::lab
