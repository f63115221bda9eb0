// The model-checking build's os_thread start and join, in place of os_thread_pthread.cpp
// (CMakeLists.txt chooses). The pool's threads run as model threads
// (docs/design/model-checking.md): a pthread's start and join are outside the model. Name and
// stack size do not matter there.
#include <cerrno>
#include <system_error>
#include <utility>

#include "model/model.hpp"
#include "pool/os_thread.hpp"

namespace contend::internal {

os_thread::os_thread(const std::string&, std::size_t, std::function<void()> body) {
    if (thread_start_refused()) throw std::system_error(EAGAIN, std::generic_category(), "pthread_create");
    handle_ = reinterpret_cast<unsigned long>(new model::thread(std::move(body)));
    started_ = true;
}

void os_thread::join() {
    if (!started_) return;
    auto* t = reinterpret_cast<model::thread*>(handle_);
    t->join();
    delete t;
    started_ = false;
}

// No CPUs in a model: a model pool's workers never move.
int current_thread_cpu() noexcept { return -1; }
int move_current_thread_to_free_cpu(function_ref<bool(int)>) noexcept { return -1; }

}  // namespace contend::internal
