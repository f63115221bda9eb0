// contend::wait_backend_name(): which OS wait backend this build of contend compiled in.
#pragma once

namespace contend {

// "futex" (Linux futexes) or "portable" (a striped table of std::mutex and
// std::condition_variable). The choice is made once, when contend is built (CMake option
// CONTEND_WAIT_BACKEND). The portable build also goes without Linux's membarrier, so an
// unlock of contend::mutex or thin_lock that would be a plain store takes the fenced path
// (a locked instruction) instead. Benchmarks print the name beside their figures.
// A static string; never fails.
const char* wait_backend_name() noexcept;

}  // namespace contend
