#include "os/write_all.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace contend::lab {

int write_all(int fd, std::string_view bytes, bool (*stop_on_eintr)()) noexcept {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR && (stop_on_eintr == nullptr || !stop_on_eintr())) continue;
            return errno;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

}  // namespace contend::lab
