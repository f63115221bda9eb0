// contend reports errors by exceptions; none may cross into C. The pthread functions' one
// guard: a lock can only fail to get memory for its first park (EAGAIN), and an unlock of a
// lock that is not held, where contend notices it, is EPERM, as an error-checking mutex says.
#pragma once

namespace contend::interpose {

template <class F>
int no_throw(int error, F&& f) noexcept {
    try {
        return f();
    } catch (...) {
        return error;
    }
}

}  // namespace contend::interpose
