// Work given up because a signal asked the process to stop (SIGINT, SIGTERM, SIGHUP): the
// CLI's handler records the signal's number in an std::atomic<int> (0 until one comes), and
// the work that must be all or nothing -- a history append, an output file replacing the old
// one -- looks at it before it commits and throws this instead, leaving everything as it was.
// Internal to the lab (namespace contend::lab).
#pragma once

#include <string.h>  // sigabbrev_np

#include <atomic>
#include <stdexcept>
#include <string>

namespace contend::lab {

class interrupted : public std::runtime_error {
public:
    interrupted(int signal, const std::string& what) : std::runtime_error(what), signal_(signal) {}

    // The signal's number: the CLI exits 128 + this.
    int signal() const noexcept { return signal_; }

private:
    int signal_;
};

// Throws interrupted when `stop` (which may be null: never) holds a signal. `what` says what
// was left undone, e.g. "nothing was stored".
inline void throw_if_stopped(const std::atomic<int>* stop, const std::string& what) {
    if (stop == nullptr) return;
    if (const int signal = stop->load(); signal != 0) {
        const char* name = sigabbrev_np(signal);
        throw interrupted(
            signal,
            "stopped by " + (name ? "SIG" + std::string(name) : "signal " + std::to_string(signal)) + ": " + what);
    }
}

}  // namespace contend::lab
