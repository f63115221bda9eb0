// os_thread's start and join on pthreads (the model-checking build has os_thread_model.cpp
// instead; CMakeLists.txt chooses).
#include <pthread.h>

#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

#include "pool/os_thread.hpp"

namespace contend::internal {
namespace {

struct start_args {
    std::string name;
    std::function<void()> body;
};

void* thread_main(void* p) {
    std::unique_ptr<start_args> args(static_cast<start_args*>(p));
    set_current_thread_name(args->name);
    args->body();
    return nullptr;
}

}  // namespace

os_thread::os_thread(const std::string& name, std::size_t stack_size, std::function<void()> body) {
    pthread_attr_t attr;
    if (int e = pthread_attr_init(&attr); e != 0)
        throw std::system_error(e, std::generic_category(), "pthread_attr_init");
    if (stack_size != 0) pthread_attr_setstacksize(&attr, stack_size);
    auto args = std::make_unique<start_args>(start_args{name, std::move(body)});
    pthread_t t{};
    const int e = thread_start_refused() ? EAGAIN : pthread_create(&t, &attr, &thread_main, args.get());
    pthread_attr_destroy(&attr);
    if (e != 0) throw std::system_error(e, std::generic_category(), "pthread_create");
    args.release();  // the thread owns it now
    handle_ = static_cast<unsigned long>(t);
    started_ = true;
}

void os_thread::join() {
    if (!started_) return;
    pthread_join(static_cast<pthread_t>(handle_), nullptr);
    started_ = false;
}

}  // namespace contend::internal
